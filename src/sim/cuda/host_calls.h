// Runs host functions queued on streams (cuLaunchHostFunc, cuStreamAddCallback) on one
// executor thread, each no earlier than the simulated end of the work queued before it.
#pragma once

#include <cstdint>
#include <functional>

#include "sim/cuda/objects.h"

namespace fgpu::sim::cuda {

// Queues `call` to run at monotonic time `due_ns`; calls with equal times run in
// submission order. Increments stream.pending_host_calls until the call has run.
void ScheduleHostCall(Stream& stream, uint64_t due_ns, std::function<void()> call);

// Blocks until every host call queued on `stream` has run.
void WaitHostCalls(const Stream& stream);

}  // namespace fgpu::sim::cuda
