// The interposer's counters in `fgpu agent`'s /metrics, end to end on the simulated GPU: the
// real agent makes two slices through its API, workloads run in them under the real
// libfgpu.so, and /metrics shows each slice's OOM refusals and degraded modes as its ledger
// counted them (docs/agent.md "Metrics", docs/hook.md "Counters").
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "net/http_client.h"
#include "probe_runner.h"
#include "sim/state/shared_devices.h"

namespace fgpu::testing {
namespace {

using nlohmann::json;

class Metrics : public ::testing::Test {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "LD_PRELOAD of a ThreadSanitizer-instrumented libfgpu.so is not supported";
#endif
    const std::string tag =
        std::to_string(getpid()) + "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    segment_ = "/fgpu-agent-metrics-" + tag;
    config_ = "/tmp/fgpu-agent-metrics-" + tag + ".json";
    state_ = "/tmp/fgpu-agent-metrics-state-" + tag;
    std::ofstream(config_) << R"({"devices": [{"count": 2, "memory": "4GiB", "context_overhead": "300MiB"}]})";
    StartAgent();
  }
  void TearDown() override {
    agent_.reset();
    sim::SharedDevices::Remove(segment_).ok();
    unlink(config_.c_str());
    std::filesystem::remove_all(state_);
  }

  void StartAgent() {
    agent_ = std::make_unique<RunningProbe>(
        segment_, config_, std::vector<std::string>{FGPU_BIN_PATH, "agent", "--state", state_},
        std::vector<std::string>{"ASAN_OPTIONS=verify_asan_link_order=0", "FGPU_COMPUTE_DIR=" + state_ + "/boards"});
    for (int i = 0; i < 200; ++i) {
      Result<net::HttpResponse> health = Call("GET", "/v1/health");
      if (health.ok() && health->status == 200) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << "the agent did not answer on " << state_ << "/agent.sock";
  }

  Result<net::HttpResponse> Call(const std::string& method, const std::string& path, const std::string& body = "") {
    return net::HttpCall(*net::ParseEndpoint("unix:" + state_ + "/agent.sock"), method, path, body, 10000);
  }

  json CreateSlice(const std::string& body) {
    Result<net::HttpResponse> created = Call("POST", "/v1/slices", body);
    EXPECT_TRUE(created.ok() && created->status == 201) << (created.ok() ? created->body : created.status().message());
    return created.ok() ? json::parse(created->body, nullptr, false) : json();
  }

  // fgpu-probe `args` inside the slice, as `fgpu run` would start it, with `extra_env` added.
  ProbeResult RunInSlice(const json& slice, const std::vector<std::string>& args,
                         const std::vector<std::string>& extra_env = {}) {
    std::vector<std::string> argv = {FGPU_PROBE_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> env = {"ASAN_OPTIONS=verify_asan_link_order=0", std::string("LD_PRELOAD=") + FGPU_HOOK_PATH,
                                    "FGPU_SLICE=" + slice["dir"].get<std::string>(),
                                    "CUDA_VISIBLE_DEVICES=" + slice["gpu"].get<std::string>(),
                                    "FGPU_COMPUTE_DIR=" + state_ + "/boards"};
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    return RunningProbe(segment_, config_, argv, env).Wait();
  }

  // The value of `family`'s sample for `slice` (and `mode`, when given) in a /metrics body;
  // -1 when there is no such sample.
  static double Value(const std::string& body, const std::string& family, const json& slice,
                      const std::string& mode = "") {
    const std::string start = family + "{slice=\"" + slice["id"].get<std::string>() + "\",";
    std::istringstream lines(body);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind(start, 0) != 0) continue;
      if (!mode.empty() && line.find(",mode=\"" + mode + "\"}") == std::string::npos) continue;
      return std::stod(line.substr(line.rfind(' ') + 1));
    }
    return -1;
  }

  std::string Scrape() {
    Result<net::HttpResponse> metrics = Call("GET", "/metrics");
    EXPECT_TRUE(metrics.ok() && metrics->status == 200);
    return metrics.ok() ? metrics->body : "";
  }

  std::string segment_, config_, state_;
  std::unique_ptr<RunningProbe> agent_;
};

TEST_F(Metrics, OomRefusalsAndPassThroughAreCountedPerSlice) {
  const json capped = CreateSlice(R"({"memory":"1GiB","tenant":"team-a"})");
  const json other = CreateSlice(R"({"memory":"1GiB","tenant":"team-b"})");
  ASSERT_TRUE(capped.is_object() && other.is_object());

  // Before any workload: every slice's counters are there, at 0.
  std::string body = Scrape();
  for (const json& slice : {capped, other}) {
    EXPECT_EQ(Value(body, "fgpu_slice_oom_refusals_total", slice), 0) << body;
    for (const char* mode : {"fail_closed", "compute_unenforced", "no_free_slot", "pass_through"}) {
      EXPECT_EQ(Value(body, "fgpu_slice_interposer_degraded_total", slice, mode), 0) << mode << "\n" << body;
    }
  }

  // 2 GiB in a 1 GiB slice: refused.
  const ProbeResult refused = RunInSlice(capped, {"alloc", "--bytes", "2GiB"});
  EXPECT_EQ(refused.exit_code, 1) << refused.stderr_text;
  EXPECT_EQ(refused.Event("alloc")["result"], "CUDA_ERROR_OUT_OF_MEMORY");
  // The other slice's workload turns the interposer off.
  const ProbeResult bypassed = RunInSlice(other, {"info"}, {"FGPU_DISABLE=1"});
  EXPECT_EQ(bypassed.exit_code, 0) << bypassed.stderr_text;

  body = Scrape();
  EXPECT_GE(Value(body, "fgpu_slice_oom_refusals_total", capped), 1) << body;
  EXPECT_EQ(Value(body, "fgpu_slice_oom_refusals_total", other), 0) << body;
  EXPECT_EQ(Value(body, "fgpu_slice_interposer_degraded_total", other, "pass_through"), 1) << body;
  EXPECT_EQ(Value(body, "fgpu_slice_interposer_degraded_total", capped, "pass_through"), 0) << body;
  for (const char* mode : {"fail_closed", "compute_unenforced", "no_free_slot"}) {
    EXPECT_EQ(Value(body, "fgpu_slice_interposer_degraded_total", capped, mode), 0) << mode;
    EXPECT_EQ(Value(body, "fgpu_slice_interposer_degraded_total", other, mode), 0) << mode;
  }
  // The slice labels are the other slice families' own.
  const std::string labels = "{slice=\"" + capped["id"].get<std::string>() + "\",gpu=\"";
  EXPECT_NE(body.find("fgpu_slice_memory_cap_bytes" + labels), std::string::npos);
  EXPECT_NE(body.find("fgpu_slice_oom_refusals_total" + labels), std::string::npos);
}

}  // namespace
}  // namespace fgpu::testing
