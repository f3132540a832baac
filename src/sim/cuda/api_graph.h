// What stream capture of the stream-ordered allocator adds to a graph (api_graph.cc), for
// api_pool.cc: during capture cuMemAllocAsync / cuMemAllocFromPoolAsync become allocation
// nodes and cuMemFreeAsync a free node, as in the driver. Nothing is allocated at capture: the
// memory is taken when an executable graph of the captured graph is first launched or uploaded.
#pragma once

#include <cstdint>

#include "core/abi/cuda_types.h"
#include "sim/cuda/objects.h"

namespace fgpu::sim::cuda {

// Adds an allocation node of `bytes` with the pool's properties to `graph` (the capture graph);
// *dptr is the address it will have. The error cuGraphAddMemAllocNode would return otherwise.
CUresult CaptureMemAlloc(Graph& graph, const CUmemPoolProps& pool_props, uint64_t bytes, CUdeviceptr* dptr);

// Adds a free node of `dptr`, which must be an allocation of `graph` not freed in it yet
// (CUDA_ERROR_INVALID_VALUE otherwise).
CUresult CaptureMemFree(Graph& graph, CUdeviceptr dptr);

// For api_memcpy.cc's asynchronous sets and copies on a captured stream (api_graph_nodes.cc): a
// captured set / copy as a memset / memcpy node after the capture's dependencies, validated as
// cuGraphAddMemsetNode / cuGraphAddMemcpyNode validate for the stream's context. Nothing is set
// or copied at capture.
CUresult CaptureMemset(Graph& graph, const CUDA_MEMSET_NODE_PARAMS& params, Context& ctx);
CUresult CaptureMemcpy(Graph& graph, const CUDA_MEMCPY3D& params, Context& ctx);

}  // namespace fgpu::sim::cuda
