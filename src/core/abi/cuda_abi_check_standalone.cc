// Checks of fgpu's CUDA declarations that need no CUDA toolkit: the headers
// compile on their own under fgpu's warning flags, every symbol listed in
// cuda_symbols.inc is declared by cuda_api.h, the list is well formed (unique
// exports, at most one variant per base, version and stream flavour, names
// consistent with the per-thread flag), the CUresult and device attribute
// lists are one name per value, and struct layouts keep the sizes cuda.h 13.0
// has on LP64 (guarding edits made where the toolkit check cannot run).
#include <cstddef>
#include <cstdio>
#include <iterator>
#include <string_view>

#include "core/abi/cuda_api.h"

namespace {

struct Symbol {
  std::string_view base;
  std::string_view exported;
  int version;
  int per_thread;
};

// Taking the address requires a declaration in cuda_api.h, which is the point.
template <typename... Args>
constexpr bool IsDriverEntryPoint(CUresult (*)(Args...)) {
  return true;
}
#define FGPU_CUDA_SYMBOL(base, exported, version, per_thread) \
  static_assert(IsDriverEntryPoint(&exported), #exported);
#include "core/abi/cuda_symbols.inc"
#undef FGPU_CUDA_SYMBOL

constexpr Symbol kSymbols[] = {
#define FGPU_CUDA_SYMBOL(base, exported, version, per_thread) \
  {#base, #exported, version, per_thread},
#include "core/abi/cuda_symbols.inc"
#undef FGPU_CUDA_SYMBOL
};

constexpr bool NameMatchesFlags(const Symbol& s) {
  const bool per_thread_name = s.exported.ends_with("_ptsz") || s.exported.ends_with("_ptds");
  return s.exported.starts_with(s.base) && per_thread_name == (s.per_thread == 1) &&
         (s.per_thread == 0 || s.per_thread == 1) && s.version >= 2000 &&
         s.version <= FGPU_CUDA_ABI_VERSION && s.version % 10 == 0;
}

constexpr bool SymbolListWellFormed() {
  for (const Symbol& symbol : kSymbols) {
    if (!NameMatchesFlags(symbol)) return false;
  }
  return true;
}

// A repeated export, or two variants cuGetProcAddress could not choose between
// (same base, version and stream flavour), is a redefinition error here.
#define FGPU_CUDA_SYMBOL(base, exported, version, per_thread) \
  [[maybe_unused]] constexpr int kExport_##exported = 0;       \
  [[maybe_unused]] constexpr int kVariant_##base##_##version##_##per_thread = 0;
#include "core/abi/cuda_symbols.inc"
#undef FGPU_CUDA_SYMBOL

static_assert(SymbolListWellFormed(), "cuda_symbols.inc is malformed");

struct Named {
  std::string_view name;
  long long value;
};

#define FGPU_NAMED(name, value) {#name, value},
constexpr Named kResults[] = {FGPU_CUDA_RESULT_LIST(FGPU_NAMED)};
constexpr Named kAttributes[] = {FGPU_CUDA_DEVICE_ATTRIBUTE_LIST(FGPU_NAMED)};
#undef FGPU_NAMED

template <size_t N>
constexpr bool OneNamePerValue(const Named (&list)[N]) {
  for (size_t i = 0; i < N; ++i) {
    for (size_t j = i + 1; j < N; ++j) {
      if (list[i].name == list[j].name || list[i].value == list[j].value) return false;
    }
  }
  return true;
}
static_assert(OneNamePerValue(kResults), "FGPU_CUDA_RESULT_LIST repeats a name or value");
static_assert(OneNamePerValue(kAttributes), "FGPU_CUDA_DEVICE_ATTRIBUTE_LIST repeats a name or value");
static_assert(CUDA_SUCCESS == 0 && CUDA_ERROR_OUT_OF_MEMORY == 2 && CUDA_ERROR_UNKNOWN == 999);

constexpr bool AttributesBelowMax() {
  for (const Named& a : kAttributes) {
    if (a.value < 1 || a.value >= CU_DEVICE_ATTRIBUTE_MAX) return false;
  }
  return true;
}
static_assert(AttributesBelowMax());

// Sizes and offsets of cuda.h 13.0 on x86_64/aarch64 Linux (LP64).
static_assert(sizeof(CUdeviceptr) == 8 && sizeof(CUdeviceptr_v1) == 4);
static_assert(sizeof(CUuuid) == 16 && sizeof(CUipcMemHandle) == 64);
static_assert(sizeof(CUdevprop) == 56);
static_assert(sizeof(CUDA_ARRAY_DESCRIPTOR_v2) == 24 && sizeof(CUDA_ARRAY_DESCRIPTOR_v1) == 16);
static_assert(sizeof(CUDA_ARRAY3D_DESCRIPTOR_v2) == 40 && sizeof(CUDA_ARRAY3D_DESCRIPTOR_v1) == 24);
static_assert(sizeof(CUDA_MEMCPY2D_v2) == 128 && sizeof(CUDA_MEMCPY2D_v1) == 96);
static_assert(sizeof(CUDA_MEMCPY3D_v2) == 200 && sizeof(CUDA_MEMCPY3D_v1) == 144);
static_assert(sizeof(CUmemLocation) == 8 && sizeof(CUmemAccessDesc) == 12);
static_assert(sizeof(CUmemAllocationProp) == 32 && offsetof(CUmemAllocationProp, allocFlags) == 24);
static_assert(sizeof(CUmemPoolProps) == 88 && offsetof(CUmemPoolProps, maxSize) == 24);
static_assert(sizeof(CUmemPoolPtrExportData) == 64);
static_assert(sizeof(CUlaunchAttributeValue) == 64 && sizeof(CUlaunchAttribute) == 72);
static_assert(offsetof(CUlaunchAttribute, value) == 8);
static_assert(sizeof(CUlaunchConfig) == 56 && offsetof(CUlaunchConfig, hStream) == 32);
static_assert(sizeof(CUexecAffinityParam) == 8 && sizeof(CUctxCreateParams) == 24);
static_assert(sizeof(CUDA_KERNEL_NODE_PARAMS_v1) == 56 && sizeof(CUDA_KERNEL_NODE_PARAMS_v2) == 72);
static_assert(sizeof(CUDA_GRAPH_INSTANTIATE_PARAMS) == 32);
static_assert(sizeof(CUDA_MEM_ALLOC_NODE_PARAMS_v1) == 120);
static_assert(sizeof(CUDA_MEM_ALLOC_NODE_PARAMS_v2) == 120 && sizeof(CUDA_KERNEL_NODE_PARAMS_v3) == 72);
static_assert(sizeof(CUDA_CHILD_GRAPH_NODE_PARAMS) == 16 && sizeof(CUgraphEdgeData) == 8);
static_assert(sizeof(CUgraphNodeParams) == 256 && offsetof(CUgraphNodeParams, kernel) == 16 &&
              offsetof(CUgraphNodeParams, reserved2) == 248);

}  // namespace

int main() {
  std::printf("fgpu CUDA declarations: %zu entry points, %zu results, %zu device attributes\n",
              std::size(kSymbols), std::size(kResults), std::size(kAttributes));
  return 0;
}
