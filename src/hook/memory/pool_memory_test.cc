// Stream-ordered pools end to end: fgpu_hook_pool_helper (testdata/pool_reserve_helper.cc) under
// LD_PRELOAD=libfgpu.so on a simulated 8 GiB GPU (2 MiB granularity, 300 MiB per context) with a
// 1 GiB slice. The ledger must follow the pool's RESERVE: kept after a synchronisation with the
// threshold at UINT64_MAX (PyTorch's setting), so a plain allocation is refused; given back
// after a trim, so it then succeeds; and equal to what the simulated device really holds.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/abi/cuda_types.h"
#include "hook/memory/memory_process_support.h"
#include "slice/slice.h"

namespace fgpu::hook {
namespace {

using testing::BackgroundProcess;
using testing::FindEvent;
using testing::kMiBytes;
using testing::PhysicalUsage;
using testing::SimMachine;
using testing::SliceUsed;

constexpr const char* kPoolUuid = "GPU-4d454d4f-5259-4d41-5452-495800000001";
constexpr uint64_t kPoolCap = 1024 * kMiBytes;
constexpr uint64_t kPoolContext = 300 * kMiBytes;
constexpr uint64_t kPool = 600 * kMiBytes;

std::string OnePoolDevice() {
  return std::string(R"([{"uuid": ")") + kPoolUuid +
         R"(", "memory": "8GiB", "granularity": "2MiB", "context_overhead": "300MiB"}])";
}

class PoolMemoryTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "LD_PRELOAD of a ThreadSanitizer-instrumented libfgpu.so is not supported";
#endif
  }
};

// Ledger usage as the helper saw it after `step` (the view's free is cap - used here).
uint64_t UsedAfter(const BackgroundProcess& helper, const std::string& step) {
  const nlohmann::json event = helper.Event(step);
  EXPECT_FALSE(event.is_null()) << step << ": " << helper.Stderr();
  return event.is_null() ? UINT64_MAX : kPoolCap - event["free"].get<uint64_t>();
}

TEST_P(PoolMemoryTest, TheLedgerFollowsThePoolReserve) {
  SimMachine machine(OnePoolDevice());
  const std::string slice_dir = machine.CreateSlice("slice", kPoolUuid, kPoolCap);
  BackgroundProcess helper({FGPU_HOOK_POOL_HELPER_PATH, GetParam(), "30000"}, machine.HookedEnv(slice_dir),
                           ::testing::TempDir() + "/pool-helper-" + GetParam());
  ASSERT_TRUE(helper.WaitForEvent("mem_alloc_after_trim")) << helper.Stderr();
  for (const char* step : {"threshold_max", "alloc_async", "free_async", "sync_kept", "alloc_async_reuse",
                           "free_async_reuse", "trimmed"}) {
    EXPECT_EQ(helper.Event(step)["rc"].get<int>(), CUDA_SUCCESS) << step;
  }
  EXPECT_EQ(UsedAfter(helper, "alloc_async"), kPoolContext + kPool);
  EXPECT_EQ(UsedAfter(helper, "free_async"), kPoolContext + kPool) << "a free returns nothing to the device";
  EXPECT_EQ(UsedAfter(helper, "sync_kept"), kPoolContext + kPool) << "the pool kept its reserve";
  EXPECT_EQ(helper.Event("mem_alloc_while_kept")["rc"].get<int>(), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(UsedAfter(helper, "alloc_async_reuse"), kPoolContext + kPool) << "reuse charges nothing more";
  EXPECT_EQ(UsedAfter(helper, "trimmed"), kPoolContext) << "the trim gave the reserve back";
  EXPECT_EQ(helper.Event("mem_alloc_after_trim")["rc"].get<int>(), CUDA_SUCCESS);
  EXPECT_EQ(UsedAfter(helper, "mem_alloc_after_trim"), kPoolContext + kPool);
  // The ledger agrees with what the simulated device gave the process.
  EXPECT_EQ(SliceUsed(slice_dir), kPoolContext + kPool);
  EXPECT_EQ(PhysicalUsage(machine, helper.pid()), kPoolContext + kPool);
  helper.Kill();
  helper.Wait();
}

INSTANTIATE_TEST_SUITE_P(SyncOrTrim, PoolMemoryTest, ::testing::Values("sync", "trim"));

}  // namespace
}  // namespace fgpu::hook
