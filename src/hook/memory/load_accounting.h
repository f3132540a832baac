// LoadAccounting: the device memory that loading code and raising a context's limits take —
// modules (cuModuleLoad*), libraries (cuLibraryLoad*), the stack, malloc heap and printf FIFO
// of cuCtxSetLimit — measured as a context's overhead is (ContextMeter), since no call says
// how much the driver placed on the device.
//
// Contract (docs/hook-memory.md "Modules, libraries and limits")
// - Load: on the current context's device, a sample before, the driver's load, a sample after;
//   what the process took is reserved on the slice (rounded to the granularity) and recorded
//   under the module or library handle, owned by the context (modules) or the process
//   (libraries: context-independent). Over the cap: the load is undone and
//   CUDA_ERROR_OUT_OF_MEMORY returned. Nothing measurable taken (or no measurement possible):
//   nothing is charged and the handle is not recorded.
// - Unload: the record is claimed, the driver unloads, the charge is credited on success (or
//   restored on failure). A context's destruction credits its modules with its other memory.
// - SetLimit: measured the same way; growth is reserved (over the cap: the old value is set
//   back and CUDA_ERROR_OUT_OF_MEMORY returned), memory the driver gives back is credited, up to
//   what that (context, limit) pair was charged.
// - Place (lazy loading): a library's code and variables are placed in a context at first use
//   (cuLibraryGetGlobal/Managed/Module/Kernel, cuKernelGetFunction, ...), not at its load. Such
//   a call is measured the same way, successful or not, and the growth added to the library's
//   record. The placement cannot be undone short of unloading the library: over the cap the
//   charge is forced (the ledger keeps equal to the device), the call returns
//   CUDA_ERROR_OUT_OF_MEMORY, and every later placing call on that library is refused the same
//   way, unforwarded, until cuLibraryUnload credits the whole record.
// - One measured operation per device at a time, contexts included (ContextAccounting's device
//   mutex): samples never interleave. These are slow paths; nothing here is on an allocation or launch path.
#pragma once

#include <pthread.h>

#include <cstdint>

#include "core/abi/cuda_types.h"
#include "hook/interpose/function_ref.h"
#include "hook/memory/accounting.h"
#include "hook/memory/context_accounting.h"
#include "hook/memory/context_meter.h"

namespace fgpu::hook {

class LoadAccounting {
 public:
  LoadAccounting(MemoryAccounting* memory, ContextMeter* meter, ContextAccounting* contexts);
  LoadAccounting(const LoadAccounting&) = delete;
  LoadAccounting& operator=(const LoadAccounting&) = delete;

  // load(uint64_t* handle) calls the driver; unload(handle) undoes a load whose charge is refused.
  CUresult Load(PointerKind kind, FunctionRef<CUresult(uint64_t*)> load, FunctionRef<void(uint64_t)> unload);
  // place() is a driver call that may place `library`'s code or variables in the current context.
  CUresult Place(uint64_t library, FunctionRef<CUresult()> place);
  // unload() calls the driver for `handle`.
  CUresult Unload(PointerKind kind, uint64_t handle, FunctionRef<CUresult()> unload);
  // set(value) is the real cuCtxSetLimit(limit, value); get(*value) the real cuCtxGetLimit.
  CUresult SetLimit(CUlimit limit, size_t value, FunctionRef<CUresult(size_t)> set,
                    FunctionRef<CUresult(size_t*)> get);

 private:
  // Charges `taken` more bytes to (context, limit)'s record; false: refused over the cap.
  bool GrowLimit(const Attribution& at, uint64_t key, uint64_t taken);
  void ShrinkLimit(uint64_t key, uint64_t given_back);
  // Adds what a placement took to the library's record; CUDA_ERROR_OUT_OF_MEMORY past the cap.
  CUresult ChargePlacement(const Attribution& at, uint64_t library, uint64_t taken);

  MemoryAccounting* memory_;
  ContextMeter* meter_;
  ContextAccounting* contexts_;  // its device mutexes
};

// The key of a (context, limit) pair among kContextLimit records.
uint64_t ContextLimitKey(CUcontext ctx, CUlimit limit);

}  // namespace fgpu::hook
