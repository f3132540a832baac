#include "hook/memory/context_accounting.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>

#include "hook/memory/memory_test_support.h"
#include "slice/slice.h"

namespace fgpu::hook {
namespace {

using testing::FakeDriver;
using testing::TestSlice;

TEST(ProcessListTest, FindsThisPidAtTheNvmlStride) {
  unsigned char buffer[3 * kProcessEntryStride];
  std::memset(buffer, 0xFF, sizeof(buffer));
  nvmlProcessInfo_t entries[3] = {};
  entries[0].pid = 11;
  entries[0].usedGpuMemory = 1;
  entries[1].pid = 22;
  entries[1].usedGpuMemory = 300 * kMiB;
  entries[2].pid = 33;
  entries[2].usedGpuMemory = static_cast<unsigned long long>(NVML_VALUE_NOT_AVAILABLE);
  std::memcpy(buffer, entries, sizeof(entries));
  uint64_t used = 0;
  ASSERT_TRUE(FindProcessUsage(buffer, 3, 22, &used));
  EXPECT_EQ(used, 300 * kMiB);
  EXPECT_FALSE(FindProcessUsage(buffer, 3, 44, &used));
  EXPECT_FALSE(FindProcessUsage(buffer, 3, 33, &used)) << "usage not available is no measurement";
}

// The one driver whose _v3 entries were 32 bytes: entry 0 still parses; a pid elsewhere is
// missed (another method is used), never read at the wrong offset.
TEST(ProcessListTest, ThirtyTwoByteEntriesAreNeverMisread) {
  struct Wide {
    unsigned int pid;
    unsigned long long used;
    unsigned int gi, ci;
    unsigned long long protected_memory;
  };
  static_assert(sizeof(Wide) == kProcessEntryRoom);
  Wide wide[3] = {{7, 100, 0xFFFFFFFF, 0xFFFFFFFF, 0},
                  {8, 200, 0xFFFFFFFF, 0xFFFFFFFF, 0},
                  {9, 300, 0xFFFFFFFF, 0xFFFFFFFF, 0}};
  uint64_t used = 0;
  ASSERT_TRUE(FindProcessUsage(reinterpret_cast<unsigned char*>(wide), 3, 7, &used));
  EXPECT_EQ(used, 100u);
  EXPECT_FALSE(FindProcessUsage(reinterpret_cast<unsigned char*>(wide), 3, 8, &used));
  EXPECT_FALSE(FindProcessUsage(reinterpret_cast<unsigned char*>(wide), 3, 9, &used));
}

// ContextAccounting over the fake driver: device 0 in the slice (1000 MiB), device 1 not.
class ContextAccountingTest : public ::testing::Test {
 protected:
  ContextAccountingTest()
      : slice_({0}, {1000 * kMiB}),
        calls_(fake_.Calls()),
        devices_(DeviceMapSources{slice_.ledger(), calls_.device_get_uuid, calls_.allocation_granularity,
                                  calls_.nvml_device_get_uuid}),
        table_(10),
        accounting_(slice_.ledger(), &devices_, &table_, &calls_),
        meter_(&calls_, &devices_),
        contexts_(&accounting_, &meter_, &calls_) {
    fake_.free_bytes[0] = 8000 * kMiB;
  }

  uint64_t Used() const { return slice_.ledger()->Used(0); }

  // A fake context creation on `device` that costs `overhead` (seen by NVML and cuMemGetInfo).
  CUresult Create(CUdevice device, uint64_t overhead, CUcontext* ctx) {
    return contexts_.Create(ctx, device, [&](CUcontext* out) {
      *out = fake_.NewContext(device);
      fake_.nvml_usage[device] += overhead;
      fake_.free_bytes[device] -= overhead;
      fake_.pushed.push_back(fake_.current);
      fake_.current = *out;
      return CUDA_SUCCESS;
    });
  }

  CUresult Retain(CUdevice device, uint64_t overhead, CUcontext* ctx) {
    return contexts_.RetainPrimary(ctx, device, [&](CUcontext* out) {
      if (fake_.primary_active[device]++ == 0) {
        primary_[device] = fake_.NewContext(device);
        fake_.nvml_usage[device] += overhead;
        fake_.free_bytes[device] -= overhead;
      }
      *out = primary_[device];
      return CUDA_SUCCESS;
    });
  }

  // A fake cuGreenCtxCreate on `device` that costs `overhead`; the new context is not current.
  CUresult CreateGreen(CUdevice device, uint64_t overhead, CUgreenCtx* green) {
    return contexts_.CreateGreen(green, device, [&](CUgreenCtx* out) {
      *out = fake_.NewGreenContext(device);
      fake_.nvml_usage[device] += overhead;
      fake_.free_bytes[device] -= overhead;
      return CUDA_SUCCESS;
    });
  }

  // A fake cuGreenCtxDestroy that answers `rc`.
  CUresult DestroyGreen(CUgreenCtx green, CUresult rc) {
    return contexts_.DestroyGreen(green, [&](CUgreenCtx g) {
      if (rc == CUDA_SUCCESS) fake_.green_contexts.erase(g);
      return rc;
    });
  }

  // A 64 MiB device allocation attributed to the current context, as the allocation wrappers do.
  void AllocateUnderCurrentContext(CUcontext expected_owner, uint64_t key) {
    Attribution at;
    ASSERT_TRUE(accounting_.AttributeToCurrentContext(&at));
    ASSERT_EQ(at.owner, expected_owner);
    ASSERT_EQ(accounting_.Charged(
                  PointerKind::kDevicePointer, at, 64 * kMiB,
                  [&](uint64_t* out) {
                    *out = key;
                    return CUDA_SUCCESS;
                  },
                  [](uint64_t) {}),
              CUDA_SUCCESS);
  }

  OverheadMethod MethodOf(CUcontext ctx) {
    uint64_t bytes = 0;
    OverheadMethod method{};
    EXPECT_TRUE(contexts_.Charged(ctx, &bytes, &method));
    return method;
  }

  FakeDriver fake_;
  TestSlice slice_;
  RealCalls calls_;
  DeviceMap devices_;
  PointerTable table_;
  MemoryAccounting accounting_;
  ContextMeter meter_;
  ContextAccounting contexts_;
  std::map<CUdevice, CUcontext> primary_;
};

TEST_F(ContextAccountingTest, MeasuresTheOverheadWithNvml) {
  fake_.nvml_usage[0] = 0;  // listed, using nothing yet
  CUcontext ctx = nullptr;
  ASSERT_EQ(Create(0, 300 * kMiB, &ctx), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 300 * kMiB);
  EXPECT_EQ(MethodOf(ctx), OverheadMethod::kNvmlProcess);

  ASSERT_EQ(contexts_.Destroy(ctx, [](CUcontext) { return CUDA_SUCCESS; }), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
}

TEST_F(ContextAccountingTest, TheFirstContextOfAProcessIsMeasuredEvenBeforeNvmlListsIt) {
  // No usage entry for device 0: the pid appears only once the context exists.
  CUcontext ctx = nullptr;
  ASSERT_EQ(Create(0, 250 * kMiB, &ctx), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 250 * kMiB);
}

TEST_F(ContextAccountingTest, OverTheCapTheContextIsDestroyedAgain) {
  CUcontext ctx = nullptr;
  ASSERT_EQ(Create(0, 600 * kMiB, &ctx), CUDA_SUCCESS);
  CUcontext second = nullptr;
  EXPECT_EQ(Create(0, 600 * kMiB, &second), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(second, nullptr);
  ASSERT_EQ(fake_.destroyed.size(), 1u);
  EXPECT_EQ(Used(), 600 * kMiB);
  EXPECT_EQ(slice_.counters(), (slice::LedgerCounters{1, 0, 0, 0, 0}));
}

TEST_F(ContextAccountingTest, OneContextMoreThanTheRegistryHoldsIsRefusedAsFailClosed) {
  CUcontext ctx = nullptr;
  for (int i = 0; i < ContextAccounting::kMaxContexts; ++i) ASSERT_EQ(Create(0, 2 * kMiB, &ctx), CUDA_SUCCESS) << i;
  EXPECT_EQ(Create(0, 2 * kMiB, &ctx), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(ctx, nullptr);
  EXPECT_EQ(Used(), ContextAccounting::kMaxContexts * 2 * kMiB) << "its charge was rolled back";
  EXPECT_EQ(slice_.counters(), (slice::LedgerCounters{0, 1, 0, 0, 0})) << "not the cap: no record to keep it";
}

TEST_F(ContextAccountingTest, NoContextOnADeviceOutsideTheSlice) {
  CUcontext ctx = nullptr;
  EXPECT_EQ(Create(1, 300 * kMiB, &ctx), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(fake_.destroyed.size(), 1u);
}

TEST_F(ContextAccountingTest, WithoutNvmlAnotherContextMeasuresThroughMemGetInfo) {
  fake_.nvml_available = false;
  CUcontext first = nullptr;
  ASSERT_EQ(Create(0, 300 * kMiB, &first), CUDA_SUCCESS);
  EXPECT_EQ(MethodOf(first), OverheadMethod::kEstimate) << "nothing to measure the first one with";
  EXPECT_EQ(Used(), kEstimatedContextOverhead);
  CUcontext second = nullptr;
  ASSERT_EQ(Create(0, 200 * kMiB, &second), CUDA_SUCCESS);
  EXPECT_EQ(MethodOf(second), OverheadMethod::kMemGetInfo);
  EXPECT_EQ(Used(), kEstimatedContextOverhead + 200 * kMiB);
  EXPECT_EQ(fake_.current, second) << "the measurement left the context stack as it was";
}

TEST_F(ContextAccountingTest, NvmlThatCannotSeeThisPidFallsBack) {
  fake_.nvml_lists_pid = false;  // a PID namespace: NVML lists host pids
  CUcontext first = nullptr;
  ASSERT_EQ(Create(0, 300 * kMiB, &first), CUDA_SUCCESS);
  EXPECT_EQ(MethodOf(first), OverheadMethod::kEstimate);
  CUcontext second = nullptr;
  ASSERT_EQ(Create(0, 100 * kMiB, &second), CUDA_SUCCESS);
  EXPECT_EQ(MethodOf(second), OverheadMethod::kMemGetInfo);
}

TEST_F(ContextAccountingTest, DestroyCreditsWhatTheContextOwned) {
  CUcontext ctx = nullptr;
  ASSERT_EQ(Create(0, 300 * kMiB, &ctx), CUDA_SUCCESS);
  Attribution at;
  ASSERT_TRUE(accounting_.AttributeToCurrentContext(&at));
  ASSERT_EQ(at.owner, ctx);
  ASSERT_EQ(accounting_.Charged(
                PointerKind::kDevicePointer, at, 64 * kMiB,
                [](uint64_t* key) {
                  *key = 0x1000;
                  return CUDA_SUCCESS;
                },
                [](uint64_t) {}),
            CUDA_SUCCESS);
  EXPECT_EQ(Used(), 364 * kMiB);
  // A failing destroy changes nothing.
  EXPECT_EQ(contexts_.Destroy(ctx, [](CUcontext) { return CUDA_ERROR_CONTEXT_IS_DESTROYED; }),
            CUDA_ERROR_CONTEXT_IS_DESTROYED);
  EXPECT_EQ(Used(), 364 * kMiB);
  ASSERT_EQ(contexts_.Destroy(ctx, [](CUcontext) { return CUDA_SUCCESS; }), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
  // Unknown now: forwarded untouched.
  EXPECT_EQ(contexts_.Destroy(ctx, [](CUcontext) { return CUDA_ERROR_INVALID_CONTEXT; }),
            CUDA_ERROR_INVALID_CONTEXT);
}

TEST_F(ContextAccountingTest, PrimaryContextIsChargedOnceAndCreditedWhenTheLastReferenceGoes) {
  CUcontext a = nullptr;
  CUcontext b = nullptr;
  ASSERT_EQ(Retain(0, 300 * kMiB, &a), CUDA_SUCCESS);
  ASSERT_EQ(Retain(0, 300 * kMiB, &b), CUDA_SUCCESS);
  EXPECT_EQ(a, b);
  EXPECT_EQ(Used(), 300 * kMiB);
  auto release = [&](CUdevice device) {
    --fake_.primary_active[device];
    return CUDA_SUCCESS;
  };
  ASSERT_EQ(contexts_.ReleasePrimary(0, release), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 300 * kMiB) << "still retained once";
  ASSERT_EQ(contexts_.ReleasePrimary(0, release), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
  EXPECT_EQ(contexts_.ReleasePrimary(0, [](CUdevice) { return CUDA_ERROR_INVALID_CONTEXT; }),
            CUDA_ERROR_INVALID_CONTEXT);
}

TEST_F(ContextAccountingTest, PrimaryOverTheCapIsReleasedAgain) {
  CUcontext ctx = nullptr;
  EXPECT_EQ(Retain(0, 1200 * kMiB, &ctx), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(ctx, nullptr);
  EXPECT_EQ(fake_.primary_releases, 1);
  EXPECT_EQ(fake_.primary_active[0], 0);
  EXPECT_EQ(Used(), 0u);
}

TEST_F(ContextAccountingTest, ResetCreditsThePrimaryContextAndItsAllocations) {
  CUcontext ctx = nullptr;
  ASSERT_EQ(Retain(0, 300 * kMiB, &ctx), CUDA_SUCCESS);
  fake_.current = ctx;
  Attribution at;
  ASSERT_TRUE(accounting_.AttributeToCurrentContext(&at));
  ASSERT_EQ(accounting_.Charged(
                PointerKind::kArray, at, 10 * kMiB,
                [](uint64_t* key) {
                  *key = 0x77;
                  return CUDA_SUCCESS;
                },
                [](uint64_t) {}),
            CUDA_SUCCESS);
  ASSERT_EQ(contexts_.ResetPrimary(0,
                                   [&](CUdevice device) {
                                     fake_.primary_active[device] = 0;
                                     return CUDA_SUCCESS;
                                   }),
            CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
  // Retained again: a new context, charged again.
  ASSERT_EQ(Retain(0, 300 * kMiB, &ctx), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 300 * kMiB);
}

TEST_F(ContextAccountingTest, ResetThatKeepsThePrimaryActiveKeepsItsOverheadCharged) {
  CUcontext ctx = nullptr;
  ASSERT_EQ(Retain(0, 300 * kMiB, &ctx), CUDA_SUCCESS);
  ASSERT_EQ(contexts_.ResetPrimary(0, [](CUdevice) { return CUDA_SUCCESS; }), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 300 * kMiB) << "still retained: rebuilt in place, still costs its overhead";
  ASSERT_EQ(contexts_.ReleasePrimary(0,
                                     [&](CUdevice device) {
                                       fake_.primary_active[device] = 0;
                                       return CUDA_SUCCESS;
                                     }),
            CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
}

TEST_F(ContextAccountingTest, PrimaryContextIsNotDestroyedThroughCtxDestroy) {
  CUcontext ctx = nullptr;
  ASSERT_EQ(Retain(0, 300 * kMiB, &ctx), CUDA_SUCCESS);
  EXPECT_EQ(contexts_.Destroy(ctx, [](CUcontext) { return CUDA_ERROR_INVALID_CONTEXT; }),
            CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(Used(), 300 * kMiB);
}

TEST_F(ContextAccountingTest, GreenContextIsChargedUnderItsContextHandle) {
  fake_.nvml_usage[0] = 0;
  CUgreenCtx green = nullptr;
  ASSERT_EQ(CreateGreen(0, 300 * kMiB, &green), CUDA_SUCCESS);
  ASSERT_NE(green, nullptr);
  EXPECT_EQ(Used(), 300 * kMiB);
  EXPECT_EQ(MethodOf(fake_.green_contexts[green]), OverheadMethod::kNvmlProcess);
  EXPECT_EQ(fake_.current, nullptr) << "the measurement left the context stack as it was";
}

TEST_F(ContextAccountingTest, GreenContextIsMeasuredThroughMemGetInfoBesideAnotherContext) {
  fake_.nvml_available = false;
  CUcontext ctx = nullptr;
  ASSERT_EQ(Create(0, 300 * kMiB, &ctx), CUDA_SUCCESS);
  CUgreenCtx green = nullptr;
  ASSERT_EQ(CreateGreen(0, 200 * kMiB, &green), CUDA_SUCCESS);
  EXPECT_EQ(MethodOf(fake_.green_contexts[green]), OverheadMethod::kMemGetInfo);
  EXPECT_EQ(Used(), kEstimatedContextOverhead + 200 * kMiB);
}

TEST_F(ContextAccountingTest, GreenContextOverTheCapIsDestroyedWithTheGreenDestroy) {
  CUgreenCtx first = nullptr;
  ASSERT_EQ(CreateGreen(0, 600 * kMiB, &first), CUDA_SUCCESS);
  CUgreenCtx second = nullptr;
  EXPECT_EQ(CreateGreen(0, 600 * kMiB, &second), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(second, nullptr);
  ASSERT_EQ(fake_.green_destroyed.size(), 1u);
  EXPECT_NE(fake_.green_destroyed[0], first);
  EXPECT_TRUE(fake_.destroyed.empty()) << "a green context is never undone with cuCtxDestroy";
  EXPECT_EQ(Used(), 600 * kMiB);
  EXPECT_EQ(slice_.counters(), (slice::LedgerCounters{1, 0, 0, 0, 0}));
}

TEST_F(ContextAccountingTest, GreenDestroyCreditsTheContextAndWhatWasAllocatedUnderIt) {
  CUgreenCtx green = nullptr;
  ASSERT_EQ(CreateGreen(0, 300 * kMiB, &green), CUDA_SUCCESS);
  const CUcontext ctx = fake_.green_contexts[green];
  fake_.current = ctx;  // cuCtxFromGreenCtx + cuCtxSetCurrent
  AllocateUnderCurrentContext(ctx, 0x2000);
  EXPECT_EQ(Used(), 364 * kMiB);
  // Its CUcontext counts as a primary context: cuCtxDestroy is forwarded and credits nothing.
  bool forwarded = false;
  EXPECT_EQ(contexts_.Destroy(ctx,
                              [&](CUcontext) {
                                forwarded = true;
                                return CUDA_ERROR_INVALID_CONTEXT;
                              }),
            CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_TRUE(forwarded);
  EXPECT_EQ(Used(), 364 * kMiB);
  // A failing destroy changes nothing.
  EXPECT_EQ(DestroyGreen(green, CUDA_ERROR_INVALID_VALUE), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(Used(), 364 * kMiB);
  ASSERT_EQ(DestroyGreen(green, CUDA_SUCCESS), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
  // Unknown now: forwarded untouched.
  EXPECT_EQ(DestroyGreen(green, CUDA_ERROR_INVALID_HANDLE), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(ContextAccountingTest, GreenDestroyLeavesOtherContextsAllocationsCharged) {
  CUcontext ctx = nullptr;
  ASSERT_EQ(Create(0, 300 * kMiB, &ctx), CUDA_SUCCESS);  // current now
  AllocateUnderCurrentContext(ctx, 0x3000);
  CUgreenCtx green = nullptr;
  ASSERT_EQ(CreateGreen(0, 200 * kMiB, &green), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 564 * kMiB);
  ASSERT_EQ(DestroyGreen(green, CUDA_SUCCESS), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 364 * kMiB);
}

TEST_F(ContextAccountingTest, GreenContextsWithoutCtxFromGreenCtxAreRefusedFailClosed) {
  calls_.ctx_from_green_ctx = nullptr;
  CUgreenCtx green = nullptr;
  bool called = false;
  EXPECT_EQ(contexts_.CreateGreen(&green, 0,
                                  [&](CUgreenCtx*) {
                                    called = true;
                                    return CUDA_SUCCESS;
                                  }),
            CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_FALSE(called) << "no charge could be keyed to its allocations";
  EXPECT_EQ(slice_.counters(), (slice::LedgerCounters{0, 1, 0, 0, 0}));
}

}  // namespace
}  // namespace fgpu::hook
