#include "hook/interpose/symbol_map.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "hook/interpose/wrapper_table.h"

namespace fgpu::hook {

// The unit-test binary links the internal objects only (no exported wrapper), so it supplies
// the wrapper table: one distinct stand-in of the right type per hooked symbol.
namespace {
template <typename Fn, int kId>
struct StandIn;
template <typename R, typename... Args, int kId>
struct StandIn<R (*)(Args...), kId> {
  static R Call(Args...) { return R{}; }
};
}  // namespace

constinit const WrapperTable kWrapperTable = {
#define FGPU_HOOK(name) &StandIn<decltype(&::name), static_cast<int>(CudaSymbol::k_##name)>::Call,
#include "hook/interpose/hooked_symbols.inc"
#undef FGPU_HOOK
#define FGPU_HOOK_NVML(name) &StandIn<decltype(&::name), 1000 + static_cast<int>(NvmlSymbol::k_##name)>::Call,
#include "hook/interpose/hooked_nvml.inc"
#undef FGPU_HOOK_NVML
};

namespace {

TEST(SymbolMapTest, EveryHookedNameIsFoundAsItself) {
  for (size_t i = 0; i < kCudaSymbolCount; ++i) {
    const auto symbol = static_cast<CudaSymbol>(i);
    HookedSymbol found;
    ASSERT_TRUE(FindHookedName(CudaSymbolName(symbol), &found)) << CudaSymbolName(symbol);
    EXPECT_FALSE(found.nvml);
    EXPECT_EQ(found.index, i);
    EXPECT_NE(WrapperForName(CudaSymbolName(symbol)), nullptr);
    EXPECT_EQ(WrapperForName(CudaSymbolName(symbol)), CudaWrapperAddress(symbol));
  }
  for (size_t i = 0; i < kNvmlSymbolCount; ++i) {
    const auto symbol = static_cast<NvmlSymbol>(i);
    HookedSymbol found;
    ASSERT_TRUE(FindHookedName(NvmlSymbolName(symbol), &found)) << NvmlSymbolName(symbol);
    EXPECT_TRUE(found.nvml);
    EXPECT_EQ(found.index, i);
    EXPECT_EQ(WrapperForName(NvmlSymbolName(symbol)), NvmlWrapperAddress(symbol));
  }
}

TEST(SymbolMapTest, WrappersAreDistinct) {
  std::set<void*> seen;
  for (size_t i = 0; i < kCudaSymbolCount; ++i) seen.insert(CudaWrapperAddress(static_cast<CudaSymbol>(i)));
  for (size_t i = 0; i < kNvmlSymbolCount; ++i) seen.insert(NvmlWrapperAddress(static_cast<NvmlSymbol>(i)));
  seen.erase(nullptr);
  EXPECT_EQ(seen.size(), kCudaSymbolCount + kNvmlSymbolCount);
}

TEST(SymbolMapTest, OtherNamesAreNotHooked) {
  HookedSymbol found;
  for (const char* name : {"cuDeviceGet", "cuMemAlloc_v3", "cuMemAlloc_v", "cuMemAlloc_v22", "cuLaunchKernelExX",
                           "cublasCreate_v2", "nvmlInit_v2", "nvmlDeviceGetMemoryInfo_v3", "malloc", "", "c",
                           "zzzz", "cuInitX", "cuIni"}) {
    EXPECT_FALSE(FindHookedName(name, &found)) << name;
    EXPECT_EQ(WrapperForName(name), nullptr) << name;
  }
  EXPECT_FALSE(FindHookedName(nullptr, &found));
}

TEST(SymbolMapTest, BaseNamesComeFromTheAbiTable) {
  EXPECT_STREQ(CudaBaseName(CudaSymbol::k_cuMemAlloc_v2), "cuMemAlloc");
  EXPECT_STREQ(CudaBaseName(CudaSymbol::k_cuMemAlloc), "cuMemAlloc");
  EXPECT_STREQ(CudaBaseName(CudaSymbol::k_cuGetProcAddress_v2), "cuGetProcAddress");
  EXPECT_STREQ(CudaBaseName(CudaSymbol::k_cuLaunchKernel_ptsz), "cuLaunchKernel");
  EXPECT_STREQ(CudaBaseName(CudaSymbol::k_cuCtxCreate_v4), "cuCtxCreate");
}

TEST(SymbolMapTest, UnknownVariantsAreRefusedForEnforcedBasesOnly) {
  for (const char* base : {"cuMemAlloc", "cuMemFree", "cuMemCreate", "cuMemAllocAsync", "cuMemGetInfo",
                           "cuDeviceTotalMem", "cuCtxCreate", "cuArrayCreate", "cuInit", "cuGetProcAddress"}) {
    EXPECT_TRUE(RefusesUnknownVariant(base)) << base;
  }
  for (const char* base : {"cuLaunchKernel", "cuDeviceGet", "cuMemcpyHtoD", "cuMemAlloc_v2", "", "zzz"}) {
    EXPECT_FALSE(RefusesUnknownVariant(base)) << base;
  }
  EXPECT_FALSE(RefusesUnknownVariant(nullptr));
}

// A refused base must have every variant this build knows hooked: otherwise an ordinary
// request for an older (or per-thread) variant would be refused as "unknown".
TEST(SymbolMapTest, EveryKnownVariantOfARefusedBaseIsHooked) {
  struct Export {
    const char* base;
    const char* exported;
  };
  const Export exports[] = {
#define FGPU_CUDA_SYMBOL(base, exported, version, per_thread) {#base, #exported},
#include "core/abi/cuda_symbols.inc"
#undef FGPU_CUDA_SYMBOL
  };
  int checked = 0;
  for (const Export& entry : exports) {
    if (!RefusesUnknownVariant(entry.base)) continue;
    HookedSymbol found;
    EXPECT_TRUE(FindHookedName(entry.exported, &found)) << entry.exported << " (base " << entry.base << ")";
    ++checked;
  }
  EXPECT_GT(checked, 30);
}

// Distinct fake addresses standing for a driver's functions.
char fake_symbols[kCudaSymbolCount + kNvmlSymbolCount];

struct Tables {
  void* real_cuda[kCudaSymbolCount] = {};
  void* cuda_wrappers[kCudaSymbolCount] = {};
  void* real_nvml[kNvmlSymbolCount] = {};
  void* nvml_wrappers[kNvmlSymbolCount] = {};
  Tables() {
    for (size_t i = 0; i < kCudaSymbolCount; ++i) {
      real_cuda[i] = &fake_symbols[i];
      cuda_wrappers[i] = CudaWrapperAddress(static_cast<CudaSymbol>(i));
    }
    for (size_t i = 0; i < kNvmlSymbolCount; ++i) {
      real_nvml[i] = &fake_symbols[kCudaSymbolCount + i];
      nvml_wrappers[i] = NvmlWrapperAddress(static_cast<NvmlSymbol>(i));
    }
  }
};

TEST(AddressMapTest, RealAndWrapperAddressesBothFindTheirSymbol) {
  Tables tables;
  AddressMap map;
  map.Build(tables.real_cuda, tables.cuda_wrappers, tables.real_nvml, tables.nvml_wrappers);
  EXPECT_EQ(map.size(), 2 * (kCudaSymbolCount + kNvmlSymbolCount));
  for (size_t i = 0; i < kCudaSymbolCount; ++i) {
    for (const void* key : {tables.real_cuda[i], tables.cuda_wrappers[i]}) {
      const AddressMap::Entry* entry = map.Find(key);
      ASSERT_NE(entry, nullptr) << CudaSymbolName(static_cast<CudaSymbol>(i));
      EXPECT_FALSE(entry->symbol.nvml);
      EXPECT_EQ(entry->symbol.index, i);
      EXPECT_EQ(entry->real, tables.real_cuda[i]);
      EXPECT_EQ(entry->wrapper, tables.cuda_wrappers[i]);
    }
  }
  for (size_t i = 0; i < kNvmlSymbolCount; ++i) {
    const AddressMap::Entry* entry = map.Find(tables.real_nvml[i]);
    ASSERT_NE(entry, nullptr);
    EXPECT_TRUE(entry->symbol.nvml);
    EXPECT_EQ(entry->wrapper, tables.nvml_wrappers[i]);
  }
  EXPECT_EQ(map.Find(nullptr), nullptr);
  // An address just below the first real one (computed as an integer: pointer arithmetic
  // before an array's start is undefined).
  EXPECT_EQ(map.Find(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(&fake_symbols[0]) - 1)), nullptr);
  EXPECT_EQ(map.Find(reinterpret_cast<const char*>(tables.cuda_wrappers[0]) + 1), nullptr);
}

TEST(AddressMapTest, SymbolsTheDriverLacksAreSkipped) {
  Tables tables;
  tables.real_cuda[static_cast<size_t>(CudaSymbol::k_cuMemAllocAsync_ptsz)] = nullptr;
  tables.real_nvml[0] = nullptr;
  AddressMap map;
  map.Build(tables.real_cuda, tables.cuda_wrappers, tables.real_nvml, tables.nvml_wrappers);
  EXPECT_EQ(map.size(), 2 * (kCudaSymbolCount + kNvmlSymbolCount) - 2);
  // Our wrapper is still recognised; its real function is NULL.
  const AddressMap::Entry* entry =
      map.Find(tables.cuda_wrappers[static_cast<size_t>(CudaSymbol::k_cuMemAllocAsync_ptsz)]);
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->real, nullptr);
}

TEST(AddressMapTest, AliasedRealFunctionsResolveToTheFirstListedSymbol) {
  // A driver may implement two same-prototype variants with one function.
  Tables tables;
  tables.real_cuda[static_cast<size_t>(CudaSymbol::k_cuCtxDestroy_v2)] =
      tables.real_cuda[static_cast<size_t>(CudaSymbol::k_cuCtxDestroy)];
  AddressMap map;
  map.Build(tables.real_cuda, tables.cuda_wrappers, tables.real_nvml, tables.nvml_wrappers);
  const AddressMap::Entry* entry = map.Find(tables.real_cuda[static_cast<size_t>(CudaSymbol::k_cuCtxDestroy)]);
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->symbol.index, static_cast<size_t>(CudaSymbol::k_cuCtxDestroy));
}

}  // namespace
}  // namespace fgpu::hook
