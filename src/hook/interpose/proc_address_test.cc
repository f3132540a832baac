#include "hook/interpose/proc_address.h"

#include <gtest/gtest.h>

#include "hook/interpose/wrapper_table.h"

namespace fgpu::hook {
namespace {

char fake_driver[kCudaSymbolCount + kNvmlSymbolCount];
char unknown_function;

class ProcAddressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (size_t i = 0; i < kCudaSymbolCount; ++i) {
      real_cuda_[i] = &fake_driver[i];
      cuda_wrappers_[i] = CudaWrapperAddress(static_cast<CudaSymbol>(i));
    }
    for (size_t i = 0; i < kNvmlSymbolCount; ++i) {
      real_nvml_[i] = &fake_driver[kCudaSymbolCount + i];
      nvml_wrappers_[i] = NvmlWrapperAddress(static_cast<NvmlSymbol>(i));
    }
    map_.Build(real_cuda_, cuda_wrappers_, real_nvml_, nvml_wrappers_);
  }
  void* Real(CudaSymbol symbol) const { return real_cuda_[static_cast<size_t>(symbol)]; }
  void* Wrapper(CudaSymbol symbol) const { return cuda_wrappers_[static_cast<size_t>(symbol)]; }

  void* real_cuda_[kCudaSymbolCount] = {};
  void* cuda_wrappers_[kCudaSymbolCount] = {};
  void* real_nvml_[kNvmlSymbolCount] = {};
  void* nvml_wrappers_[kNvmlSymbolCount] = {};
  AddressMap map_;
};

TEST_F(ProcAddressTest, HookedVariantBecomesItsOwnWrapper) {
  for (Mode mode : {Mode::kEnforcing, Mode::kFailed}) {
    for (CudaSymbol symbol : {CudaSymbol::k_cuMemAlloc_v2, CudaSymbol::k_cuMemAlloc, CudaSymbol::k_cuLaunchKernel,
                              CudaSymbol::k_cuLaunchKernel_ptsz, CudaSymbol::k_cuGetProcAddress,
                              CudaSymbol::k_cuGetProcAddress_v2, CudaSymbol::k_cuCtxCreate_v4}) {
      const ProcAddressAnswer answer = SubstituteProcAddress(map_, mode, CudaBaseName(symbol), Real(symbol));
      EXPECT_FALSE(answer.refuse);
      EXPECT_EQ(answer.pfn, Wrapper(symbol)) << CudaSymbolName(symbol);
    }
  }
}

TEST_F(ProcAddressTest, OurOwnWrapperStaysOurs) {
  // The simulated driver resolves &cuMemAlloc_v2 through the global scope: under LD_PRELOAD
  // its getter answers with our export.
  const ProcAddressAnswer answer =
      SubstituteProcAddress(map_, Mode::kEnforcing, "cuMemAlloc", Wrapper(CudaSymbol::k_cuMemAlloc_v2));
  EXPECT_FALSE(answer.refuse);
  EXPECT_EQ(answer.pfn, Wrapper(CudaSymbol::k_cuMemAlloc_v2));
}

TEST_F(ProcAddressTest, PassThroughHandsOutTheDriversFunction) {
  for (void* answer_in : {Real(CudaSymbol::k_cuMemAlloc_v2), Wrapper(CudaSymbol::k_cuMemAlloc_v2)}) {
    const ProcAddressAnswer answer = SubstituteProcAddress(map_, Mode::kPassThrough, "cuMemAlloc", answer_in);
    EXPECT_FALSE(answer.refuse);
    EXPECT_EQ(answer.pfn, Real(CudaSymbol::k_cuMemAlloc_v2));
  }
  // Unknown variants are not ours to judge when fgpu is disabled.
  const ProcAddressAnswer unknown = SubstituteProcAddress(map_, Mode::kPassThrough, "cuMemAlloc", &unknown_function);
  EXPECT_FALSE(unknown.refuse);
  EXPECT_EQ(unknown.pfn, &unknown_function);
}

TEST_F(ProcAddressTest, UnknownVariantOfAnEnforcedBaseIsRefused) {
  for (Mode mode : {Mode::kEnforcing, Mode::kFailed}) {
    for (const char* base : {"cuMemAlloc", "cuMemCreate", "cuMemGetInfo", "cuGetProcAddress", "cuCtxCreate"}) {
      const ProcAddressAnswer answer = SubstituteProcAddress(map_, mode, base, &unknown_function);
      EXPECT_TRUE(answer.refuse) << base;
      EXPECT_EQ(answer.pfn, nullptr);
    }
  }
}

TEST_F(ProcAddressTest, OtherAnswersAreUntouched) {
  for (const char* base : {"cuDeviceGet", "cuLaunchKernel", "cuStreamQuery", "someFutureApi"}) {
    const ProcAddressAnswer answer = SubstituteProcAddress(map_, Mode::kEnforcing, base, &unknown_function);
    EXPECT_FALSE(answer.refuse) << base;
    EXPECT_EQ(answer.pfn, &unknown_function);
  }
  const ProcAddressAnswer none = SubstituteProcAddress(map_, Mode::kEnforcing, "cuMemAlloc", nullptr);
  EXPECT_FALSE(none.refuse);
  EXPECT_EQ(none.pfn, nullptr);
}

}  // namespace
}  // namespace fgpu::hook
