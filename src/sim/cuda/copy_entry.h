// How every copy entry point begins (defined in api_memcpy.cc): init, context and the wait its
// kind of call owes, then the device the copy runs as.
#pragma once

#include "core/abi/cuda_types.h"

namespace fgpu::sim::cuda {

// Synchronous copies: waits for the legacy stream of the current context (per_thread: the calling
// thread's per-thread default stream).
CUresult EnterSyncCopy(bool per_thread, int* device);

// Asynchronous copies: resolves the stream (per_thread: 0 is the per-thread stream); a stream being
// captured is CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (graphs have no copy nodes yet).
CUresult EnterAsyncCopy(CUstream stream, bool per_thread, int* device);

}  // namespace fgpu::sim::cuda
