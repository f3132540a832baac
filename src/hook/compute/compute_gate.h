// ComputeGate: compute shares and priority inside the workload (docs/compute.md). Every launch
// wrapper (cuLaunchKernel[_ptsz], cuLaunchKernelEx[_ptsz], cuLaunchCooperativeKernel[_ptsz], the
// legacy cuLaunch, cuLaunchGrid[Async] and cuLaunchCooperativeKernelMultiDevice, cuGraphLaunch[_ptsz])
// goes through GatedLaunch when ComputeGateArmed() says so.
//
// Contract
// - ComputeGateArmed(): one relaxed load and one compare; false while no device of the slice
//   has compute settings (share 100, mode share, tier standard) and the limits file has not
//   changed since that was decided. Then the wrappers are the plain forwarders they were.
// - GatedLaunch(stream, kind, launch): waits (sleeping) until the slice may launch on the
//   current context's GPU, calls `launch` (the real call) once, and books the launch into the
//   calling thread's open batch; closes the batch with a completion marker (a real event,
//   CU_EVENT_BLOCKING_SYNC, recorded on the launch's stream) when the limiter says so, and
//   records a start marker before a batch's first launch, so the batch is charged no more than
//   its device-timed span (not the delay before its completion was observed). A launch error is returned untouched and books nothing. Under budget with
//   the GPU to itself: no lock, no syscall, no allocation (an event record every ~200 µs).
// - One completion thread per GPU and process (created on the first gated launch there)
//   synchronises markers in order and feeds the measured time to the limiter.
// - CloseOpenBatch(): the stream and context sync wrappers call it first, so a program that
//   synchronises after each launch has each batch measured when it completes, not at its next
//   launch. Event syncs do not: a loop that keeps N launches in flight and waits for the oldest
//   would otherwise make every launch a batch of its own.
// - Devices outside the slice, a board that cannot be opened or joined (reported once on
//   stderr, and counted once per process and GPU in the ledger's compute_unenforced) and
//   contexts the hook cannot place are not gated: compute shares fail open, memory caps never do.
#pragma once

#include "compute/limiter.h"
#include "core/abi/cuda_types.h"
#include "hook/interpose/function_ref.h"

namespace fgpu::hook {

struct GpuGate;

// One launch through the gate, in two halves around the real call, so the hottest wrappers call
// the driver with their own arguments (no thunk re-loading eleven of them). `gate` null: the
// launch is not gated (nothing to book afterwards).
struct LaunchTicket {
  GpuGate* gate = nullptr;
  CUcontext context = nullptr;
  int64_t now_ns = 0;
  bool timed = false;
};

bool ComputeGateArmed();
// `per_thread_stream`: the launch came through a _ptsz variant (stream 0 = per-thread stream).
// Waits until the slice may launch; returns what AfterLaunch needs.
LaunchTicket BeforeLaunch(CUstream stream, bool per_thread_stream, compute::LaunchKind kind);
// Books a launch BeforeLaunch admitted (nothing when `rc` is an error or the ticket has no gate).
void AfterLaunch(const LaunchTicket& ticket, CUstream stream, bool per_thread_stream, compute::LaunchKind kind,
                 CUresult rc);
// BeforeLaunch, `launch` (the real call) once, AfterLaunch.
CUresult GatedLaunch(CUstream stream, bool per_thread_stream, compute::LaunchKind kind,
                     FunctionRef<CUresult()> launch);
void CloseOpenBatch();

// Before a context is destroyed (`context`) or a device's primary context released or reset
// (`device` >= 0): the markers pending there are waited for (at most about a second: they follow
// work the program queued) and this hook's events in it destroyed, so no marker outlives its
// context. Costs nothing when compute shares are not armed.
void ComputeContextClosing(CUcontext context, CUdevice device);

}  // namespace fgpu::hook
