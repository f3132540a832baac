// Stream capture state and stream attributes: capture into an existing graph
// (cuStreamBeginCaptureToGraph), capture info (status, id, graph, dependencies and their edge
// data), updating the capture dependencies, the thread's capture mode, stream attributes
// (access policy window, synchronisation policy, priority, memory sync domain and map: stored,
// read back, copied) and cuStreamGetCtx_v2.
//
// A captured node depends on the capture's current dependencies and then replaces them (a
// chain), as in the driver; cuStreamUpdateCaptureDependencies adds to or replaces that set. Only
// single-stream capture is simulated: cross-stream capture through events is not.
#include <algorithm>
#include <atomic>
#include <mutex>

#include "core/abi/cuda_api.h"
#include "sim/cuda/graph_internal.h"
#include "sim/cuda/runtime.h"

namespace fgpu::sim::cuda {

CUresult StartCapture(Stream& stream, Graph& graph, CUstreamCaptureMode mode, bool owns_graph) {
  if (&stream == stream.ctx->legacy_stream.get()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
  static std::atomic<unsigned long long> next_capture_id{1};
  {
    std::lock_guard lock(graph.mu);
    if (graph.capturing) return CUDA_ERROR_ILLEGAL_STATE;  // another stream captures into it
    graph.capturing = true;
  }
  Graph* expected = nullptr;
  if (!stream.capture.compare_exchange_strong(expected, &graph)) {
    std::lock_guard lock(graph.mu);
    graph.capturing = false;
    return CUDA_ERROR_ILLEGAL_STATE;
  }
  stream.capture_mode = mode;
  stream.capture_id = next_capture_id.fetch_add(1);
  stream.capture_owns_graph = owns_graph;
  return CUDA_SUCCESS;
}

Graph* StopCapture(Stream& stream) {
  Graph* graph = stream.capture.exchange(nullptr);
  if (graph != nullptr) {
    std::lock_guard lock(graph->mu);
    graph->capturing = false;
    graph->capture_deps.clear();
    graph->capture_edges.clear();
  }
  return graph;
}

}  // namespace fgpu::sim::cuda

namespace {

using fgpu::sim::cuda::Graph;
using fgpu::sim::cuda::GraphNode;
using fgpu::sim::cuda::NodeDeps;
using fgpu::sim::cuda::Runtime;
using fgpu::sim::cuda::Stream;

constexpr int kLowestStreamPriority = 0;
constexpr int kHighestStreamPriority = -5;

thread_local CUstreamCaptureMode t_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

CUresult ResolveCaptured(CUstream handle, bool per_thread, Stream** out) {
  if (CUresult rc = fgpu::sim::cuda::Ready(); rc != CUDA_SUCCESS) return rc;
  return Runtime::Get().ResolveStream(handle, per_thread, out);
}

CUresult BeginToGraph(CUstream handle, CUgraph graph_handle, const CUgraphNode* deps, const CUgraphEdgeData* edges,
                      size_t count, CUstreamCaptureMode mode, bool per_thread) {
  Stream* stream = nullptr;
  if (CUresult rc = ResolveCaptured(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  Graph* graph = nullptr;
  if (CUresult rc = fgpu::sim::cuda::LookupGraph(graph_handle, &graph); rc != CUDA_SUCCESS) return rc;
  if (graph->parent != nullptr) return CUDA_ERROR_INVALID_VALUE;  // embedded in another graph
  const NodeDeps start{deps, edges, count};
  if (CUresult rc = fgpu::sim::cuda::CheckNodeDeps(*graph, start); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = fgpu::sim::cuda::StartCapture(*stream, *graph, mode, /*owns_graph=*/false); rc != CUDA_SUCCESS) {
    return rc;
  }
  std::lock_guard lock(graph->mu);
  for (size_t i = 0; i < count; ++i) {
    graph->capture_deps.push_back(reinterpret_cast<GraphNode*>(deps[i]));
    graph->capture_edges.push_back(edges != nullptr ? edges[i] : CUgraphEdgeData{});
  }
  return CUDA_SUCCESS;
}

// Capture info. The dependency and edge arrays are the capture's own, valid until the stream is
// used again or the capture ends. Without an edge-data output every edge must be a default one.
CUresult CaptureInfo(CUstream handle, bool per_thread, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph_out,
                     const CUgraphNode** deps_out, const CUgraphEdgeData** edges_out, size_t* count_out,
                     bool edges_known) {
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = nullptr;
  if (CUresult rc = ResolveCaptured(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  Graph* graph = stream->capture.load();
  if (graph == nullptr) {
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
  }
  *status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  if (id != nullptr) *id = stream->capture_id;
  if (graph_out != nullptr) *graph_out = reinterpret_cast<CUgraph>(graph);
  std::lock_guard lock(graph->mu);
  if (!edges_known && deps_out != nullptr) {
    for (const CUgraphEdgeData& edge : graph->capture_edges) {
      if (edge.from_port != 0 || edge.to_port != 0 || edge.type != 0) return CUDA_ERROR_LOSSY_QUERY;
    }
  }
  const bool none = graph->capture_deps.empty();
  if (deps_out != nullptr) *deps_out = none ? nullptr : reinterpret_cast<const CUgraphNode*>(graph->capture_deps.data());
  if (edges_out != nullptr) *edges_out = none ? nullptr : graph->capture_edges.data();
  if (count_out != nullptr) *count_out = graph->capture_deps.size();
  return CUDA_SUCCESS;
}

CUresult UpdateCaptureDeps(CUstream handle, CUgraphNode* deps, const CUgraphEdgeData* edges, size_t count,
                           unsigned flags, bool per_thread) {
  Stream* stream = nullptr;
  if (CUresult rc = ResolveCaptured(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  if (flags > CU_STREAM_SET_CAPTURE_DEPENDENCIES) return CUDA_ERROR_INVALID_VALUE;
  Graph* graph = stream->capture.load();
  if (graph == nullptr) return CUDA_ERROR_ILLEGAL_STATE;  // not capturing
  if (CUresult rc = fgpu::sim::cuda::CheckNodeDeps(*graph, NodeDeps{deps, edges, count}); rc != CUDA_SUCCESS) {
    return rc;
  }
  std::lock_guard lock(graph->mu);
  if (flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES) {
    graph->capture_deps.clear();
    graph->capture_edges.clear();
  }
  for (size_t i = 0; i < count; ++i) {
    auto* node = reinterpret_cast<GraphNode*>(deps[i]);
    if (std::find(graph->capture_deps.begin(), graph->capture_deps.end(), node) != graph->capture_deps.end()) continue;
    graph->capture_deps.push_back(node);
    graph->capture_edges.push_back(edges != nullptr ? edges[i] : CUgraphEdgeData{});
  }
  return CUDA_SUCCESS;
}

// The attributes a stream has; the others are kernel launch attributes only.
bool IsStreamAttribute(CUstreamAttrID attr) {
  switch (attr) {
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      return true;
    default:
      return false;
  }
}

CUresult GetStreamAttribute(CUstream handle, CUstreamAttrID attr, CUstreamAttrValue* out, bool per_thread) {
  Stream* stream = nullptr;
  if (CUresult rc = ResolveCaptured(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr || !IsStreamAttribute(attr)) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(stream->attributes_mu);
  fgpu::sim::cuda::LaunchAttributes current = stream->attributes;
  current.priority = stream->priority;  // the stream's priority is the attribute
  return fgpu::sim::cuda::ReadLaunchAttribute(current, attr, out);
}

CUresult SetStreamAttribute(CUstream handle, CUstreamAttrID attr, const CUstreamAttrValue* value, bool per_thread) {
  Stream* stream = nullptr;
  if (CUresult rc = ResolveCaptured(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  if (value == nullptr || !IsStreamAttribute(attr)) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(stream->attributes_mu);
  if (attr == CU_LAUNCH_ATTRIBUTE_PRIORITY) {
    stream->priority = std::clamp(value->priority, kHighestStreamPriority, kLowestStreamPriority);  // as at creation
    return CUDA_SUCCESS;
  }
  return fgpu::sim::cuda::WriteLaunchAttribute(stream->attributes, attr, *value);
}

CUresult CopyStreamAttributes(CUstream dst_handle, CUstream src_handle, bool per_thread) {
  Stream* dst = nullptr;
  Stream* src = nullptr;
  if (CUresult rc = ResolveCaptured(dst_handle, per_thread, &dst); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = ResolveCaptured(src_handle, per_thread, &src); rc != CUDA_SUCCESS) return rc;
  if (dst == src) return CUDA_SUCCESS;
  fgpu::sim::cuda::LaunchAttributes copy;
  int priority = 0;
  {
    std::lock_guard lock(src->attributes_mu);
    copy = src->attributes;
    priority = src->priority;
  }
  std::lock_guard lock(dst->attributes_mu);
  dst->attributes = copy;
  dst->priority = priority;
  return CUDA_SUCCESS;
}

CUresult GetCtxV2(CUstream handle, CUcontext* ctx, CUgreenCtx* green, bool per_thread) {
  Stream* stream = nullptr;
  if (CUresult rc = ResolveCaptured(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  if (ctx == nullptr && green == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUgreenCtx owner = nullptr;
  // The green context, if the stream's context is one's (api_green.cc knows).
  const CUstream named = per_thread && handle == nullptr ? CU_STREAM_PER_THREAD : handle;
  if (CUresult rc = cuStreamGetGreenCtx(named, &owner); rc != CUDA_SUCCESS) return rc;
  if (ctx != nullptr) *ctx = reinterpret_cast<CUcontext>(stream->ctx);
  if (green != nullptr) *green = owner;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode* dependencies,
                                     const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                     CUstreamCaptureMode mode) {
  return BeginToGraph(hStream, hGraph, dependencies, dependencyData, numDependencies, mode, false);
}
CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph, const CUgraphNode* dependencies,
                                          const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                          CUstreamCaptureMode mode) {
  return BeginToGraph(hStream, hGraph, dependencies, dependencyData, numDependencies, mode, true);
}

CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus* captureStatus_out, cuuint64_t* id_out) {
  return CaptureInfo(hStream, false, captureStatus_out, id_out, nullptr, nullptr, nullptr, nullptr, false);
}
CUresult cuStreamGetCaptureInfo_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out, cuuint64_t* id_out) {
  return CaptureInfo(hStream, true, captureStatus_out, id_out, nullptr, nullptr, nullptr, nullptr, false);
}
CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus* captureStatus_out, cuuint64_t* id_out,
                                   CUgraph* graph_out, const CUgraphNode** dependencies_out,
                                   size_t* numDependencies_out) {
  return CaptureInfo(hStream, false, captureStatus_out, id_out, graph_out, dependencies_out, nullptr,
                     numDependencies_out, false);
}
CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                        cuuint64_t* id_out, CUgraph* graph_out,
                                        const CUgraphNode** dependencies_out, size_t* numDependencies_out) {
  return CaptureInfo(hStream, true, captureStatus_out, id_out, graph_out, dependencies_out, nullptr,
                     numDependencies_out, false);
}
CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus* captureStatus_out, cuuint64_t* id_out,
                                   CUgraph* graph_out, const CUgraphNode** dependencies_out,
                                   const CUgraphEdgeData** edgeData_out, size_t* numDependencies_out) {
  return CaptureInfo(hStream, false, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                     numDependencies_out, edgeData_out != nullptr);
}
CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                        cuuint64_t* id_out, CUgraph* graph_out,
                                        const CUgraphNode** dependencies_out, const CUgraphEdgeData** edgeData_out,
                                        size_t* numDependencies_out) {
  return CaptureInfo(hStream, true, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                     numDependencies_out, edgeData_out != nullptr);
}

CUresult cuStreamUpdateCaptureDependencies(CUstream hStream, CUgraphNode* dependencies, size_t numDependencies,
                                           unsigned int flags) {
  return UpdateCaptureDeps(hStream, dependencies, nullptr, numDependencies, flags, false);
}
CUresult cuStreamUpdateCaptureDependencies_ptsz(CUstream hStream, CUgraphNode* dependencies,
                                                size_t numDependencies, unsigned int flags) {
  return UpdateCaptureDeps(hStream, dependencies, nullptr, numDependencies, flags, true);
}
CUresult cuStreamUpdateCaptureDependencies_v2(CUstream hStream, CUgraphNode* dependencies,
                                              const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                              unsigned int flags) {
  return UpdateCaptureDeps(hStream, dependencies, dependencyData, numDependencies, flags, false);
}
CUresult cuStreamUpdateCaptureDependencies_v2_ptsz(CUstream hStream, CUgraphNode* dependencies,
                                                   const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                                   unsigned int flags) {
  return UpdateCaptureDeps(hStream, dependencies, dependencyData, numDependencies, flags, true);
}

// The calling thread's capture interaction mode, exchanged. The simulator keeps it but refuses no
// call for it: every call it refuses during capture, it refuses in all modes.
CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  if (CUresult rc = fgpu::sim::cuda::Ready(); rc != CUDA_SUCCESS) return rc;
  if (mode == nullptr || *mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
  std::swap(*mode, t_capture_mode);
  return CUDA_SUCCESS;
}

CUresult cuStreamGetAttribute(CUstream hStream, CUstreamAttrID attr, CUstreamAttrValue* value_out) {
  return GetStreamAttribute(hStream, attr, value_out, false);
}
CUresult cuStreamGetAttribute_ptsz(CUstream hStream, CUstreamAttrID attr, CUstreamAttrValue* value_out) {
  return GetStreamAttribute(hStream, attr, value_out, true);
}
CUresult cuStreamSetAttribute(CUstream hStream, CUstreamAttrID attr, const CUstreamAttrValue* value) {
  return SetStreamAttribute(hStream, attr, value, false);
}
CUresult cuStreamSetAttribute_ptsz(CUstream hStream, CUstreamAttrID attr, const CUstreamAttrValue* value) {
  return SetStreamAttribute(hStream, attr, value, true);
}
CUresult cuStreamCopyAttributes(CUstream dst, CUstream src) { return CopyStreamAttributes(dst, src, false); }
CUresult cuStreamCopyAttributes_ptsz(CUstream dst, CUstream src) { return CopyStreamAttributes(dst, src, true); }

CUresult cuStreamGetCtx_v2(CUstream hStream, CUcontext* pCtx, CUgreenCtx* pGreenCtx) {
  return GetCtxV2(hStream, pCtx, pGreenCtx, false);
}
CUresult cuStreamGetCtx_v2_ptsz(CUstream hStream, CUcontext* pCtx, CUgreenCtx* pGreenCtx) {
  return GetCtxV2(hStream, pCtx, pGreenCtx, true);
}

}  // extern "C"
