#include "hook/memory/pool_accounting.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "hook/memory/memory_test_support.h"
#include "slice/slice.h"

namespace fgpu::hook {
namespace {

using testing::FakeDriver;
using testing::TestSlice;

// A scripted pool allocator with the simulator's rules (docs/sim-memory.md): an allocation that
// does not fit in reserved - used grows the reserve by the shortfall rounded up to 2 MiB (plus
// `extra_growth`, a fragmented driver); a free returns bytes to the pool; a trim keeps
// max(used, keep) rounded up. Counts the attribute queries the hook makes.
struct FakePools {
  static inline FakePools* active = nullptr;
  struct Pool {
    uint64_t reserved = 0;
    uint64_t used = 0;
  };
  std::map<CUmemoryPool, Pool> pools;
  std::map<CUdevice, CUmemoryPool> current;
  uint64_t extra_growth = 0;
  int queries = 0;
  uint64_t next_address = 0x10000;

  FakePools() { active = this; }
  ~FakePools() { active = nullptr; }

  static uint64_t Round(uint64_t bytes) { return (bytes + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB); }

  CUresult Allocate(CUmemoryPool handle, uint64_t bytes, uint64_t* ptr) {
    Pool& pool = pools[handle];
    const uint64_t unused = pool.reserved - pool.used;
    if (bytes > unused) pool.reserved += Round(bytes - unused) + extra_growth;
    pool.used += bytes;
    *ptr = next_address;
    next_address += Round(bytes);
    return CUDA_SUCCESS;
  }
  void Free(CUmemoryPool handle, uint64_t bytes) { pools[handle].used -= bytes; }
  void Trim(CUmemoryPool handle, uint64_t keep) {
    Pool& pool = pools[handle];
    pool.reserved = std::min(pool.reserved, Round(std::max(pool.used, keep)));
  }

  PoolCalls Calls() const {
    PoolCalls calls;
    calls.pool_get_attribute = [](CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
      auto it = active->pools.find(pool);
      if (it == active->pools.end()) return CUDA_ERROR_INVALID_VALUE;
      ++active->queries;
      *static_cast<cuuint64_t*>(value) =
          attr == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT ? it->second.reserved : it->second.used;
      return CUDA_SUCCESS;
    };
    calls.device_get_mem_pool = [](CUmemoryPool* pool, CUdevice device) {
      auto it = active->current.find(device);
      if (it == active->current.end()) return CUDA_ERROR_INVALID_DEVICE;
      *pool = it->second;
      return CUDA_SUCCESS;
    };
    calls.pool_trim_to = [](CUmemoryPool pool, size_t keep) {
      active->Trim(pool, keep);
      return CUDA_SUCCESS;
    };
    return calls;
  }
};

const auto kDefault0 = reinterpret_cast<CUmemoryPool>(uintptr_t{0xd0});
const auto kDefault1 = reinterpret_cast<CUmemoryPool>(uintptr_t{0xd1});
const auto kCreated = reinterpret_cast<CUmemoryPool>(uintptr_t{0xc0});

// Device 0 capped at 1 GiB; fake device 1 is not in the slice.
class PoolAccountingTest : public ::testing::Test {
 protected:
  PoolAccountingTest()
      : slice_({0}, {1024 * kMiB}),
        calls_(fake_.Calls()),
        pool_calls_(driver_.Calls()),
        devices_(DeviceMapSources{slice_.ledger(), calls_.device_get_uuid, calls_.allocation_granularity,
                                  calls_.nvml_device_get_uuid}),
        pools_(slice_.ledger(), &devices_, &pool_calls_, 10) {
    driver_.current[0] = kDefault0;
    driver_.current[1] = kDefault1;
    driver_.pools[kDefault0];
    driver_.pools[kDefault1];
  }

  uint64_t Used() const { return slice_.ledger()->Used(0); }
  uint64_t Reserved(CUmemoryPool pool) { return driver_.pools[pool].reserved; }

  // cuMemAllocAsync (pool null) or FromPool of `bytes` on `device`; *ptr gets the address.
  CUresult Alloc(uint64_t bytes, uint64_t* ptr, CUmemoryPool pool = nullptr, CUdevice device = 0,
                 bool* called = nullptr, bool* undone = nullptr) {
    PoolSlot* slot = pools_.ForAllocation(device, pool);
    EXPECT_NE(slot, nullptr);
    const CUmemoryPool handle = pool != nullptr ? pool : driver_.current[device];
    return pools_.Allocate(
        slot, bytes,
        [&](uint64_t* out) {
          if (called != nullptr) *called = true;
          const CUresult rc = driver_.Allocate(handle, bytes, out);
          *ptr = *out;
          return rc;
        },
        [&](uint64_t) {
          if (undone != nullptr) *undone = true;
          driver_.Free(handle, bytes);
        });
  }
  bool Free(uint64_t ptr, CUmemoryPool pool, uint64_t bytes) {
    CUresult rc = CUDA_ERROR_UNKNOWN;
    const bool tracked = pools_.Freed(
        ptr,
        [&] {
          driver_.Free(pool, bytes);
          return CUDA_SUCCESS;
        },
        &rc);
    EXPECT_TRUE(!tracked || rc == CUDA_SUCCESS);
    return tracked;
  }

  FakeDriver fake_;
  FakePools driver_;
  TestSlice slice_;
  RealCalls calls_;
  PoolCalls pool_calls_;
  DeviceMap devices_;
  PoolAccounting pools_;
};

TEST_F(PoolAccountingTest, ChargesTheReserveNotTheAllocations) {
  uint64_t a = 0;
  ASSERT_EQ(Alloc(3 * kMiB, &a), CUDA_SUCCESS);
  EXPECT_EQ(Reserved(kDefault0), 4 * kMiB);
  EXPECT_EQ(Used(), 4 * kMiB) << "the reserve, in whole granules";
  EXPECT_EQ(pools_.ChargedFor(kDefault0), 4 * kMiB);
  // 1 MiB more fits in the granule already reserved: no growth, no charge, no query.
  const int queries = driver_.queries;
  uint64_t b = 0;
  ASSERT_EQ(Alloc(1 * kMiB, &b), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 4 * kMiB);
  EXPECT_EQ(driver_.queries, queries) << "a pool with room is not queried";
}

TEST_F(PoolAccountingTest, AFreeCreditsNothingUntilATrim) {
  uint64_t a = 0;
  ASSERT_EQ(Alloc(600 * kMiB, &a), CUDA_SUCCESS);
  ASSERT_TRUE(Free(a, kDefault0, 600 * kMiB));
  EXPECT_EQ(Used(), 600 * kMiB) << "the pool keeps the memory";
  EXPECT_EQ(pools_.LiveFor(kDefault0), 0u);
  // Reuse: the pool has room; nothing is charged, the driver is not asked.
  const int queries = driver_.queries;
  ASSERT_EQ(Alloc(600 * kMiB, &a), CUDA_SUCCESS);
  EXPECT_EQ(driver_.queries, queries);
  EXPECT_EQ(Used(), 600 * kMiB);
  ASSERT_TRUE(Free(a, kDefault0, 600 * kMiB));
  // A synchronisation with the threshold at UINT64_MAX trims nothing: the ledger keeps it.
  pools_.ReconcileAll();
  EXPECT_EQ(Used(), 600 * kMiB);
  // The driver trims (threshold 0 + synchronise, or cuMemPoolTrimTo): the ledger follows.
  driver_.Trim(kDefault0, 0);
  pools_.ReconcileAll();
  EXPECT_EQ(Used(), 0u);
  EXPECT_EQ(pools_.ChargedFor(kDefault0), 0u);
}

TEST_F(PoolAccountingTest, GrowthPastTheCapIsRefusedBeforeTheDriver) {
  uint64_t a = 0;
  ASSERT_EQ(Alloc(600 * kMiB, &a), CUDA_SUCCESS);
  ASSERT_TRUE(Free(a, kDefault0, 600 * kMiB));
  // 600 MiB live in a 600 MiB reserve: a second 600 MiB needs 600 MiB more, over the 1 GiB cap.
  ASSERT_EQ(Alloc(600 * kMiB, &a), CUDA_SUCCESS);
  bool called = false;
  uint64_t b = 0;
  EXPECT_EQ(Alloc(600 * kMiB, &b, nullptr, 0, &called), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_FALSE(called);
  EXPECT_EQ(Used(), 600 * kMiB);
  EXPECT_EQ(slice_.counters(), (slice::LedgerCounters{1, 0, 0, 0, 0}));
  EXPECT_EQ(pools_.LiveFor(kDefault0), 600 * kMiB);
  // Only the growth is admitted, not the request: 424 MiB more reaches exactly the cap.
  EXPECT_EQ(Alloc(424 * kMiB, &b), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 1024 * kMiB);
  EXPECT_EQ(Reserved(kDefault0), 1024 * kMiB);
}

TEST_F(PoolAccountingTest, GrowthBeyondWhatWasAdmittedIsUndone) {
  uint64_t a = 0;
  ASSERT_EQ(Alloc(600 * kMiB, &a), CUDA_SUCCESS);
  // A fragmented driver grows by 500 MiB more than needed: 1102 MiB would exceed the cap.
  driver_.extra_growth = 500 * kMiB;
  bool undone = false;
  uint64_t b = 0;
  EXPECT_EQ(Alloc(2 * kMiB, &b, nullptr, 0, nullptr, &undone), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_TRUE(undone);
  EXPECT_EQ(slice_.counters().oom_refusals, 1u) << "one refused allocation, one count";
  EXPECT_EQ(Reserved(kDefault0), 602 * kMiB) << "trimmed back to what the ledger covers";
  EXPECT_EQ(Used(), 602 * kMiB);
  EXPECT_EQ(pools_.ChargedFor(kDefault0), Reserved(kDefault0));
  EXPECT_EQ(pools_.LiveFor(kDefault0), 600 * kMiB);
  // Within the cap, the extra growth is charged on top: the ledger is the reserve.
  driver_.extra_growth = 100 * kMiB;
  ASSERT_EQ(Alloc(10 * kMiB, &b), CUDA_SUCCESS);
  EXPECT_EQ(Used(), Reserved(kDefault0));
  EXPECT_EQ(Used(), 602 * kMiB + 8 * kMiB + 100 * kMiB);
}

TEST_F(PoolAccountingTest, ADropIsNotCreditedWhileAnAllocationIsInFlight) {
  uint64_t a = 0;
  ASSERT_EQ(Alloc(100 * kMiB, &a), CUDA_SUCCESS);
  ASSERT_TRUE(Free(a, kDefault0, 100 * kMiB));
  driver_.Trim(kDefault0, 0);
  // A synchronisation on another thread lands while this fast-path allocation is in the driver.
  PoolSlot* slot = pools_.ForAllocation(0, nullptr);
  ASSERT_EQ(pools_.Allocate(
                slot, 50 * kMiB,
                [&](uint64_t* out) {
                  pools_.ReconcileAll();  // reads reserve 0, sees an allocation in flight
                  EXPECT_EQ(Used(), 100 * kMiB) << "not lowered under a running allocation";
                  return driver_.Allocate(kDefault0, 50 * kMiB, out);
                },
                [](uint64_t) {}),
            CUDA_SUCCESS);
  EXPECT_EQ(Reserved(kDefault0), 50 * kMiB);
  pools_.ReconcileAll();  // quiescent now
  EXPECT_EQ(Used(), 50 * kMiB);
}

TEST_F(PoolAccountingTest, CreatedPoolsDestroyedPoolsAndHostPools) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  driver_.pools[kCreated];
  pools_.Created(kCreated, props);
  uint64_t a = 0;
  ASSERT_EQ(Alloc(64 * kMiB, &a, kCreated), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 64 * kMiB);
  // Destroyed with an allocation outstanding: released with the last free, as the driver does.
  EXPECT_FALSE(pools_.DriverSaysEmpty(kCreated));
  pools_.Destroyed(kCreated, false);
  EXPECT_EQ(Used(), 64 * kMiB);
  ASSERT_TRUE(Free(a, kCreated, 64 * kMiB));
  EXPECT_EQ(Used(), 0u);
  EXPECT_EQ(pools_.ChargedFor(kCreated), 0u) << "forgotten";

  // A host pool is tracked but never charged.
  const auto host = reinterpret_cast<CUmemoryPool>(uintptr_t{0xc1});
  props.location.type = CU_MEM_LOCATION_TYPE_HOST;
  driver_.pools[host];
  pools_.Created(host, props);
  ASSERT_EQ(Alloc(64 * kMiB, &a, host), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
}

TEST_F(PoolAccountingTest, AnEmptyPoolIsCreditedAtDestroy) {
  CUmemPoolProps props{};
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  driver_.pools[kCreated];
  pools_.Created(kCreated, props);
  uint64_t a = 0;
  ASSERT_EQ(Alloc(64 * kMiB, &a, kCreated), CUDA_SUCCESS);
  ASSERT_TRUE(Free(a, kCreated, 64 * kMiB));
  EXPECT_EQ(Used(), 64 * kMiB);
  ASSERT_TRUE(pools_.DriverSaysEmpty(kCreated));
  pools_.Destroyed(kCreated, true);
  EXPECT_EQ(Used(), 0u);
}

TEST_F(PoolAccountingTest, TheCurrentPoolFollowsSetMemPool) {
  CUmemPoolProps props{};
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  driver_.pools[kCreated];
  pools_.Created(kCreated, props);
  uint64_t a = 0;
  ASSERT_EQ(Alloc(10 * kMiB, &a), CUDA_SUCCESS);  // caches the default pool as current
  driver_.current[0] = kCreated;
  pools_.CurrentPoolSet(0, kCreated);
  ASSERT_EQ(Alloc(20 * kMiB, &a), CUDA_SUCCESS);
  EXPECT_EQ(pools_.ChargedFor(kDefault0), 10 * kMiB);
  EXPECT_EQ(pools_.ChargedFor(kCreated), 20 * kMiB);
  // Destroying the current pool falls back to the default one (looked up again).
  driver_.current[0] = kDefault0;
  pools_.Destroyed(kCreated, false);
  ASSERT_EQ(Alloc(2 * kMiB, &a), CUDA_SUCCESS);
  EXPECT_EQ(pools_.LiveFor(kDefault0), 12 * kMiB);
}

TEST_F(PoolAccountingTest, ADeviceOutsideTheSliceIsRefused) {
  bool called = false;
  uint64_t a = 0;
  EXPECT_EQ(Alloc(2 * kMiB, &a, nullptr, 1, &called), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_FALSE(called);
  EXPECT_EQ(slice_.counters().oom_refusals, 1u);
}

// Every pool slot taken: an allocation from one more pool cannot be tracked, so it must be refused
// (fail closed, counted) — forwarding it would put it outside the cap.
TEST_F(PoolAccountingTest, APoolPastTheTrackingLimitIsRefusedNotForwarded) {
  CUmemPoolProps props{};
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  for (int i = 0; i < PoolAccounting::kMaxPools; ++i) {
    pools_.Created(reinterpret_cast<CUmemoryPool>(uintptr_t{0x10000} + static_cast<uintptr_t>(i)), props);
  }
  const auto extra = reinterpret_cast<CUmemoryPool>(uintptr_t{0x90000});
  bool full = false;
  EXPECT_EQ(pools_.ForAllocation(0, extra, &full), nullptr);
  EXPECT_TRUE(full);
  EXPECT_EQ(pools_.RefusedUntracked(), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(slice_.counters().fail_closed_refusals, 1u);
  // A tracked pool still serves, and a driver refusal (unknown device) is not "full".
  full = false;
  EXPECT_NE(pools_.ForAllocation(0, reinterpret_cast<CUmemoryPool>(uintptr_t{0x10000}), &full), nullptr);
  EXPECT_EQ(pools_.ForAllocation(7, nullptr, &full), nullptr);
  EXPECT_FALSE(full);
}

TEST_F(PoolAccountingTest, UnknownPointersAreNotOurs) {
  CUresult rc = CUDA_SUCCESS;
  bool called = false;
  EXPECT_FALSE(pools_.Freed(
      0x1234,
      [&] {
        called = true;
        return CUDA_SUCCESS;
      },
      &rc));
  EXPECT_FALSE(called) << "the caller frees it as any other pointer";
}

}  // namespace
}  // namespace fgpu::hook
