#include "hook/memory/load_accounting.h"

#include <gtest/gtest.h>

#include "hook/memory/context_accounting.h"
#include "hook/memory/memory_test_support.h"

namespace fgpu::hook {
namespace {

using testing::FakeDriver;
using testing::TestSlice;

// LoadAccounting over the fake driver: a context on device 0, in a slice of 1000 MiB. A fake
// load or limit change moves NVML's usage of this pid and cuMemGetInfo's free bytes together.
class LoadAccountingTest : public ::testing::Test {
 protected:
  LoadAccountingTest()
      : slice_({0}, {1000 * kMiB}),
        calls_(fake_.Calls()),
        devices_(DeviceMapSources{slice_.ledger(), calls_.device_get_uuid, calls_.allocation_granularity,
                                  calls_.nvml_device_get_uuid}),
        table_(10),
        accounting_(slice_.ledger(), &devices_, &table_, &calls_),
        meter_(&calls_, &devices_),
        contexts_(&accounting_, &meter_, &calls_),
        loads_(&accounting_, &meter_, &contexts_) {
    fake_.free_bytes[0] = 8000 * kMiB;
    fake_.nvml_usage[0] = 0;
    ctx_ = fake_.NewContext(0);
    fake_.current = ctx_;
  }

  uint64_t Used() const { return slice_.ledger()->Used(0); }

  void Take(int64_t bytes) {
    fake_.nvml_usage[0] = static_cast<uint64_t>(static_cast<int64_t>(fake_.nvml_usage[0]) + bytes);
    fake_.free_bytes[0] = static_cast<uint64_t>(static_cast<int64_t>(fake_.free_bytes[0]) - bytes);
  }

  // A module load that takes `bytes`; `unloaded` counts the undos.
  CUresult LoadModule(uint64_t handle, int64_t bytes, CUresult rc = CUDA_SUCCESS) {
    return loads_.Load(
        PointerKind::kModule,
        [&](uint64_t* out) {
          if (rc != CUDA_SUCCESS) return rc;
          Take(bytes);
          *out = handle;
          return CUDA_SUCCESS;
        },
        [&](uint64_t undone) {
          EXPECT_EQ(undone, handle);
          Take(-bytes);
          ++unloaded_;
        });
  }

  CUresult Unload(uint64_t handle, int64_t bytes) {
    return loads_.Unload(PointerKind::kModule, handle, [&] {
      Take(-bytes);
      return CUDA_SUCCESS;
    });
  }

  CUresult LoadLibrary(uint64_t handle, int64_t bytes) {
    return loads_.Load(
        PointerKind::kLibrary,
        [&](uint64_t* out) {
          Take(bytes);
          *out = handle;
          return CUDA_SUCCESS;
        },
        [&](uint64_t) { Take(-bytes); });
  }

  // A lazily loading driver's call on `library` that places `bytes` and returns `rc`.
  CUresult Place(uint64_t library, int64_t bytes, CUresult rc = CUDA_SUCCESS) {
    return loads_.Place(library, [&] {
      Take(bytes);
      ++placed_;
      return rc;
    });
  }

  CUresult UnloadLibrary(uint64_t handle, int64_t bytes) {
    return loads_.Unload(PointerKind::kLibrary, handle, [&] {
      Take(-bytes);
      return CUDA_SUCCESS;
    });
  }

  // cuCtxSetLimit(MALLOC_HEAP_SIZE, value) on a driver that reserves the heap at once.
  CUresult SetHeap(size_t value) {
    return loads_.SetLimit(
        CU_LIMIT_MALLOC_HEAP_SIZE, value,
        [&](size_t v) {
          Take(static_cast<int64_t>(v) - static_cast<int64_t>(heap_));
          heap_ = v;
          return CUDA_SUCCESS;
        },
        [&](size_t* v) {
          *v = heap_;
          return CUDA_SUCCESS;
        });
  }

  FakeDriver fake_;
  TestSlice slice_;
  RealCalls calls_;
  DeviceMap devices_;
  PointerTable table_;
  MemoryAccounting accounting_;
  ContextMeter meter_;
  ContextAccounting contexts_;
  LoadAccounting loads_;
  CUcontext ctx_ = nullptr;
  size_t heap_ = 0;
  int unloaded_ = 0;
  int placed_ = 0;
};

TEST_F(LoadAccountingTest, AModuleIsChargedWhatItsLoadTookAndCreditedAtUnload) {
  ASSERT_EQ(LoadModule(7, 6 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 6 * kMiB);
  ASSERT_EQ(Unload(7, 6 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
  EXPECT_EQ(Unload(7, 0), CUDA_SUCCESS) << "an unknown handle is forwarded";
  EXPECT_EQ(Used(), 0u);
}

TEST_F(LoadAccountingTest, ChargesRoundUpToTheGranularity) {
  ASSERT_EQ(LoadModule(7, 100 * 1024), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 2 * kMiB);
}

TEST_F(LoadAccountingTest, MeasuredWithCuMemGetInfoWhenNvmlCannotSay) {
  fake_.nvml_available = false;
  ASSERT_EQ(LoadModule(7, 4 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 4 * kMiB);
}

TEST_F(LoadAccountingTest, ALoadOverTheCapIsUndoneAndRefused) {
  ASSERT_EQ(LoadModule(7, 900 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(LoadModule(8, 200 * kMiB), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(unloaded_, 1);
  EXPECT_EQ(Used(), 900 * kMiB);
  EXPECT_EQ(fake_.free_bytes[0], 8000 * kMiB - 900 * kMiB) << "the refused module's memory is given back";
  EXPECT_EQ(slice_.counters().oom_refusals, 1u);
}

TEST_F(LoadAccountingTest, AFailedLoadChargesNothing) {
  EXPECT_EQ(LoadModule(7, 4 * kMiB, CUDA_ERROR_INVALID_IMAGE), CUDA_ERROR_INVALID_IMAGE);
  EXPECT_EQ(Used(), 0u);
}

TEST_F(LoadAccountingTest, ALoadThatTakesNothingIsNotRecorded) {
  ASSERT_EQ(LoadModule(7, 0), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
}

TEST_F(LoadAccountingTest, WithoutACurrentContextTheLoadIsForwarded) {
  fake_.current = nullptr;
  EXPECT_EQ(LoadModule(7, 4 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
}

TEST_F(LoadAccountingTest, DestroyingTheContextCreditsItsModules) {
  // The context is one ContextAccounting charged, so its teardown claims what it owned.
  fake_.current = nullptr;
  CUcontext ctx = nullptr;
  ASSERT_EQ(contexts_.Create(&ctx, 0,
                             [&](CUcontext* out) {
                               *out = fake_.NewContext(0);
                               Take(100 * kMiB);
                               fake_.current = *out;
                               return CUDA_SUCCESS;
                             }),
            CUDA_SUCCESS);
  ASSERT_EQ(LoadModule(7, 8 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 108 * kMiB);
  ASSERT_EQ(contexts_.Destroy(ctx, [](CUcontext) { return CUDA_SUCCESS; }), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
}

TEST_F(LoadAccountingTest, AHeapIsChargedAsItGrowsAndCreditedAsItShrinks) {
  ASSERT_EQ(SetHeap(64 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 64 * kMiB);
  ASSERT_EQ(SetHeap(256 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 256 * kMiB);
  ASSERT_EQ(SetHeap(32 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 32 * kMiB);
  ASSERT_EQ(SetHeap(0), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
}

TEST_F(LoadAccountingTest, AHeapOverTheCapIsSetBackAndRefused) {
  ASSERT_EQ(SetHeap(512 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(SetHeap(2000 * kMiB), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(heap_, 512 * kMiB) << "the old value is set back";
  EXPECT_EQ(Used(), 512 * kMiB);
  EXPECT_EQ(fake_.free_bytes[0], 8000 * kMiB - 512 * kMiB);
}

TEST_F(LoadAccountingTest, GivingBackMoreThanWasChargedCreditsOnlyTheCharge) {
  // The heap was set before the hook saw this context (no charge), then lowered.
  heap_ = 128 * kMiB;
  Take(128 * kMiB);
  ASSERT_EQ(SetHeap(0), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
  ASSERT_EQ(LoadModule(7, 10 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 10 * kMiB) << "nothing was credited that was not charged";
}

TEST_F(LoadAccountingTest, ALibrarysLazyPlacementIsAddedToItsRecordAndCreditedAtUnload) {
  ASSERT_EQ(LoadLibrary(7, 2 * kMiB), CUDA_SUCCESS);
  ASSERT_EQ(Place(7, 10 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 12 * kMiB);
  ASSERT_EQ(Place(7, 0), CUDA_SUCCESS) << "placed already: nothing more";
  EXPECT_EQ(Used(), 12 * kMiB);
  ASSERT_EQ(UnloadLibrary(7, 12 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
}

TEST_F(LoadAccountingTest, ALibraryWhoseLoadTookNothingIsChargedAtItsFirstUse) {
  ASSERT_EQ(LoadLibrary(7, 0), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
  ASSERT_EQ(Place(7, 3 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 4 * kMiB) << "rounded to the granularity";
  ASSERT_EQ(UnloadLibrary(7, 3 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
}

TEST_F(LoadAccountingTest, APlacementIsChargedEvenWhenTheCallFails) {
  // cuLibraryGetGlobal of a name the library lacks places the library all the same.
  EXPECT_EQ(Place(7, 6 * kMiB, CUDA_ERROR_NOT_FOUND), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(Used(), 6 * kMiB);
}

TEST_F(LoadAccountingTest, APlacementOverTheCapIsChargedAndRefusedUntilTheLibraryIsUnloaded) {
  ASSERT_EQ(LoadModule(8, 900 * kMiB), CUDA_SUCCESS);
  ASSERT_EQ(LoadLibrary(7, 0), CUDA_SUCCESS);
  EXPECT_EQ(Place(7, 200 * kMiB), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(Used(), 1100 * kMiB) << "the placement cannot be undone: the ledger says what the device holds";
  EXPECT_EQ(slice_.counters().oom_refusals, 1u);
  EXPECT_EQ(Place(7, 0), CUDA_ERROR_OUT_OF_MEMORY) << "later uses of the library are refused too";
  EXPECT_EQ(placed_, 1) << "and not forwarded";
  EXPECT_EQ(LoadModule(9, 2 * kMiB), CUDA_ERROR_OUT_OF_MEMORY) << "the slice is over its cap";
  ASSERT_EQ(UnloadLibrary(7, 200 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 900 * kMiB);
  EXPECT_EQ(Place(7, 0), CUDA_SUCCESS) << "a handle used again after unload is the driver's to judge";
  EXPECT_EQ(placed_, 2);
}

TEST_F(LoadAccountingTest, PlacementsInTwoContextsAddUp) {
  ASSERT_EQ(Place(7, 4 * kMiB), CUDA_SUCCESS);
  fake_.current = fake_.NewContext(0);
  ASSERT_EQ(Place(7, 4 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 8 * kMiB);
  ASSERT_EQ(UnloadLibrary(7, 8 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
}

TEST_F(LoadAccountingTest, WithoutACurrentContextAPlacementIsForwarded) {
  fake_.current = nullptr;
  EXPECT_EQ(Place(7, 4 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
}

}  // namespace
}  // namespace fgpu::hook
