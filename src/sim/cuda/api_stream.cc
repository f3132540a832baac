// Streams, host callbacks and stream capture (its state: api_stream_capture.cc).
#include <algorithm>
#include <memory>

#include "core/abi/cuda_api.h"
#include "sim/cuda/graph_internal.h"
#include "sim/cuda/host_calls.h"
#include "sim/cuda/runtime.h"
#include "sim/cuda/stream_gate.h"

using fgpu::sim::cuda::Context;
using fgpu::sim::cuda::Graph;
using fgpu::sim::cuda::HandleRegistry;
using fgpu::sim::cuda::Kind;
using fgpu::sim::cuda::Runtime;
using fgpu::sim::cuda::Stream;

namespace {

constexpr int kLeastPriority = 0;
constexpr int kGreatestPriority = -5;

CUresult Resolve(CUstream handle, bool per_thread, Stream** out) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  return Runtime::Get().ResolveStream(handle, per_thread, out);
}

CUresult Create(CUstream* out, unsigned flags, int priority) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr || (flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING)) != 0) return CUDA_ERROR_INVALID_VALUE;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  auto stream = std::make_unique<Stream>();
  stream->ctx = ctx;
  stream->flags = flags;
  stream->priority = std::clamp(priority, kGreatestPriority, kLeastPriority);  // the driver clamps
  HandleRegistry::Get().Insert(stream.get(), Kind::kStream);
  *out = reinterpret_cast<CUstream>(stream.release());
  return CUDA_SUCCESS;
}

CUresult Synchronize(CUstream handle, bool per_thread) {
  Stream* stream = nullptr;
  if (CUresult rc = Resolve(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  if (stream->capture.load() != nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  fgpu::sim::cuda::WaitStreamReleased(*stream);
  Runtime::SleepUntil(Runtime::Get().ReadyTime(*stream));
  fgpu::sim::cuda::WaitHostCalls(*stream);
  fgpu::sim::cuda::TrimPoolsAfterSync(stream->ctx->device);
  return CUDA_SUCCESS;
}

CUresult Query(CUstream handle, bool per_thread) {
  Stream* stream = nullptr;
  if (CUresult rc = Resolve(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  if (stream->capture.load() != nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  const bool done = !fgpu::sim::cuda::StreamHeld(*stream) &&
                    fgpu::sim::SharedDevices::NowNs() >= Runtime::Get().ReadyTime(*stream) &&
                    stream->pending_host_calls.load() == 0;
  return done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult WaitEvent(CUstream handle, CUevent event, unsigned flags, bool per_thread) {
  Stream* stream = nullptr;
  if (CUresult rc = Resolve(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  auto* ev = HandleRegistry::Get().Lookup<fgpu::sim::cuda::Event>(event, Kind::kEvent);
  if (ev == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (flags > 1) return CUDA_ERROR_INVALID_VALUE;  // CU_EVENT_WAIT_DEFAULT / CU_EVENT_WAIT_EXTERNAL
  constexpr unsigned kEventWaitExternal = 0x1;
  if (Graph* graph = stream->capture.load(); graph != nullptr && flags == kEventWaitExternal) {
    // During capture an external wait becomes an event wait node, as in the driver.
    auto node = std::make_unique<fgpu::sim::cuda::GraphNode>();
    node->type = fgpu::sim::cuda::GraphNode::Type::kEventWait;
    node->event = event;
    fgpu::sim::cuda::AppendCapturedNode(*graph, std::move(node));
    return CUDA_SUCCESS;
  }
  if (ev->recorded.load()) fgpu::sim::cuda::WaitEventOnStream(*stream, *ev);
  return CUDA_SUCCESS;
}

CUresult HostCall(CUstream handle, bool per_thread, std::function<void()> call) {
  Stream* stream = nullptr;
  if (CUresult rc = Resolve(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  if (stream->capture.load() != nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  fgpu::sim::cuda::RunOrHold(*stream, [stream, call = std::move(call)] {
    const uint64_t due = std::max(Runtime::Get().ReadyTime(*stream), fgpu::sim::SharedDevices::NowNs());
    fgpu::sim::cuda::ScheduleHostCall(*stream, due, call);
  });
  return CUDA_SUCCESS;
}

// During capture a host function becomes a host node of the capture graph (true: recorded).
bool CaptureHostFunc(CUstream handle, bool per_thread, CUhostFn fn, void* data) {
  Stream* stream = nullptr;
  if (Resolve(handle, per_thread, &stream) != CUDA_SUCCESS) return false;
  Graph* graph = stream->capture.load();
  if (graph == nullptr) return false;
  auto node = std::make_unique<fgpu::sim::cuda::GraphNode>();
  node->type = fgpu::sim::cuda::GraphNode::Type::kHost;
  node->host = CUDA_HOST_NODE_PARAMS{fn, data};
  fgpu::sim::cuda::AppendCapturedNode(*graph, std::move(node));
  return true;
}

CUresult BeginCapture(CUstream handle, CUstreamCaptureMode mode, bool per_thread) {
  Stream* stream = nullptr;
  if (CUresult rc = Resolve(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  auto graph = std::make_unique<Graph>();
  if (CUresult rc = fgpu::sim::cuda::StartCapture(*stream, *graph, mode, /*owns_graph=*/true); rc != CUDA_SUCCESS) {
    return rc;
  }
  HandleRegistry::Get().Insert(graph.release(), Kind::kGraph);
  return CUDA_SUCCESS;
}

CUresult EndCapture(CUstream handle, CUgraph* out, bool per_thread) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = nullptr;
  if (CUresult rc = Resolve(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  Graph* graph = fgpu::sim::cuda::StopCapture(*stream);
  if (graph == nullptr) return CUDA_ERROR_ILLEGAL_STATE;
  *out = reinterpret_cast<CUgraph>(graph);
  return CUDA_SUCCESS;
}

// The stream's process-unique id; the legacy and per-thread default streams have theirs.
CUresult GetId(CUstream handle, unsigned long long* id, bool per_thread) {
  if (id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = nullptr;
  if (CUresult rc = Resolve(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  *id = stream->id;
  return CUDA_SUCCESS;
}

CUresult GetDevice(CUstream handle, CUdevice* device, bool per_thread) {
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = nullptr;
  if (CUresult rc = Resolve(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  *device = stream->ctx->device;
  return CUDA_SUCCESS;
}

CUresult IsCapturing(CUstream handle, CUstreamCaptureStatus* status, bool per_thread) {
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = nullptr;
  if (CUresult rc = Resolve(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  *status = stream->capture.load() != nullptr ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags) { return Create(phStream, Flags, 0); }
CUresult cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
  return Create(phStream, flags, priority);
}

CUresult cuStreamDestroy_v2(CUstream hStream) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  Stream* stream = HandleRegistry::Get().Lookup<Stream>(hStream, Kind::kStream);
  if (stream == nullptr || stream->is_default) return CUDA_ERROR_INVALID_HANDLE;
  fgpu::sim::cuda::WaitHostCalls(*stream);  // host calls reference the stream
  HandleRegistry::Get().Erase(stream);
  const bool owned = stream->capture_owns_graph;
  if (Graph* graph = fgpu::sim::cuda::StopCapture(*stream); graph != nullptr && owned) {
    delete graph;  // a capture into the caller's graph (cuStreamBeginCaptureToGraph) leaves it to them
  }
  delete stream;
  return CUDA_SUCCESS;
}
CUresult cuStreamDestroy(CUstream hStream) { return cuStreamDestroy_v2(hStream); }

CUresult cuStreamSynchronize(CUstream hStream) { return Synchronize(hStream, false); }
CUresult cuStreamSynchronize_ptsz(CUstream hStream) { return Synchronize(hStream, true); }
CUresult cuStreamQuery(CUstream hStream) { return Query(hStream, false); }
CUresult cuStreamQuery_ptsz(CUstream hStream) { return Query(hStream, true); }
CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  return WaitEvent(hStream, hEvent, Flags, false);
}
CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  return WaitEvent(hStream, hEvent, Flags, true);
}

CUresult cuStreamGetPriority(CUstream hStream, int* priority) {
  if (priority == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = nullptr;
  if (CUresult rc = Resolve(hStream, false, &stream); rc != CUDA_SUCCESS) return rc;
  *priority = stream->priority;
  return CUDA_SUCCESS;
}
CUresult cuStreamGetPriority_ptsz(CUstream hStream, int* priority) {
  if (priority == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = nullptr;
  if (CUresult rc = Resolve(hStream, true, &stream); rc != CUDA_SUCCESS) return rc;
  *priority = stream->priority;
  return CUDA_SUCCESS;
}

CUresult cuStreamGetFlags(CUstream hStream, unsigned int* flags) {
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = nullptr;
  if (CUresult rc = Resolve(hStream, false, &stream); rc != CUDA_SUCCESS) return rc;
  *flags = stream->flags;
  return CUDA_SUCCESS;
}
CUresult cuStreamGetFlags_ptsz(CUstream hStream, unsigned int* flags) {
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = nullptr;
  if (CUresult rc = Resolve(hStream, true, &stream); rc != CUDA_SUCCESS) return rc;
  *flags = stream->flags;
  return CUDA_SUCCESS;
}

CUresult cuStreamGetCtx(CUstream hStream, CUcontext* pctx) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = nullptr;
  if (CUresult rc = Resolve(hStream, false, &stream); rc != CUDA_SUCCESS) return rc;
  *pctx = reinterpret_cast<CUcontext>(stream->ctx);
  return CUDA_SUCCESS;
}
CUresult cuStreamGetCtx_ptsz(CUstream hStream, CUcontext* pctx) {
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = nullptr;
  if (CUresult rc = Resolve(hStream, true, &stream); rc != CUDA_SUCCESS) return rc;
  *pctx = reinterpret_cast<CUcontext>(stream->ctx);
  return CUDA_SUCCESS;
}

CUresult cuStreamGetId(CUstream hStream, unsigned long long* streamId) { return GetId(hStream, streamId, false); }
CUresult cuStreamGetId_ptsz(CUstream hStream, unsigned long long* streamId) { return GetId(hStream, streamId, true); }
CUresult cuStreamGetDevice(CUstream hStream, CUdevice* device) { return GetDevice(hStream, device, false); }
CUresult cuStreamGetDevice_ptsz(CUstream hStream, CUdevice* device) { return GetDevice(hStream, device, true); }

CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void* userData, unsigned int flags) {
  if (callback == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return HostCall(hStream, false, [=] { callback(hStream, CUDA_SUCCESS, userData); });
}
CUresult cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback, void* userData, unsigned int flags) {
  if (callback == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return HostCall(hStream, true, [=] { callback(hStream, CUDA_SUCCESS, userData); });
}
CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData) {
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CaptureHostFunc(hStream, false, fn, userData)) return CUDA_SUCCESS;
  return HostCall(hStream, false, [=] { fn(userData); });
}
CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void* userData) {
  if (fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CaptureHostFunc(hStream, true, fn, userData)) return CUDA_SUCCESS;
  return HostCall(hStream, true, [=] { fn(userData); });
}

CUresult cuStreamBeginCapture(CUstream hStream) {
  return BeginCapture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, false);
}
CUresult cuStreamBeginCapture_ptsz(CUstream hStream) {
  return BeginCapture(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, true);
}
CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  return BeginCapture(hStream, mode, false);
}
CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) {
  return BeginCapture(hStream, mode, true);
}
CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) { return EndCapture(hStream, phGraph, false); }
CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph) { return EndCapture(hStream, phGraph, true); }
CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  return IsCapturing(hStream, captureStatus, false);
}
CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  return IsCapturing(hStream, captureStatus, true);
}

}  // extern "C"
