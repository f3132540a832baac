// Streams held by stream memory operations (cuStreamWaitValue*, cuStreamWriteValue*,
// cuStreamBatchMemOp; api_memop.cc).
//
// A wait whose condition does not hold when its stream reaches it holds the stream: work queued
// after it (kernels, event records and waits, host functions, further memory operations) is kept,
// in order, and placed on the timeline only when the condition holds. A write not yet due (work
// before it still runs) holds the stream the same way until it is done. One watcher thread
// releases held streams: it wakes when a simulated write lands, when a write falls due, and
// otherwise polls the awaited words with a backoff (50 us to 2 ms) — the words are host memory
// that any thread or process may store to, which nothing can announce. No lock is held while it
// sleeps.
//
// Thread-safety: everything here is internally locked; the operations a held stream keeps run
// under that lock and must not call back into it.
#pragma once

#include <cstdint>
#include <functional>

#include "sim/cuda/objects.h"

namespace fgpu::sim::cuda {

// An event recorded on a held stream completes at a time not known yet: this, until then.
inline constexpr uint64_t kPendingEventNs = UINT64_MAX / 2;

// Runs `op` now, or, when `stream` is held, keeps it to run when the stream gets to it.
void RunOrHold(Stream& stream, const std::function<void()>& op);
// cuStreamWaitEvent: the stream waits for an event whose completion may not be known yet.
void WaitEventOnStream(Stream& stream, Event& event);
// Holds `stream` until `ready()` returns true, evaluated (under the gate's lock, so it must not
// call back into it) once the work before it has ended; it may consume what it waited for.
void HoldUntil(Stream& stream, std::function<bool()> ready);
// A simulated write landed that a held wait may be waiting for: look again now.
void NotifyGateWrite();
// Whether `stream` is held (cuStreamQuery: not ready).
bool StreamHeld(const Stream& stream);
// Blocks until `stream` is not held (synchronisation); every stream of `ctx` for WaitContextReleased.
void WaitStreamReleased(const Stream& stream);
void WaitContextReleased(const Context* ctx);
// Blocks until `event`'s time is known (cuEventSynchronize on an event recorded on a held stream).
void WaitEventKnown(const Event& event);

}  // namespace fgpu::sim::cuda
