// How every copy entry point begins (defined in api_memcpy.cc): init, context and the wait its
// kind of call owes, then the device the copy runs as.
#pragma once

#include "core/abi/cuda_types.h"

namespace fgpu::sim::cuda {

// Synchronous copies: waits for the legacy stream of the current context (per_thread: the calling
// thread's per-thread default stream).
CUresult EnterSyncCopy(bool per_thread, int* device);

// Asynchronous copies that have no graph node (peer, batch, array mappings): resolves the stream
// (per_thread: 0 is the per-thread stream); a stream being captured is
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED.
CUresult EnterAsyncCopy(CUstream stream, bool per_thread, int* device);

struct Graph;
struct Context;

// Where a captured set or copy goes: the graph a stream is being captured into (null when it is
// not) and the stream's context, which the node's copy or set runs in.
struct CopyCapture {
  Graph* graph = nullptr;
  Context* ctx = nullptr;
};

// Asynchronous sets and copies that become memset / memcpy nodes under capture (api_graph.h's
// CaptureMemset / CaptureMemcpy): as EnterAsyncCopy, but a stream being captured fills *capture
// instead of failing, and the caller adds the node instead of touching memory.
CUresult EnterAsyncCopyOrCapture(CUstream stream, bool per_thread, int* device, CopyCapture* capture);

}  // namespace fgpu::sim::cuda
