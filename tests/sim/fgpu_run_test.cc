// `fgpu run` end to end: the real fgpu binary makes a slice on the simulated GPU and runs the
// real fgpu-probe in it with libfgpu.so preloaded.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/units.h"
#include "probe_runner.h"
#include "sim/state/shared_devices.h"

namespace fgpu::testing {
namespace {

class FgpuRun : public ::testing::Test {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "LD_PRELOAD of a ThreadSanitizer-instrumented libfgpu.so is not supported";
#endif
    const std::string tag = std::to_string(getpid()) + "-" +
                            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    segment_ = "/fgpu-run-" + tag;
    config_ = "/tmp/fgpu-run-" + tag + ".json";
    run_dir_ = "/tmp/fgpu-run-slices-" + tag;
    std::ofstream(config_) << R"({"devices": [{"count": 2, "memory": "4GiB", "context_overhead": "300MiB"}]})";
  }
  void TearDown() override {
    sim::SharedDevices::Remove(segment_).ok();
    unlink(config_.c_str());
    std::filesystem::remove_all(run_dir_);
  }

  // fgpu run <flags> -- fgpu-probe <probe args>, on the simulated GPU.
  ProbeResult Run(const std::vector<std::string>& flags, const std::vector<std::string>& probe_args) {
    std::vector<std::string> argv = {FGPU_BIN_PATH, "run"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.push_back("--");
    argv.push_back(FGPU_PROBE_PATH);
    argv.insert(argv.end(), probe_args.begin(), probe_args.end());
    // A sanitizer-built probe with a preloaded library: ASan must not insist on loading first.
    RunningProbe run(segment_, config_, argv, {"ASAN_OPTIONS=verify_asan_link_order=0", "FGPU_RUN_DIR=" + run_dir_});
    return run.Wait();
  }

  std::string segment_, config_, run_dir_;
};

TEST_F(FgpuRun, FillStopsAtTheCapMinusTheMeasuredContext) {
  ProbeResult fill = Run({"--memory", "1GiB"}, {"fill", "--chunk", "64MiB"});
  ASSERT_EQ(fill.exit_code, 0) << fill.stderr_text;
  const auto event = fill.Event("fill");
  EXPECT_EQ(event["stop_error"], "CUDA_ERROR_OUT_OF_MEMORY");
  // 1024 MiB cap - 300 MiB context = 724 MiB: eleven 64 MiB chunks.
  EXPECT_EQ(event["allocated_bytes"].get<uint64_t>(), 11 * 64 * kMiB) << event.dump();
  // The slice is gone once the command ends.
  EXPECT_TRUE(!std::filesystem::exists(run_dir_) || std::filesystem::is_empty(run_dir_));
}

TEST_F(FgpuRun, WorkloadSeesADeviceOfTheSliceSize) {
  ProbeResult info = Run({"--memory", "25%", "--device", "1"}, {"info"});
  ASSERT_EQ(info.exit_code, 0) << info.stderr_text;
  const auto event = info.Event("info");
  EXPECT_EQ(event["total_mem"].get<uint64_t>(), 1024 * kMiB);
  EXPECT_EQ(event["mem_get_info"]["total"].get<uint64_t>(), 1024 * kMiB);
  EXPECT_EQ(event["mem_get_info"]["free"].get<uint64_t>(), 724 * kMiB);
  EXPECT_EQ(event["nvml"]["memory"]["total"].get<uint64_t>(), 1024 * kMiB);
}

TEST_F(FgpuRun, BadRequestsAreUsageErrors) {
  EXPECT_EQ(Run({"--memory", "lots"}, {"info"}).exit_code, 2);
  EXPECT_EQ(Run({"--memory", "5GiB"}, {"info"}).exit_code, 2);  // more than the GPU has
  EXPECT_EQ(Run({"--memory", "1GiB", "--device", "7"}, {"info"}).exit_code, 2);
  ProbeResult bad = Run({"--memory", "1GiB", "--device", "GPU-nope"}, {"info"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.stderr_text.find("GPU-nope"), std::string::npos) << bad.stderr_text;
}

TEST_F(FgpuRun, ExitStatusIsTheCommands) {
  EXPECT_EQ(Run({"--memory", "1GiB"}, {"no-such-command"}).exit_code, 2);  // the probe's usage error
}

}  // namespace
}  // namespace fgpu::testing
