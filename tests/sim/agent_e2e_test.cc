// `fgpu agent` end to end on the simulated GPU: the real binary, its API over the Unix socket
// and loopback TCP, a workload capped by a slice the agent made, kill -9 and restart.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <signal.h>
#include <sstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/units.h"
#include "net/http_client.h"
#include "probe_runner.h"
#include "sim/state/shared_devices.h"

namespace fgpu::testing {
namespace {

using nlohmann::json;

class AgentE2e : public ::testing::Test {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "LD_PRELOAD of a ThreadSanitizer-instrumented libfgpu.so is not supported";
#endif
    const std::string tag = std::to_string(getpid()) + "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name();
    segment_ = "/fgpu-agent-" + tag;
    config_ = "/tmp/fgpu-agent-" + tag + ".json";
    state_ = "/tmp/fgpu-agent-state-" + tag;
    std::ofstream(config_) << R"({"devices": [{"count": 2, "memory": "4GiB", "context_overhead": "300MiB"}]})";
  }
  void TearDown() override {
    agent_.reset();
    sim::SharedDevices::Remove(segment_).ok();
    unlink(config_.c_str());
    std::filesystem::remove_all(state_);
    unlink((state_ + "-node.conf").c_str());
  }

  void StartAgent(const std::vector<std::string>& flags = {}, const std::vector<std::string>& extra_env = {}) {
    std::vector<std::string> argv = {FGPU_BIN_PATH, "agent", "--state", state_};
    argv.insert(argv.end(), flags.begin(), flags.end());
    std::vector<std::string> env = {"ASAN_OPTIONS=verify_asan_link_order=0", "FGPU_COMPUTE_DIR=" + state_ + "/boards"};
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    agent_ = std::make_unique<RunningProbe>(segment_, config_, argv, env);
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

  std::string Scrape() {
    Result<net::HttpResponse> metrics = Call("GET", "/metrics");
    EXPECT_TRUE(metrics.ok() && metrics->status == 200);
    return metrics.ok() ? metrics->body : "";
  }

  // stdout of a shell command.
  static std::string Output(const std::string& command) {
    std::string out;
    FILE* pipe = popen(("ASAN_OPTIONS=verify_asan_link_order=0 " + command).c_str(), "r");
    if (pipe == nullptr) return out;
    char buffer[4096];
    for (std::size_t got; (got = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) out.append(buffer, got);
    pclose(pipe);
    return out;
  }

  // Stops the agent with SIGTERM and returns what it wrote (its event log is its stderr).
  ProbeResult StopAgent() {
    kill(agent_->pid(), SIGTERM);
    return agent_->Wait();
  }

  // FGPU_NODE_CONFIG= a managed node's configuration (root's) whose GPUs put tiers before the
  // shares' guarantees: there a busy latency slice starves a standard one (docs/compute.md
  // "Strict priority"), which is how these tests make a slice starve.
  std::string StrictPriorityNode() {
    const std::string path = state_ + "-node.conf";
    std::ofstream(path) << "slice_root = " << state_ << "/slices\ncompute_dir = " << state_
                        << "/boards\nstrict_priority = all\n";
    chmod(path.c_str(), 0644);
    return "FGPU_NODE_CONFIG=" + path;
  }

  std::string segment_, config_, state_;
  std::unique_ptr<RunningProbe> agent_;
};

TEST_F(AgentE2e, AWorkloadInASliceTheAgentMadeIsCapped) {
  StartAgent();
  const json slice = CreateSlice(R"({"memory":"1GiB","compute":30,"tenant":"team-a"})");
  ASSERT_TRUE(slice.is_object());
  const ProbeResult fill = RunInSlice(slice, {"fill", "--chunk", "64MiB"});
  ASSERT_EQ(fill.exit_code, 0) << fill.stderr_text;
  EXPECT_EQ(fill.Event("fill")["stop_error"], "CUDA_ERROR_OUT_OF_MEMORY");
  // 1 GiB cap - 300 MiB context: eleven 64 MiB chunks.
  EXPECT_EQ(fill.Event("fill")["allocated_bytes"].get<uint64_t>(), 11 * 64 * kMiB);
}

TEST_F(AgentE2e, AKilledAgentRestartsWithTheSameSlices) {
  StartAgent({"--account-interval", "0.2"});
  CreateSlice(R"({"memory":"1GiB","compute":30,"tenant":"a"})");
  CreateSlice(R"({"memory":"2GiB","compute":50,"compute_mode":"cap","tier":"latency","tenant":"b"})");
  const json third = CreateSlice(R"({"memory":"512MiB","tenant":"c"})");
  ASSERT_EQ(Call("PATCH", "/v1/slices/" + third["id"].get<std::string>(), R"({"memory":"768MiB"})")->status, 200);
  // Wait until every slice has closed usage records (the agent closes them every 0.2 s).
  int64_t cutoff = 0;
  json usage_before;
  for (int i = 0; i < 100 && usage_before.size() < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cutoff = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
                 .count();
    usage_before = json::parse(Call("GET", "/v1/usage?by=slice&until=" + std::to_string(cutoff))->body);
  }
  ASSERT_EQ(usage_before.size(), 3u) << usage_before.dump();
  const std::string slices_before = Call("GET", "/v1/slices")->body;
  agent_->Kill();
  agent_->Wait();
  StartAgent({"--account-interval", "0.2"});
  EXPECT_EQ(Call("GET", "/v1/slices")->body, slices_before);
  // No usage record closed before the kill was lost: up to the same instant the totals are at
  // least what they were (more only by the interval that was open at the kill, closed after the
  // restart and prorated into the window).
  const json usage_after = json::parse(Call("GET", "/v1/usage?by=slice&until=" + std::to_string(cutoff))->body);
  ASSERT_EQ(usage_after.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_GE(usage_after[i]["reserved_gpu_seconds"].get<double>() + 1e-9,
              usage_before[i]["reserved_gpu_seconds"].get<double>());
    EXPECT_GE(usage_after[i]["records"].get<int64_t>(), usage_before[i]["records"].get<int64_t>());
  }
  const std::string report = Output(std::string(FGPU_BIN_PATH) + " report --since 1h --by tenant --format csv --agent unix:" +
                                    state_ + "/agent.sock");
  EXPECT_EQ(report.rfind("tenant,reserved_gpu_hours,memory_gib_hours,busy_gpu_hours,records\na,", 0), 0u) << report;
  // The restored slices still enforce: the third is 768 MiB.
  const ProbeResult fill = RunInSlice(json::parse(Call("GET", "/v1/slices/" + third["id"].get<std::string>())->body),
                                      {"fill", "--chunk", "64MiB"});
  ASSERT_EQ(fill.exit_code, 0) << fill.stderr_text;
  EXPECT_EQ(fill.Event("fill")["allocated_bytes"].get<uint64_t>(), 7 * 64 * kMiB);  // (768 - 300) / 64
}

// Issue 14: after a clean restart ids began again at s1, and the usage of different slices and
// tenants merged under one id. Ids now continue across SIGTERM and kill -9 restarts, also when
// every slice was deleted before the restart, and the report bills each slice apart.
TEST_F(AgentE2e, SliceIdsAreNeverReusedAcrossSigtermAndKillRestarts) {
  std::vector<std::string> ids;
  const auto create = [&](const std::string& tenant) {
    const json slice = CreateSlice(R"({"memory":"256MiB","tenant":")" + tenant + R"("})");
    const std::string id = slice.value("id", "");
    EXPECT_EQ(std::count(ids.begin(), ids.end(), id), 0) << id << " was handed out again";
    ids.push_back(id);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // its usage record has a length
    return id;
  };
  const auto remove = [&](const std::string& id) { EXPECT_EQ(Call("DELETE", "/v1/slices/" + id)->status, 204); };
  const auto stop = [&](int signal) {
    kill(agent_->pid(), signal);
    const ProbeResult stopped = agent_->Wait();
    EXPECT_EQ(stopped.exit_code, signal == SIGTERM ? 0 : 128 + SIGKILL) << stopped.stderr_text;
  };
  StartAgent();
  remove(create("a"));
  const std::string kept = create("b");
  stop(SIGTERM);
  StartAgent();
  remove(create("c"));
  remove(kept);  // no slice left: only the counter remembers
  stop(SIGKILL);
  StartAgent();
  remove(create("d"));
  stop(SIGTERM);
  StartAgent();
  remove(create("e"));
  ASSERT_EQ(ids.size(), 5u);
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), 5u);
  // One row per slice: every id billed under itself, none merged.
  const std::string report = Output(std::string(FGPU_BIN_PATH) + " report --since all --by slice --format csv --agent unix:" +
                                    state_ + "/agent.sock");
  std::istringstream rows(report);
  std::string row;
  std::getline(rows, row);
  EXPECT_EQ(row, "slice,reserved_gpu_hours,memory_gib_hours,busy_gpu_hours,records") << report;
  std::set<std::string> billed;
  while (std::getline(rows, row)) {
    const std::string id = row.substr(0, row.find(','));
    EXPECT_TRUE(billed.insert(id).second) << "two rows for " << id << "\n" << report;
  }
  EXPECT_EQ(billed, std::set<std::string>(ids.begin(), ids.end())) << report;
}

// A malformed configuration or an unknown policy stops the agent at start with the reason.
TEST_F(AgentE2e, BadStartupSettingsAreClearErrors) {
  const std::string config = state_ + "-bad.json";
  const auto start = [&](const std::vector<std::string>& flags) {
    std::vector<std::string> argv = {FGPU_BIN_PATH, "agent", "--state", state_};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return RunningProbe(segment_, config_, argv, {"ASAN_OPTIONS=verify_asan_link_order=0"}).Wait();
  };
  for (const char* text : {"{not json", R"({"stop_loss": {"bypass": "shrug"}})", R"({"stop_loss": {"grace_s": -1}})",
                           R"({"stop_loss": {"min_free": "lots"}})", R"({"stop_loss": 7})"}) {
    std::ofstream(config) << text;
    // A bad setting is a usage error (exit 2, docs/cli.md "Exit status"), checked before the agent starts.
    const ProbeResult result = start({"--config", config});
    EXPECT_EQ(result.exit_code, 2) << text;
    EXPECT_NE(result.stderr_text.find("fgpu agent: --config: " + config), std::string::npos) << result.stderr_text;
  }
  const ProbeResult missing = start({"--config", config + ".missing"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.stderr_text.find("cannot read the configuration"), std::string::npos) << missing.stderr_text;
  const ProbeResult policy = start({"--policy", "fastest"});
  EXPECT_EQ(policy.exit_code, 2);
  EXPECT_NE(policy.stderr_text.find("--policy"), std::string::npos) << policy.stderr_text;
  std::filesystem::remove(config);
}

TEST_F(AgentE2e, BadRequestsThroughTheRealServer) {
  StartAgent();
  EXPECT_EQ(Call("POST", "/v1/slices", "{oops")->status, 400);
  EXPECT_EQ(Call("POST", "/v1/slices", R"({"memory":"5GiB"})")->status, 409);  // 4 GiB GPUs
  EXPECT_EQ(Call("POST", "/v1/slices", R"({"memory":"1GiB","gpu":"9"})")->status, 404);
  EXPECT_EQ(Call("DELETE", "/v1/slices/s42")->status, 404);
  EXPECT_EQ(json::parse(Call("GET", "/v1/slices")->body).size(), 0u);
}

// fgpu run through the agent: four slices share GPU 0 (caps and shares hold), a fifth waits in
// the queue and runs when one leaves; every slice is released when its program exits.
TEST_F(AgentE2e, FourWorkloadsShareAGpuAndAFifthQueuesUntilOneLeaves) {
  StartAgent();
  const std::string agent = "unix:" + state_ + "/agent.sock";
  const auto run = [&](const std::vector<std::string>& flags, const std::vector<std::string>& program) {
    std::vector<std::string> argv = {FGPU_BIN_PATH, "run", "--agent", agent, "--device", "0"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.push_back("--");
    argv.push_back(FGPU_PROBE_PATH);
    argv.insert(argv.end(), program.begin(), program.end());
    return std::make_unique<RunningProbe>(segment_, config_, argv,
                                          std::vector<std::string>{"ASAN_OPTIONS=verify_asan_link_order=0",
                                                                   "FGPU_COMPUTE_DIR=" + state_ + "/boards"});
  };
  // Long enough that all four still hold their slices while the fifth asks, on a loaded machine.
  const std::vector<std::string> spin = {"spin", "--duty", "100", "--seconds", "6", "--kernel-us", "1000"};
  std::vector<std::unique_ptr<RunningProbe>> four;
  for (int i = 0; i < 4; ++i) four.push_back(run({"--memory", "1GiB", "--compute", "25"}, spin));
  // Wait until all four hold their slices, then the fifth cannot fit on GPU 0.
  for (int i = 0; i < 200 && json::parse(Call("GET", "/v1/slices")->body).size() < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(json::parse(Call("GET", "/v1/slices")->body).size(), 4u);
  // Mid-run, /metrics shows each slice's share and the GPU time it has used so far.
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  Result<net::HttpResponse> metrics = Call("GET", "/metrics");
  ASSERT_TRUE(metrics.ok());
  EXPECT_EQ(metrics->content_type.rfind("text/plain; version=0.0.4", 0), 0u);
  std::size_t shares = 0, busy = 0;
  std::istringstream lines(metrics->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("fgpu_slice_compute_share_ratio{", 0) == 0 && line.substr(line.size() - 5) == " 0.25") ++shares;
    if (line.rfind("fgpu_slice_compute_busy_seconds_total{", 0) == 0 && std::stod(line.substr(line.rfind(' '))) > 0.05)
      ++busy;
  }
  EXPECT_EQ(shares, 4u) << metrics->body;
  EXPECT_EQ(busy, 4u) << metrics->body;
  // fgpu status and one frame of fgpu top show them as tables.
  const std::string status = Output(std::string(FGPU_BIN_PATH) + " status --agent " + agent);
  EXPECT_EQ(std::count(status.begin(), status.end(), '\n'), 3 + 1 + 5) << status;  // header + 2 GPUs, blank, header + 4
  EXPECT_NE(status.find("25% share"), std::string::npos) << status;
  const std::string top = Output(std::string(FGPU_BIN_PATH) + " top --count 2 --interval 0.5 --agent " + agent);
  EXPECT_NE(top.find("ACHIEVED"), std::string::npos) << top;
  const ProbeResult refused = run({"--memory", "1GiB", "--compute", "10"}, {"info"})->Wait();
  EXPECT_EQ(refused.exit_code, 1) << "no room and no --wait: a clear refusal";
  EXPECT_NE(refused.stderr_text.find("the agent refused the slice"), std::string::npos) << refused.stderr_text;
  auto fifth = run({"--memory", "1GiB", "--compute", "10", "--wait"}, {"fill", "--chunk", "64MiB"});

  std::vector<ProbeResult> results;
  for (auto& workload : four) results.push_back(workload->Wait());
  for (const ProbeResult& result : results) {
    ASSERT_EQ(result.exit_code, 0) << result.stderr_text;
    EXPECT_NEAR(result.Event("spin")["achieved_duty"].get<double>(), 25, 4) << result.stderr_text;
  }
  const ProbeResult queued = fifth->Wait();
  ASSERT_EQ(queued.exit_code, 0) << queued.stderr_text;
  EXPECT_NE(queued.stderr_text.find("waiting in the agent's queue"), std::string::npos) << queued.stderr_text;
  EXPECT_EQ(queued.Event("fill")["allocated_bytes"].get<uint64_t>(), 11 * 64 * kMiB) << "its 1 GiB cap holds";
  EXPECT_EQ(json::parse(Call("GET", "/v1/slices")->body).size(), 0u) << "every slice was released";
}

// The value of `family`'s sample for `slice` (and `mode`, when given) in a /metrics body;
// -1 when there is no such sample.
double MetricValue(const std::string& body, const std::string& family, const json& slice,
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

// fgpu run through the agent, as a RunningProbe (stdout events, stderr text).
std::unique_ptr<RunningProbe> RunThrough(const std::string& segment, const std::string& config, const std::string& agent,
                                         const std::vector<std::string>& flags, const std::vector<std::string>& program,
                                         const std::vector<std::string>& extra_env = {}) {
  std::vector<std::string> argv = {FGPU_BIN_PATH, "run", "--agent", agent};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back("--");
  argv.insert(argv.end(), program.begin(), program.end());
  std::vector<std::string> env = {"ASAN_OPTIONS=verify_asan_link_order=0"};
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  return std::make_unique<RunningProbe>(segment, config, argv, env);
}

// A cap-mode slice whose workload turns the interposer off runs its kernels past the cap: NVML's
// per-process utilization shows it, and the agent evicts the slice after `overuse_checks` checks.
TEST_F(AgentE2e, ComputeOverACapModeSlicesCapIsABypass) {
  const std::string config = state_ + "-agent.json";
  std::ofstream(config) << R"({"stop_loss": {"bypass": "evict", "grace_s": 1, "overuse_checks": 2}})";
  StartAgent({"--config", config});
  auto spinning = RunThrough(segment_, config_, "unix:" + state_ + "/agent.sock",
                             {"--memory", "1GiB", "--compute", "20", "--compute-mode", "cap"},
                             {"/usr/bin/env", "FGPU_DISABLE=1", FGPU_PROBE_PATH, "spin", "--duty", "100", "--seconds",
                              "30", "--kernel-us", "1000"});
  const auto started = std::chrono::steady_clock::now();
  const ProbeResult result = spinning->Wait();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(result.exit_code, 128 + SIGTERM) << result.stderr_text;
  EXPECT_LT(seconds, 15.0) << "two checks over the cap, then the grace";
  const std::string metrics = Call("GET", "/metrics")->body;
  EXPECT_NE(metrics.find("fgpu_stop_loss_bypasses_total{resource=\"compute\"} 1"), std::string::npos) << metrics;
  std::filesystem::remove(config);
}

// A workload that turns the interposer off (FGPU_DISABLE=1) allocates past its cap: NVML shows
// it, the agent attributes it to the slice by its environment and evicts it within ~2 s.
TEST_F(AgentE2e, ABypassingWorkloadIsDetectedAndEvicted) {
  const std::string config = state_ + "-agent.json";
  std::ofstream(config) << R"({"stop_loss": {"bypass": "evict", "grace_s": 1}})";
  StartAgent({"--config", config});
  auto bypass = RunThrough(segment_, config_, "unix:" + state_ + "/agent.sock", {"--memory", "1GiB"},
                           {"/usr/bin/env", "FGPU_DISABLE=1", FGPU_PROBE_PATH, "alloc", "--bytes", "2GiB", "--hold-ms", "15000"});
  ASSERT_TRUE(bypass->WaitForEvent("alloc")) << "the bypassing allocation should succeed";
  const auto allocated = std::chrono::steady_clock::now();
  const ProbeResult result = bypass->Wait();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - allocated).count();
  EXPECT_EQ(result.exit_code, 128 + SIGTERM) << result.stderr_text;
  EXPECT_LT(seconds, 3.0) << "detected (≤ 2 s) and terminated";
  const std::string metrics = Call("GET", "/metrics")->body;
  EXPECT_NE(metrics.find("fgpu_stop_loss_bypasses_total{resource=\"memory\"} 1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("fgpu_stop_loss_evictions_total 1"), std::string::npos);
  std::filesystem::remove(config);
}

// A batch-tier slice holds the GPU; a latency-tier request that waits for room preempts it.
TEST_F(AgentE2e, ALowTierSliceIsEvictedWhenAHigherTierNeedsRoom) {
  const std::string config = state_ + "-agent.json";
  std::ofstream(config) << R"({"stop_loss": {"grace_s": 1}, "governance": {"preemption_delay_s": 0}})";
  StartAgent({"--config", config});
  const std::string agent = "unix:" + state_ + "/agent.sock";
  const std::vector<std::string> hold = {FGPU_PROBE_PATH, "alloc", "--bytes", "1GiB", "--hold-ms", "20000"};
  auto batch = RunThrough(segment_, config_, agent, {"--memory", "4GiB", "--tier", "batch", "--device", "0"}, hold);
  auto other_gpu = RunThrough(segment_, config_, agent, {"--memory", "4GiB", "--tier", "latency", "--device", "1"}, hold);
  ASSERT_TRUE(batch->WaitForEvent("alloc"));
  ASSERT_TRUE(other_gpu->WaitForEvent("alloc"));
  auto latency = RunThrough(segment_, config_, agent, {"--memory", "2GiB", "--tier", "latency", "--wait"},
                            {FGPU_PROBE_PATH, "info"});
  const ProbeResult placed = latency->Wait();
  EXPECT_EQ(placed.exit_code, 0) << placed.stderr_text;
  EXPECT_EQ(batch->Wait().exit_code, 128 + SIGTERM) << "the batch slice was evicted";
  EXPECT_EQ(json::parse(Call("GET", "/v1/slices")->body).size(), 1u) << "only the other GPU's slice is left";
  other_gpu->Kill();
  std::filesystem::remove(config);
}

// Free memory under the stop-loss threshold: the GPU is fenced (a request naming it is refused
// with the reason), its lowest-tier slice is evicted, and once memory is back the fence lifts.
TEST_F(AgentE2e, AGpuUnderItsFreeMemoryThresholdIsFencedAndRelieved) {
  const std::string config = state_ + "-agent.json";
  std::ofstream(config) << R"({"stop_loss": {"min_free": "2GiB", "grace_s": 1}})";
  StartAgent({"--config", config});
  const std::string agent = "unix:" + state_ + "/agent.sock";
  // 2 GiB and the context's 300 MiB on a 4 GiB GPU leave 1.7 GiB free.
  auto filler = RunThrough(segment_, config_, agent, {"--memory", "3GiB", "--tier", "batch", "--device", "0"},
                           {FGPU_PROBE_PATH, "alloc", "--bytes", "2GiB", "--hold-ms", "20000"});
  ASSERT_TRUE(filler->WaitForEvent("alloc"));
  const auto fence_of_gpu0 = [&] { return json::parse(Call("GET", "/v1/gpus")->body)[0]["fenced"].get<std::string>(); };
  std::string fence;
  for (int i = 0; i < 60 && (fence = fence_of_gpu0()).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_NE(fence.find("under the threshold of 2 GiB"), std::string::npos) << fence;
  Result<net::HttpResponse> refused = Call("POST", "/v1/slices", R"({"memory":"256MiB","gpu":"0"})");
  ASSERT_TRUE(refused.ok());
  // Refused while fenced — unless the eviction already finished and lifted the fence.
  if (!fence_of_gpu0().empty() || refused->status == 409) {
    EXPECT_EQ(refused->status, 409) << refused->body;
    EXPECT_NE(refused->body.find("stop-loss"), std::string::npos) << refused->body;
  }
  EXPECT_EQ(filler->Wait().exit_code, 128 + SIGTERM) << "the batch slice was evicted";
  for (int i = 0; i < 100 && !fence_of_gpu0().empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(fence_of_gpu0(), "") << "the fence lifts once memory is back";
  Result<net::HttpResponse> placed = Call("POST", "/v1/slices", R"({"memory":"256MiB","gpu":"0"})");
  ASSERT_TRUE(placed.ok());
  EXPECT_EQ(placed->status, 201) << placed->body;
  EXPECT_NE(Call("GET", "/metrics")->body.find("fgpu_stop_loss_evictions_total 1"), std::string::npos);
  std::filesystem::remove(config);
}

// Starvation through the real counters: under strict priority a busy latency-tier slice holds
// the lower tiers off, so the standard-tier slice waits in the gate and gets almost nothing; with
// "starvation": "evict" the agent finds it starved within a window, fences the GPU and evicts the
// batch-tier slice, the lowest tier below it.
TEST_F(AgentE2e, AStarvedSliceFencesItsGpuAndEvictsTheLowestTierBelowIt) {
  if (geteuid() != 0) GTEST_SKIP() << "strict priority needs a managed node, whose node.conf is root's";
  const std::string config = state_ + "-agent.json";
  std::ofstream(config) << R"({"stop_loss": {"starvation": "evict", "starve_window_s": 2, "grace_s": 1}})";
  const std::vector<std::string> boards = {StrictPriorityNode()};
  StartAgent({"--config", config}, boards);
  const std::string agent = "unix:" + state_ + "/agent.sock";
  const auto slice = [](const char* share, const char* tier) {
    return std::vector<std::string>{"--memory", "1GiB", "--compute", share, "--tier", tier, "--device", "0"};
  };
  const std::vector<std::string> spin = {FGPU_PROBE_PATH, "spin", "--duty", "100", "--seconds", "12", "--kernel-us", "1000"};
  auto latency = RunThrough(segment_, config_, agent, slice("30", "latency"), spin, boards);
  auto standard = RunThrough(segment_, config_, agent, slice("40", "standard"), spin, boards);
  auto batch = RunThrough(segment_, config_, agent, slice("20", "batch"),
                          {FGPU_PROBE_PATH, "alloc", "--bytes", "64MiB", "--hold-ms", "20000"}, boards);
  EXPECT_EQ(batch->Wait().exit_code, 128 + SIGTERM) << "the batch slice was evicted";
  const json gpus = json::parse(Call("GET", "/v1/gpus")->body);
  const std::string metrics = Call("GET", "/metrics")->body;
  EXPECT_NE(metrics.find("fgpu_stop_loss_evictions_total 1"), std::string::npos) << metrics;
  EXPECT_EQ(metrics.find("fgpu_stop_loss_starvations_total 0"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("fgpu_gpu_fenced{gpu=\"0\""), std::string::npos) << metrics;
  latency->Kill();
  standard->Kill();
  EXPECT_NE(gpus[0]["fenced"].get<std::string>().find("starved"), std::string::npos) << gpus;
  std::filesystem::remove(config);
}

// Starvation detection is on by default and only reports: a standard slice held off by a busy
// latency slice (strict priority) is "starved" in its JSON, in /metrics and in the log, with its
// throttled time; an idle batch slice beside them (no work: it never waits in the gate) is not;
// nobody is evicted and the GPU is not fenced.
TEST_F(AgentE2e, StarvationIsReportedByDefaultAndASliceWithoutWorkIsNeverStarved) {
  if (geteuid() != 0) GTEST_SKIP() << "strict priority needs a managed node, whose node.conf is root's";
  const std::string config = state_ + "-agent.json";
  std::ofstream(config) << R"({"stop_loss": {"starve_window_s": 2}})";  // a shorter window; the rest as shipped
  const std::vector<std::string> node = {StrictPriorityNode()};
  StartAgent({"--config", config}, node);
  const std::string agent = "unix:" + state_ + "/agent.sock";
  const auto slice = [](const char* share, const char* tier) {
    return std::vector<std::string>{"--memory", "1GiB", "--compute", share, "--tier", tier, "--device", "0"};
  };
  const std::vector<std::string> spin = {FGPU_PROBE_PATH, "spin", "--duty", "100", "--seconds", "15", "--kernel-us", "1000"};
  auto latency = RunThrough(segment_, config_, agent, slice("30", "latency"), spin, node);
  auto standard = RunThrough(segment_, config_, agent, slice("40", "standard"), spin, node);
  auto idle = RunThrough(segment_, config_, agent, slice("20", "batch"),
                         {FGPU_PROBE_PATH, "alloc", "--bytes", "64MiB", "--hold-ms", "20000"}, node);
  json list;
  const auto by_tier = [&](const std::string& tier) {
    for (const json& s : list) {
      if (s["tier"] == tier) return s;
    }
    return json::object();
  };
  for (int i = 0; i < 150; ++i) {
    list = json::parse(Call("GET", "/v1/slices")->body);
    if (by_tier("standard").value("starved", false)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(list.size(), 3u) << list;
  const json starved = by_tier("standard");
  EXPECT_EQ(starved["starved"], true) << list;
  EXPECT_GT(starved["compute_throttled_seconds"].get<double>(), 0.5) << "it waited in the gate";
  EXPECT_EQ(by_tier("batch")["starved"], false) << "no work, never starved";
  EXPECT_EQ(by_tier("batch")["compute_throttled_seconds"], 0.0);
  EXPECT_EQ(by_tier("latency")["starved"], false);
  const std::string id = starved["id"];
  EXPECT_EQ(json::parse(Call("GET", "/v1/slices/" + id)->body)["starved"], true);
  const std::string metrics = Scrape();
  EXPECT_EQ(MetricValue(metrics, "fgpu_slice_starved", starved), 1) << metrics;
  EXPECT_EQ(MetricValue(metrics, "fgpu_slice_starved", by_tier("batch")), 0) << metrics;
  EXPECT_NE(metrics.find("fgpu_stop_loss_evictions_total 0"), std::string::npos) << "reported, nobody evicted";
  EXPECT_EQ(json::parse(Call("GET", "/v1/gpus")->body)[0]["fenced"], "") << "and the GPU is not fenced";
  latency->Kill();
  standard->Kill();
  idle->Kill();
  const ProbeResult stopped = StopAgent();
  EXPECT_NE(stopped.stderr_text.find("fgpu agent: warn starved slice=" + id + " "), std::string::npos)
      << stopped.stderr_text;
  EXPECT_EQ(stopped.stderr_text.find(" evict "), std::string::npos) << stopped.stderr_text;
  std::filesystem::remove(config);
}

// The event log on stderr, one line per event with a level word: a create, a resize, a refusal
// with its reason and the peer's uid, a delete; at --config log_level warn only the warnings.
TEST_F(AgentE2e, EventsAreLoggedOneLineEachOnStderr) {
  StartAgent();
  const json slice = CreateSlice(R"({"memory":"1GiB","compute":10,"tenant":"team-a"})");
  const std::string id = slice["id"];
  EXPECT_EQ(Call("PATCH", "/v1/slices/" + id, R"({"compute":20})")->status, 200);
  EXPECT_EQ(Call("POST", "/v1/slices", R"({"memory":"5GiB"})")->status, 409);
  EXPECT_EQ(Call("DELETE", "/v1/slices/" + id)->status, 204);
  const std::string log = StopAgent().stderr_text;
  const std::string uid = std::to_string(geteuid());
  for (const std::string& line :
       {"fgpu agent: info create slice=" + id + " gpu=" + slice["gpu"].get<std::string>() +
            " memory=1GiB compute=10 mode=share tier=standard tenant=team-a uid=" + uid + "\n",
        "fgpu agent: info resize slice=" + id + " gpu=",
        "fgpu agent: info refuse status=409 method=POST path=/v1/slices uid=" + uid + " pid=",
        "fgpu agent: info delete slice=" + id + " gpu=", "reason=\"requested by uid " + uid + "\"\n"}) {
    EXPECT_NE(log.find(line), std::string::npos) << line << " not in\n" << log;
  }
  EXPECT_NE(log.find("reason=\"no GPU has 5 GiB"), std::string::npos) << log;

  const std::string config = state_ + "-agent.json";
  std::ofstream(config) << R"({"log_level": "warn"})";
  StartAgent({"--config", config});
  CreateSlice(R"({"memory":"1GiB"})");
  EXPECT_EQ(StopAgent().stderr_text.find("info create"), std::string::npos) << "under the level";
  std::filesystem::remove(config);
}

// Issue 14: a deleted slice's files stayed open in the agent until the next /metrics scrape.
TEST_F(AgentE2e, ADeletedSlicesFilesAreClosedAtOnce) {
  StartAgent();
  const json slice = CreateSlice(R"({"memory":"1GiB"})");
  const std::string dir = slice["dir"];
  Scrape();  // maps the slice's files, kept between scrapes
  ASSERT_EQ(Call("DELETE", "/v1/slices/" + slice["id"].get<std::string>())->status, 204);
  const std::string proc = "/proc/" + std::to_string(agent_->pid());
  for (const auto& entry : std::filesystem::directory_iterator(proc + "/fd")) {
    std::error_code error;
    const std::string target = std::filesystem::read_symlink(entry.path(), error).string();
    EXPECT_NE(target.rfind(dir, 0), 0u) << "the agent still holds " << target;
  }
  std::ifstream maps(proc + "/maps");
  for (std::string line; std::getline(maps, line);) EXPECT_EQ(line.find(dir), std::string::npos) << line;
}

// The interposer's counters in /metrics: each slice's OOM refusals and degraded modes as its
// ledger counted them (docs/agent.md "Metrics", docs/hook.md "Counters").
TEST_F(AgentE2e, OomRefusalsAndPassThroughAreCountedPerSliceInMetrics) {
  StartAgent();
  const json capped = CreateSlice(R"({"memory":"1GiB","tenant":"team-a"})");
  const json other = CreateSlice(R"({"memory":"1GiB","tenant":"team-b"})");
  ASSERT_TRUE(capped.is_object() && other.is_object());

  // Before any workload: every slice's counters are there, at 0.
  std::string body = Scrape();
  for (const json& slice : {capped, other}) {
    EXPECT_EQ(MetricValue(body, "fgpu_slice_oom_refusals_total", slice), 0) << body;
    for (const char* mode : {"fail_closed", "compute_unenforced", "no_free_slot", "pass_through"}) {
      EXPECT_EQ(MetricValue(body, "fgpu_slice_interposer_degraded_total", slice, mode), 0) << mode << "\n" << body;
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
  EXPECT_GE(MetricValue(body, "fgpu_slice_oom_refusals_total", capped), 1) << body;
  EXPECT_EQ(MetricValue(body, "fgpu_slice_oom_refusals_total", other), 0) << body;
  EXPECT_EQ(MetricValue(body, "fgpu_slice_interposer_degraded_total", other, "pass_through"), 1) << body;
  EXPECT_EQ(MetricValue(body, "fgpu_slice_interposer_degraded_total", capped, "pass_through"), 0) << body;
  for (const char* mode : {"fail_closed", "compute_unenforced", "no_free_slot"}) {
    EXPECT_EQ(MetricValue(body, "fgpu_slice_interposer_degraded_total", capped, mode), 0) << mode;
    EXPECT_EQ(MetricValue(body, "fgpu_slice_interposer_degraded_total", other, mode), 0) << mode;
  }
  // The slice labels are the other slice families' own.
  const std::string labels = "{slice=\"" + capped["id"].get<std::string>() + "\",gpu=\"";
  EXPECT_NE(body.find("fgpu_slice_memory_cap_bytes" + labels), std::string::npos);
  EXPECT_NE(body.find("fgpu_slice_oom_refusals_total" + labels), std::string::npos);
}

}  // namespace
}  // namespace fgpu::testing

namespace fgpu::testing {
namespace {

constexpr uint64_t kGovernanceGiB = uint64_t{1} << 30;

// Polls a queue ticket until it is no longer waiting (200 with its position) or `seconds` pass.
net::HttpResponse AwaitTicket(const std::function<Result<net::HttpResponse>(const std::string&, const std::string&,
                                                                             const std::string&)>& call,
                              const std::string& ticket, double seconds) {
  net::HttpResponse last;
  for (int i = 0; i < seconds * 20; ++i) {
    Result<net::HttpResponse> polled = call("GET", "/v1/queue/" + ticket, "");
    if (polled.ok()) last = *polled;
    if (polled.ok() && polled->status != 200 && polled->status != 202) return last;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return last;
}

// Issue 16 on the agent: two tenants with quotas on two 4 GiB GPUs; one borrows the other's idle
// quota with batch work (a tier that is not preemptible may not borrow), and is reclaimed (its
// slice evicted) when the owner asks for what is its own; past its quota with nothing to borrow,
// a request is refused with the quota's reason.
TEST_F(AgentE2e, AQuotaOwnerReclaimsWhatABorrowerTook) {
  const std::string config = state_ + "-agent.json";
  std::ofstream(config) << R"({"stop_loss": {"grace_s": 1}, "governance": {"preemption_delay_s": 0,
      "quotas": [{"name": "team-a", "memory": "4GiB", "compute": 100},
                 {"name": "team-b", "memory": "4GiB", "compute": 100}]}})";
  StartAgent({"--config", config});
  const auto call = [&](const std::string& method, const std::string& path, const std::string& body) {
    return Call(method, path, body);
  };
  for (int i = 0; i < 2; ++i) {
    Result<net::HttpResponse> made = Call("POST", "/v1/slices", R"({"memory":"4GiB","tenant":"team-b","tier":"batch"})");
    ASSERT_TRUE(made.ok());
    ASSERT_EQ(made->status, 201) << made->body;  // the second borrows team-a's idle quota
  }
  const json quotas = json::parse(Call("GET", "/v1/quotas")->body);
  ASSERT_EQ(quotas.size(), 2u) << quotas.dump();
  EXPECT_EQ(quotas[1]["name"], "team-b");
  EXPECT_EQ(quotas[1]["memory_used"], 8 * kGovernanceGiB);
  Result<net::HttpResponse> owner = Call("POST", "/v1/slices", R"({"memory":"3GiB","tenant":"team-a","wait":true})");
  ASSERT_TRUE(owner.ok());
  ASSERT_EQ(owner->status, 202) << owner->body;
  const net::HttpResponse placed = AwaitTicket(call, json::parse(owner->body)["ticket"], 10);
  EXPECT_EQ(placed.status, 201) << placed.body << " — the borrower was not reclaimed";
  const json slices = json::parse(Call("GET", "/v1/slices")->body);
  ASSERT_EQ(slices.size(), 2u) << slices.dump();
  int team_b = 0;
  for (const json& slice : slices) team_b += slice["tenant"] == "team-b" ? 1 : 0;
  EXPECT_EQ(team_b, 1) << "one of team-b's slices was evicted";
  Result<net::HttpResponse> over = Call("POST", "/v1/slices", R"({"memory":"2GiB","tenant":"team-a"})");
  ASSERT_TRUE(over.ok());
  EXPECT_EQ(over->status, 409) << over->body;
  EXPECT_NE(over->body.find("quota"), std::string::npos) << over->body;
  const std::string log = StopAgent().stderr_text;
  EXPECT_NE(log.find("warn preempt slice="), std::string::npos) << log;
  EXPECT_NE(log.find("tenant=team-b"), std::string::npos) << log;
  std::filesystem::remove(config);
}

// A small request behind a blocked large one is backfilled around it (it stays off the GPU held
// for the large one), the large one is placed when room frees, and a gang of two slices is
// placed at once, only when its second member has arrived.
TEST_F(AgentE2e, BackfillRunsASmallRequestAroundABlockedOneAndAGangIsPlacedWhole) {
  const std::string config = state_ + "-agent.json";
  std::ofstream(config) << R"({"governance": {"preemption": false}})";
  StartAgent({"--config", config});
  const auto call = [&](const std::string& method, const std::string& path, const std::string& body) {
    return Call(method, path, body);
  };
  const json first = json::parse(Call("POST", "/v1/slices", R"({"memory":"3GiB","gpu":"0"})")->body);
  ASSERT_TRUE(Call("POST", "/v1/slices", R"({"memory":"3GiB","gpu":"1"})").ok());
  Result<net::HttpResponse> large = Call("POST", "/v1/slices", R"({"memory":"2GiB","wait":true})");
  ASSERT_EQ(large->status, 202) << large->body;
  Result<net::HttpResponse> small = Call("POST", "/v1/slices", R"({"memory":"512MiB","wait":true})");
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->status, 201) << small->body << " — not backfilled around the blocked request";
  const json queue = json::parse(Call("GET", "/v1/queue")->body);
  ASSERT_EQ(queue.size(), 1u) << queue.dump();
  EXPECT_EQ(queue[0]["reason"], "no node fits");
  ASSERT_EQ(Call("DELETE", "/v1/slices/" + first["id"].get<std::string>())->status, 204);
  const std::string large_ticket = json::parse(large->body)["ticket"];
  EXPECT_EQ(AwaitTicket(call, large_ticket, 5).status, 201);

  const std::string member = R"({"memory":"512MiB","wait":true,"gang":"train","gang_size":2})";
  Result<net::HttpResponse> one = Call("POST", "/v1/slices", member);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->status, 202) << one->body;
  const json waiting = json::parse(Call("GET", "/v1/queue")->body);
  ASSERT_EQ(waiting.size(), 1u);
  EXPECT_NE(waiting[0]["reason"].get<std::string>().find("waits for 1 more member"), std::string::npos) << waiting.dump();
  const size_t before = json::parse(Call("GET", "/v1/slices")->body).size();
  Result<net::HttpResponse> two = Call("POST", "/v1/slices", member);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->status, 201) << two->body;
  EXPECT_EQ(AwaitTicket(call, json::parse(one->body)["ticket"], 5).status, 201);
  EXPECT_EQ(json::parse(Call("GET", "/v1/slices")->body).size(), before + 2);
  Result<net::HttpResponse> odd = Call("POST", "/v1/slices", R"({"memory":"1GiB","wait":true,"gang":"x","gang_size":1})");
  EXPECT_EQ(odd->status, 400) << odd->body;
  std::filesystem::remove(config);
}

}  // namespace
}  // namespace fgpu::testing
