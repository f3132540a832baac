// A stand-in libcuda.so.1 for counters_test.cc: a driver newer than this fgpu. Its
// cuGetProcAddress[_v2] answers every name with an entry point the hook does not know (as a
// future cuMemAlloc_v3 would be), which the hook must refuse for the bases it accounts memory
// on (fail closed) and count in the slice's ledger. Nothing else is exported: the hook's init
// needs only the library to load.
#include "core/abi/cuda_api.h"

namespace {

CUresult FutureVariant() { return CUDA_SUCCESS; }

// Not one getter calling the other: under LD_PRELOAD that call would reach the hook's export.
CUresult Answer(const char* symbol, void** pfn) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pfn = reinterpret_cast<void*>(&FutureVariant);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuGetProcAddress(const char* symbol, void** pfn, int /*cudaVersion*/, cuuint64_t /*flags*/) {
  return Answer(symbol, pfn);
}

CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int /*cudaVersion*/, cuuint64_t /*flags*/,
                             CUdriverProcAddressQueryResult* symbolStatus) {
  const CUresult rc = Answer(symbol, pfn);
  if (symbolStatus != nullptr) {
    *symbolStatus = rc == CUDA_SUCCESS ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  }
  return rc;
}

}  // extern "C"
