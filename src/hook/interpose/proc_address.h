// What our cuGetProcAddress[_v2] hands out, given what the real getter answered.
//
// Contract (reference/cuda.md §1.3): the real getter is always called first with the caller's
// symbol, cudaVersion and flags, and its return code and status are kept. Only a non-NULL
// answer is looked at, by address, never by re-deriving NVIDIA's version rules:
// - an address in the map (a hooked variant) becomes our wrapper of that same variant, so the
//   driver's version and _ptsz/_ptds choice is inherited; in pass-through it becomes the
//   driver's own function (a driver that resolves its exports through the global scope, like
//   the simulated one, would otherwise hand out our wrapper);
// - an unknown address for a base we hook for memory accounting or init (RefusesUnknownVariant:
//   a variant newer than this build) is refused: CUDA_ERROR_NOT_SUPPORTED, NULL, and one line
//   on stderr. Handing it out would let the workload allocate outside its slice (fail closed);
// - any other address is the driver's answer, untouched.
#pragma once

#include "hook/interpose/real_driver.h"
#include "hook/interpose/symbol_map.h"

namespace fgpu::hook {

struct ProcAddressAnswer {
  bool refuse = false;   // return CUDA_ERROR_NOT_SUPPORTED with *pfn = NULL
  void* pfn = nullptr;   // what to store in *pfn otherwise
};

ProcAddressAnswer SubstituteProcAddress(const AddressMap& map, Mode mode, const char* symbol, void* real_answer);

}  // namespace fgpu::hook
