// cuInit, versions, error names, and driver entry point lookup (cuGetProcAddress).
#include <cstring>
#include <string_view>

#include "core/abi/cuda_api.h"
#include "sim/cuda/runtime.h"

using fgpu::sim::cuda::kDriverVersion;
using fgpu::sim::cuda::Runtime;

namespace {

struct ErrorName {
  CUresult code;
  const char* name;
};

#define FGPU_CUDA_ERROR(name, value) {name, #name},
constexpr ErrorName kErrorNames[] = {FGPU_CUDA_RESULT_LIST(FGPU_CUDA_ERROR)};
#undef FGPU_CUDA_ERROR

const ErrorName* FindError(CUresult code) {
  for (const ErrorName& entry : kErrorNames) {
    if (entry.code == code) return &entry;
  }
  return nullptr;
}

// "CUDA_ERROR_OUT_OF_MEMORY" -> "out of memory", built once per code.
const char* DescribeError(const ErrorName& entry) {
  static char texts[sizeof(kErrorNames) / sizeof(kErrorNames[0])][96];
  static bool built = [] {
    for (size_t i = 0; i < sizeof(kErrorNames) / sizeof(kErrorNames[0]); ++i) {
      std::string_view name = kErrorNames[i].name;
      if (name == "CUDA_SUCCESS") {
        std::strcpy(texts[i], "no error");
        continue;
      }
      name.remove_prefix(sizeof("CUDA_ERROR_") - 1);
      size_t n = 0;
      for (char c : name) {
        if (n + 1 >= sizeof(texts[i])) break;
        texts[i][n++] = c == '_' ? ' ' : static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
      }
      texts[i][n] = '\0';
    }
    return true;
  }();
  (void)built;
  return texts[&entry - kErrorNames];
}

struct SymbolEntry {
  const char* base;
  const char* exported;
  int version;
  bool per_thread;
  void* address;
};

#define FGPU_CUDA_SYMBOL(base, exported, version, per_thread) \
  {#base, #exported, version, per_thread != 0, reinterpret_cast<void*>(&::exported)},
const SymbolEntry kSymbols[] = {
#include "core/abi/cuda_symbols.inc"
};
#undef FGPU_CUDA_SYMBOL

// The driver's rule: among the exported variants of `symbol` introduced at or before
// `cuda_version`, the newest; the per-thread (_ptsz/_ptds) variant when the caller asks
// for per-thread default-stream semantics and one exists.
CUresult LookUp(const char* symbol, void** pfn, int cuda_version, cuuint64_t flags,
                CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  constexpr cuuint64_t kKnownFlags = CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  if ((flags & ~kKnownFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
  *pfn = nullptr;
  if (cuda_version > kDriverVersion) {
    if (status != nullptr) *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    return CUDA_ERROR_INVALID_VALUE;
  }
  const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  const SymbolEntry* best_legacy = nullptr;
  const SymbolEntry* best_per_thread = nullptr;
  bool known = false;
  for (const SymbolEntry& entry : kSymbols) {
    if (std::strcmp(entry.base, symbol) != 0) continue;
    known = true;
    if (entry.version > cuda_version) continue;
    const SymbolEntry*& best = entry.per_thread ? best_per_thread : best_legacy;
    if (best == nullptr || entry.version > best->version) best = &entry;
  }
  const SymbolEntry* chosen = per_thread && best_per_thread != nullptr ? best_per_thread : best_legacy;
  if (chosen == nullptr) {
    if (status != nullptr) {
      *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    }
    return CUDA_SUCCESS;  // callers use a NULL pointer with success for feature detection
  }
  *pfn = chosen->address;
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned int Flags) { return Runtime::Get().Init(Flags); }

// No profiler attaches to the simulator: starting and stopping collection is a no-op, as on a
// real driver with no profiler running, once a context is current.
CUresult cuProfilerStart(void) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  fgpu::sim::cuda::Context* ctx = nullptr;
  return Runtime::Get().CurrentContext(&ctx);
}
CUresult cuProfilerStop(void) { return cuProfilerStart(); }

CUresult cuDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = kDriverVersion;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorName* entry = FindError(error);
  if (entry == nullptr) {
    *pStr = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pStr = entry->name;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorName* entry = FindError(error);
  if (entry == nullptr) {
    *pStr = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pStr = DescribeError(*entry);
  return CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  return LookUp(symbol, pfn, cudaVersion, flags, nullptr);
}

CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* symbolStatus) {
  return LookUp(symbol, pfn, cudaVersion, flags, symbolStatus);
}

}  // extern "C"
