// A slice inside a MIG instance (issue 17): the simulated H100 starts with 3g.40gb + 2 × 2g.20gb
// (its config's "mig"). A workload that names the 3g instance (CUDA_VISIBLE_DEVICES=MIG-…) sees
// the instance's 39.5 GiB; under the hook, in a 10 GiB slice keyed by the instance's UUID, it
// sees 10 GiB and is refused past it, and the other instances keep all their memory.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hook/memory/memory_process_support.h"
#include "sim/state/mig_state.h"

namespace fgpu::hook {
namespace {

using testing::BackgroundProcess;
using testing::FindEvent;
using testing::kMiBytes;
using testing::SimMachine;

constexpr const char* kMigUuid = "GPU-4d494747-5055-4d49-4700-000000000001";
constexpr uint64_t kInstance = 40448 * kMiBytes;  // 3g.40gb on an H100 80GB: 39.50 GiB
constexpr uint64_t kSmall = 20096 * kMiBytes;     // 2g.20gb: 19.62 GiB
constexpr uint64_t kMigCap = 10240 * kMiBytes;
constexpr uint64_t kMigContext = 500 * kMiBytes;  // the simulator's default per context
constexpr uint64_t kMigChunk = 64 * kMiBytes;
constexpr int kMigHoldMs = 30000;

std::string MigH100() {
  return std::string(R"([{"uuid": ")") + kMigUuid + R"(", "mig": ["3g.40gb", "2g.20gb", "2g.20gb"]}])";
}

class MigMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "LD_PRELOAD of a ThreadSanitizer-instrumented libfgpu.so is not supported";
#endif
  }
};

TEST_F(MigMemoryTest, ASliceInsideAMigInstanceCapsItsWorkloadThere) {
  SimMachine machine(MigH100());
  // The config's instances are placed as the driver places them: the 3g first, GPU instance 1.
  const std::string big = sim::MigUuid(kMigUuid, 1, 0);
  const std::string small = sim::MigUuid(kMigUuid, 2, 0);
  std::vector<std::string> env = machine.SimEnv();
  env.push_back("CUDA_VISIBLE_DEVICES=" + big);
  int exit_code = -1;
  nlohmann::json info = FindEvent(machine.RunProbe({"info"}, env, &exit_code), "info");
  ASSERT_EQ(exit_code, 0) << info.dump();
  EXPECT_EQ(info["total_mem"].get<uint64_t>(), kInstance) << "the instance, not the GPU";

  const std::string slice_dir = machine.CreateSlice("slice", big, kMigCap);
  const std::vector<std::string> hooked = machine.HookedEnv(slice_dir, {"CUDA_VISIBLE_DEVICES=" + big});
  info = FindEvent(machine.RunProbe({"info"}, hooked, &exit_code), "info");
  ASSERT_EQ(exit_code, 0) << info.dump();
  EXPECT_EQ(info["total_mem"].get<uint64_t>(), kMigCap) << "the slice inside the instance";
  EXPECT_EQ(info["mem_get_info"]["total"].get<uint64_t>(), kMigCap);

  std::unique_ptr<BackgroundProcess> holder =
      machine.Probe({"fill", "--chunk", "64MiB", "--hold-ms", std::to_string(kMigHoldMs)}, hooked);
  ASSERT_TRUE(holder->WaitForEvent("mem_get_info")) << holder->Stderr();
  const nlohmann::json fill = holder->Event("fill");
  EXPECT_EQ(fill["stop_error"], "CUDA_ERROR_OUT_OF_MEMORY") << fill.dump();
  EXPECT_EQ(fill["allocated_bytes"].get<uint64_t>(), (kMigCap - kMigContext) / kMigChunk * kMigChunk) << fill.dump();

  // The other instance is untouched by the slice's workload.
  std::vector<std::string> other = machine.SimEnv();
  other.push_back("CUDA_VISIBLE_DEVICES=" + small);
  info = FindEvent(machine.RunProbe({"info"}, other, &exit_code), "info");
  ASSERT_EQ(exit_code, 0) << info.dump();
  EXPECT_EQ(info["total_mem"].get<uint64_t>(), kSmall);
  EXPECT_EQ(info["mem_get_info"]["free"].get<uint64_t>(), kSmall - kMigContext);
  holder->Kill();
}

}  // namespace
}  // namespace fgpu::hook
