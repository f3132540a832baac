// cuInit and the entry-point getters: where a process first meets the hook.
//
// cuInit fails closed when the slice cannot be used (Mode::kFailed): it returns
// CUDA_ERROR_NOT_INITIALIZED — the driver's "initialization has failed", which frameworks
// report as an error instead of quietly treating the machine as GPU-less (CUDA_ERROR_NO_DEVICE
// makes some fall back to the CPU) — and prints the reason once. The getters never fail on
// that account: they hand out our wrappers so that every later call meets the same refusal.
#include "hook/interpose/exports.h"
#include "hook/interpose/log.h"
#include "hook/interpose/proc_address.h"
#include "hook/interpose/real_driver.h"
#include "hook/interpose/real_driver_internal.h"
#include "slice/slice.h"

using fgpu::hook::CudaSymbol;
using fgpu::hook::HookState;
using fgpu::hook::Mode;
using fgpu::hook::RealCuda;
using fgpu::hook::State;

namespace {

// Applies SubstituteProcAddress to a successful answer; returns the code for the caller.
CUresult Substitute(const char* symbol, void** pfn, CUresult rc, CUdriverProcAddressQueryResult* status) {
  if (rc != CUDA_SUCCESS || pfn == nullptr || *pfn == nullptr) return rc;
  const fgpu::hook::ProcAddressAnswer answer =
      fgpu::hook::SubstituteProcAddress(fgpu::hook::HookAddresses(), HookState().mode, symbol, *pfn);
  if (!answer.refuse) {
    *pfn = answer.pfn;
    return rc;
  }
  *pfn = nullptr;
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (fgpu::slice::Ledger* ledger = HookState().ledger) ledger->CountFailClosedRefusal();
  fgpu::hook::LogProblem(
      "cuGetProcAddress(\"%s\") returned a variant this fgpu does not know; refused "
      "(CUDA_ERROR_NOT_SUPPORTED) so that no allocation escapes the slice",
      symbol);
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned int Flags) {
  const State& state = HookState();
  if (state.mode == Mode::kFailed) {
    fgpu::hook::ReportInitFailureOnce();
    return state.init_error;
  }
  const auto real = RealCuda<decltype(&::cuInit)>(CudaSymbol::k_cuInit);
  if (real == nullptr) return CUDA_ERROR_NO_DEVICE;  // pass-through without a loadable driver
  return real(Flags);
}

CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  const auto real = RealCuda<decltype(&::cuGetProcAddress)>(CudaSymbol::k_cuGetProcAddress);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return Substitute(symbol, pfn, real(symbol, pfn, cudaVersion, flags), nullptr);
}

CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* symbolStatus) {
  const auto real = RealCuda<decltype(&::cuGetProcAddress_v2)>(CudaSymbol::k_cuGetProcAddress_v2);
  if (real == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return Substitute(symbol, pfn, real(symbol, pfn, cudaVersion, flags, symbolStatus), symbolStatus);
}

}  // extern "C"
