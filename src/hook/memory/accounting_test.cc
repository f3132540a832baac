#include "hook/memory/accounting.h"

#include <gtest/gtest.h>

#include "hook/memory/memory_test_support.h"
#include "slice/slice.h"

namespace fgpu::hook {
namespace {

using testing::FakeDriver;
using testing::TestSlice;

// A MemoryAccounting over a fake driver and a real slice: device 0 capped at `cap0`, fake
// device 1 not in the slice.
class AccountingTest : public ::testing::Test {
 protected:
  explicit AccountingTest(uint64_t cap0 = 100 * kMiB, int table_log2 = 10)
      : slice_({0}, {cap0}),
        calls_(fake_.Calls()),
        devices_(DeviceMapSources{slice_.ledger(), calls_.device_get_uuid, calls_.allocation_granularity,
                                  calls_.nvml_device_get_uuid}),
        table_(table_log2),
        accounting_(slice_.ledger(), &devices_, &table_, &calls_) {
    ctx0_ = fake_.NewContext(0);
    ctx1_ = fake_.NewContext(1);
    fake_.current = ctx0_;
  }

  uint64_t Used() const { return slice_.ledger()->Used(0); }

  // A fake allocation of `bytes` returning `rc` and address `address`.
  CUresult Allocate(uint64_t bytes, uint64_t address, CUresult rc = CUDA_SUCCESS, bool* called = nullptr,
                    bool* undone = nullptr) {
    Attribution at;
    EXPECT_TRUE(accounting_.AttributeToCurrentContext(&at));
    return accounting_.Charged(
        PointerKind::kDevicePointer, at, bytes,
        [&](uint64_t* key) {
          if (called != nullptr) *called = true;
          *key = address;
          return rc;
        },
        [&](uint64_t) {
          if (undone != nullptr) *undone = true;
        });
  }

  FakeDriver fake_;
  TestSlice slice_;
  RealCalls calls_;
  DeviceMap devices_;
  PointerTable table_;
  MemoryAccounting accounting_;
  CUcontext ctx0_ = nullptr;
  CUcontext ctx1_ = nullptr;
};

TEST_F(AccountingTest, ChargesRoundedBytesAndCreditsThemOnFree) {
  ASSERT_EQ(Allocate(3 * kMiB, 0x1000), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 4 * kMiB) << "rounded up to the 2 MiB granularity";
  EXPECT_EQ(accounting_.Freed(PointerKind::kDevicePointer, 0x1000, [] { return CUDA_SUCCESS; }),
            CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
}

TEST_F(AccountingTest, OverTheCapTheDriverIsNotCalled) {
  ASSERT_EQ(Allocate(90 * kMiB, 0x1000), CUDA_SUCCESS);
  bool called = false;
  EXPECT_EQ(Allocate(11 * kMiB, 0x2000, CUDA_SUCCESS, &called), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_FALSE(called);
  EXPECT_EQ(Used(), 90 * kMiB);
  EXPECT_EQ(slice_.counters().oom_refusals, 1u) << "the refusal is counted in the ledger";
  EXPECT_EQ(Allocate(10 * kMiB, 0x2000), CUDA_SUCCESS) << "exactly up to the cap";
  EXPECT_EQ(Used(), 100 * kMiB);
  EXPECT_EQ(slice_.counters(), (slice::LedgerCounters{1, 0, 0, 0, 0})) << "successes count nothing";
}

TEST_F(AccountingTest, DriverErrorsAreReturnedUntouchedAndRolledBack) {
  EXPECT_EQ(Allocate(10 * kMiB, 0, CUDA_ERROR_INVALID_VALUE), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(Allocate(10 * kMiB, 0, CUDA_ERROR_OUT_OF_MEMORY), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(Used(), 0u);
  EXPECT_EQ(slice_.counters(), slice::LedgerCounters{}) << "the driver's own errors are not fgpu's refusals";
}

TEST_F(AccountingTest, DeviceOutsideTheSliceHasNoMemory) {
  fake_.current = ctx1_;
  bool called = false;
  EXPECT_EQ(Allocate(2 * kMiB, 0x1000, CUDA_SUCCESS, &called), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_FALSE(called);
  EXPECT_EQ(slice_.counters(), (slice::LedgerCounters{1, 0, 0, 0, 0})) << "a cap of 0 is a cap";
}

TEST_F(AccountingTest, ADeviceThatCannotBeIdentifiedIsRefusedAndCountedAsFailClosed) {
  fake_.current = fake_.NewContext(7);  // the driver cannot give device 7's UUID
  bool called = false;
  EXPECT_EQ(Allocate(2 * kMiB, 0x1000, CUDA_SUCCESS, &called), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_FALSE(called);
  EXPECT_EQ(slice_.counters(), (slice::LedgerCounters{0, 1, 0, 0, 0}));
}

TEST_F(AccountingTest, UnknownPointersAreForwardedUntouched) {
  bool called = false;
  EXPECT_EQ(accounting_.Freed(PointerKind::kDevicePointer, 0x5000,
                              [&] {
                                called = true;
                                return CUDA_ERROR_INVALID_VALUE;
                              }),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_TRUE(called);
  EXPECT_EQ(Used(), 0u);
}

TEST_F(AccountingTest, FailedFreeKeepsTheChargeAndTheEntry) {
  ASSERT_EQ(Allocate(4 * kMiB, 0x1000), CUDA_SUCCESS);
  EXPECT_EQ(accounting_.Freed(PointerKind::kDevicePointer, 0x1000, [] { return CUDA_ERROR_ILLEGAL_ADDRESS; }),
            CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(Used(), 4 * kMiB);
  EXPECT_EQ(accounting_.Freed(PointerKind::kDevicePointer, 0x1000, [] { return CUDA_SUCCESS; }),
            CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
}

TEST_F(AccountingTest, ResizeChargesWhatTheDriverChose) {
  Attribution at;
  ASSERT_TRUE(accounting_.AttributeToCurrentContext(&at));
  Reservation reservation;
  ASSERT_TRUE(accounting_.Reserve(at, 10 * kMiB, &reservation));
  ASSERT_TRUE(accounting_.Resize(at, 13 * kMiB, &reservation));
  EXPECT_EQ(Used(), 14 * kMiB);
  ASSERT_TRUE(accounting_.Resize(at, 1, &reservation));
  EXPECT_EQ(Used(), 2 * kMiB);
  EXPECT_FALSE(accounting_.Resize(at, 200 * kMiB, &reservation));
  EXPECT_EQ(reservation.bytes, 2 * kMiB) << "a refused growth leaves the reservation as it was";
  EXPECT_EQ(slice_.counters().oom_refusals, 1u);
  accounting_.Rollback(reservation);
  EXPECT_EQ(Used(), 0u);
}

TEST_F(AccountingTest, Attribution) {
  Attribution at;
  fake_.current = nullptr;
  EXPECT_FALSE(accounting_.AttributeToCurrentContext(&at)) << "no context: forwarded, the driver says why";

  fake_.current = ctx0_;
  auto stream = reinterpret_cast<CUstream>(uintptr_t{77});
  fake_.stream_contexts[stream] = ctx1_;
  ASSERT_TRUE(accounting_.AttributeToStream(stream, false, &at));
  EXPECT_EQ(at.device, 1);
  EXPECT_EQ(at.owner, ctx1_);
  EXPECT_FALSE(accounting_.AttributeToStream(reinterpret_cast<CUstream>(uintptr_t{78}), false, &at))
      << "invalid stream: forwarded";

  CUmemLocation host{CU_MEM_LOCATION_TYPE_HOST, 0};
  EXPECT_FALSE(accounting_.AttributeToLocation(host, &at));
  CUmemLocation numa{CU_MEM_LOCATION_TYPE_HOST_NUMA, 0};
  EXPECT_FALSE(accounting_.AttributeToLocation(numa, &at));
  CUmemLocation device{CU_MEM_LOCATION_TYPE_DEVICE, 1};
  ASSERT_TRUE(accounting_.AttributeToLocation(device, &at));
  EXPECT_EQ(at.device, 1);
  EXPECT_EQ(at.owner, ctx0_) << "VMM handles belong to the current context";
}

TEST_F(AccountingTest, StreamContextWithoutCtxGetDeviceV2UsesTheCurrentDevice) {
  fake_.has_ctx_get_device_of = false;
  calls_ = fake_.Calls();
  auto stream = reinterpret_cast<CUstream>(uintptr_t{77});
  fake_.stream_contexts[stream] = ctx0_;
  Attribution at;
  ASSERT_TRUE(accounting_.AttributeToStream(stream, true, &at));
  EXPECT_EQ(at.device, 0);
}

TEST_F(AccountingTest, ContextTeardownClaimsAndCreditsWhatTheContextOwned) {
  ASSERT_EQ(Allocate(2 * kMiB, 0x1000), CUDA_SUCCESS);
  ASSERT_EQ(Allocate(4 * kMiB, 0x2000), CUDA_SUCCESS);
  std::vector<ClaimedEntry> claimed = accounting_.ClaimOwnedBy(ctx0_);
  EXPECT_EQ(claimed.size(), 2u);
  accounting_.Settle(claimed, /*driver_freed=*/false);  // the destroy failed: all restored
  EXPECT_EQ(Used(), 6 * kMiB);
  claimed = accounting_.ClaimOwnedBy(ctx0_);
  ASSERT_EQ(claimed.size(), 2u);
  accounting_.Settle(claimed, /*driver_freed=*/true);
  EXPECT_EQ(Used(), 0u);
  bool called = false;
  EXPECT_EQ(accounting_.Freed(PointerKind::kDevicePointer, 0x1000,
                              [&] {
                                called = true;
                                return CUDA_ERROR_INVALID_VALUE;
                              }),
            CUDA_ERROR_INVALID_VALUE)
      << "freed with its context: now unknown, forwarded";
  EXPECT_TRUE(called);
}

class FullTableAccountingTest : public AccountingTest {
 protected:
  FullTableAccountingTest() : AccountingTest(100 * kMiB, /*table_log2=*/2) {}
};

TEST_F(FullTableAccountingTest, AFullTableUndoesTheAllocationInsteadOfLosingTheCharge) {
  for (uint64_t i = 0; i < 4; ++i) ASSERT_EQ(Allocate(2 * kMiB, 0x1000 * (i + 1)), CUDA_SUCCESS);
  bool called = false;
  bool undone = false;
  EXPECT_EQ(Allocate(2 * kMiB, 0x9000, CUDA_SUCCESS, &called, &undone), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_TRUE(called);
  EXPECT_TRUE(undone);
  EXPECT_EQ(Used(), 8 * kMiB);
  EXPECT_EQ(slice_.counters(), (slice::LedgerCounters{0, 1, 0, 0, 0})) << "not the cap: fgpu could not keep the books";
}

}  // namespace
}  // namespace fgpu::hook
