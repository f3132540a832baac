// The deprecated launch paths pass the compute gate as cuLaunchKernel does: a program that launches
// only through cuLaunch, cuLaunchGrid, cuLaunchGridAsync or cuLaunchCooperativeKernelMultiDevice,
// in a slice with a compute share, reaches the gate — seen here through a board that cannot be
// opened, which the gate reports on stderr and counts once per process in compute_unenforced. A
// launch that escaped the gate would leave both silent. Then, with a usable board, each runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "hook/memory/memory_process_support.h"
#include "slice/slice.h"

namespace fgpu::hook {
namespace {

using testing::BackgroundProcess;
using testing::kMiBytes;
using testing::SimMachine;

constexpr const char* kLegacyGateUuid = "GPU-6c656761-6379-6c61-0000-000000000001";

uint32_t ComputeUnenforced(const std::string& slice_dir) {
  Result<slice::SliceAdmin> admin = slice::SliceAdmin::Open(slice_dir);
  EXPECT_TRUE(admin.ok()) << admin.status().message();
  if (!admin.ok()) return UINT32_MAX;
  Result<slice::LedgerCounters> counters = admin->Counters();
  EXPECT_TRUE(counters.ok()) << counters.status().message();
  return counters.ok() ? counters->compute_unenforced : UINT32_MAX;
}

class HookLegacyLaunch : public ::testing::Test {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "LD_PRELOAD of a ThreadSanitizer-instrumented libfgpu.so is not supported";
#endif
    slice::SliceSpec spec;
    spec.id = "legacy";
    spec.devices.push_back({kLegacyGateUuid, 1024 * kMiBytes, 30});  // a compute share arms the gate
    ASSERT_TRUE(slice::SliceAdmin::Create(slice_, spec).ok());
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(slice_, ignored);
    std::filesystem::remove(blocker_, ignored);
    std::filesystem::remove_all(boards_, ignored);
  }

  // Runs the helper's launch `how` under the hook with boards in `compute_dir`; its exit code.
  int Run(const std::string& how, const std::string& compute_dir, std::string* err) {
    BackgroundProcess helper({FGPU_HOOK_LEGACY_LAUNCH_HELPER_PATH, how},
                             machine_.HookedEnv(slice_, {"FGPU_COMPUTE_DIR=" + compute_dir}),
                             slice_ + "-helper-" + how);
    const int exit_code = helper.Wait();
    *err = helper.Stderr();
    return exit_code;
  }

  SimMachine machine_{std::string(R"([{"uuid": ")") + kLegacyGateUuid +
                      R"(", "memory": "8GiB", "granularity": "2MiB", "context_overhead": "300MiB"}])"};
  std::string slice_ = std::filesystem::temp_directory_path() / ("fgpu-legacy-gate-" + std::to_string(getpid()));
  std::string blocker_ = slice_ + "-not-a-directory";
  std::string boards_ = slice_ + "-boards";
};

TEST_F(HookLegacyLaunch, EveryLegacyLaunchPassesTheComputeGate) {
  std::ofstream(blocker_) << "x";  // boards under a regular file: the gate cannot open one
  const std::string unusable = blocker_ + "/boards";
  std::string err;
  // No launch, no gate: nothing reported or counted (the control).
  ASSERT_EQ(Run("none", unusable, &err), 0) << err;
  EXPECT_EQ(err.find("compute shares are not enforced"), std::string::npos) << err;
  EXPECT_EQ(ComputeUnenforced(slice_), 0u);
  uint32_t expected = 0;
  for (const char* how : {"launch", "grid", "grid_async", "multi_device"}) {
    ASSERT_EQ(Run(how, unusable, &err), 0) << how << ": " << err;
    EXPECT_NE(err.find("compute shares are not enforced"), std::string::npos) << how << " escaped the gate: " << err;
    EXPECT_EQ(ComputeUnenforced(slice_), ++expected) << how;
  }
  // A usable board: admitted and run, nothing reported.
  for (const char* how : {"launch", "grid", "grid_async", "multi_device"}) {
    ASSERT_EQ(Run(how, boards_, &err), 0) << how << ": " << err;
    EXPECT_EQ(err, "") << how;
  }
  EXPECT_EQ(ComputeUnenforced(slice_), expected);
}

}  // namespace
}  // namespace fgpu::hook
