// Events: a recorded event completes when the work queued before it on its stream (or, for
// cuCtxRecordEvent, in its context) ends on the simulated timeline, so elapsed times are real
// device times.
#include <algorithm>
#include <memory>

#include "core/abi/cuda_api.h"
#include "sim/cuda/graph_internal.h"
#include "sim/cuda/runtime.h"
#include "sim/cuda/stream_gate.h"

using fgpu::sim::SharedDevices;
using fgpu::sim::cuda::Context;
using fgpu::sim::cuda::Event;
using fgpu::sim::cuda::HandleRegistry;
using fgpu::sim::cuda::Kind;
using fgpu::sim::cuda::Runtime;
using fgpu::sim::cuda::Stream;

namespace {

constexpr unsigned kEventFlags = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;

CUresult LookupEvent(CUevent handle, Event** out) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  *out = HandleRegistry::Get().Lookup<Event>(handle, Kind::kEvent);
  return *out != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

// A record: the event completes at `done` (and so does its interprocess twin, if it has one).
void Store(Event& event, uint64_t done) {
  event.time_ns.store(done);
  event.recorded.store(true);
  if (event.shared != nullptr) event.shared->store(done);
}

CUresult Record(CUevent handle, CUstream stream_handle, unsigned flags, bool per_thread) {
  Event* event = nullptr;
  if (CUresult rc = LookupEvent(handle, &event); rc != CUDA_SUCCESS) return rc;
  if (flags > CU_EVENT_RECORD_EXTERNAL) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = nullptr;
  if (CUresult rc = Runtime::Get().ResolveStream(stream_handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  if (stream->ctx != event->ctx) return CUDA_ERROR_INVALID_HANDLE;
  if (fgpu::sim::cuda::Graph* graph = stream->capture.load()) {
    // An external record becomes an event record node, as in the driver; a plain one would mark a
    // point of the capture for other streams to join, and only single-stream capture is simulated.
    if (flags != CU_EVENT_RECORD_EXTERNAL) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    auto node = std::make_unique<fgpu::sim::cuda::GraphNode>();
    node->type = fgpu::sim::cuda::GraphNode::Type::kEventRecord;
    node->event = handle;
    fgpu::sim::cuda::AppendCapturedNode(*graph, std::move(node));
    return CUDA_SUCCESS;
  }
  // Behind a stream memory operation's wait, the completion time is known only once it is satisfied.
  if (fgpu::sim::cuda::StreamHeld(*stream)) {
    event->time_ns.store(fgpu::sim::cuda::kPendingEventNs);
    event->recorded.store(true);
  }
  fgpu::sim::cuda::RunOrHold(*stream, [event, stream] {
    if (!HandleRegistry::Get().Is(event, Kind::kEvent)) return;  // destroyed meanwhile
    Store(*event, std::max(SharedDevices::NowNs(), Runtime::Get().ReadyTime(*stream)));
  });
  return CUDA_SUCCESS;
}

// When the event's last record completes; false if it was never recorded (here or, for an
// interprocess event, in any process that has it).
bool RecordedTime(const Event& event, uint64_t* time) {
  if (event.shared != nullptr) {
    *time = event.shared->load();
    return *time != 0;
  }
  *time = event.time_ns.load();
  return event.recorded.load();
}

CUresult Elapsed(float* ms, CUevent start_handle, CUevent end_handle) {
  if (ms == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Event* start = nullptr;
  Event* end = nullptr;
  if (CUresult rc = LookupEvent(start_handle, &start); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = LookupEvent(end_handle, &end); rc != CUDA_SUCCESS) return rc;
  if (((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING) != 0) return CUDA_ERROR_INVALID_HANDLE;
  if (!start->recorded.load() || !end->recorded.load()) return CUDA_ERROR_INVALID_HANDLE;
  const uint64_t now = SharedDevices::NowNs();
  if (start->time_ns.load() > now || end->time_ns.load() > now) return CUDA_ERROR_NOT_READY;
  const double delta = static_cast<double>(end->time_ns.load()) - static_cast<double>(start->time_ns.load());
  *ms = static_cast<float>(delta / 1e6);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (phEvent == nullptr || (Flags & ~kEventFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
  if ((Flags & CU_EVENT_INTERPROCESS) != 0 && (Flags & CU_EVENT_DISABLE_TIMING) == 0) return CUDA_ERROR_INVALID_VALUE;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  auto event = std::make_unique<Event>();
  event->ctx = ctx;
  event->flags = Flags;
  HandleRegistry::Get().Insert(event.get(), Kind::kEvent);
  *phEvent = reinterpret_cast<CUevent>(event.release());
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream) { return Record(hEvent, hStream, 0, false); }
CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) { return Record(hEvent, hStream, 0, true); }
CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags) {
  return Record(hEvent, hStream, flags, false);
}
CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags) {
  return Record(hEvent, hStream, flags, true);
}

CUresult cuEventQuery(CUevent hEvent) {
  Event* event = nullptr;
  if (CUresult rc = LookupEvent(hEvent, &event); rc != CUDA_SUCCESS) return rc;
  uint64_t time = 0;
  if (!RecordedTime(*event, &time)) return CUDA_SUCCESS;  // never-recorded events count as complete
  return SharedDevices::NowNs() >= time ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult cuEventSynchronize(CUevent hEvent) {
  Event* event = nullptr;
  if (CUresult rc = LookupEvent(hEvent, &event); rc != CUDA_SUCCESS) return rc;
  fgpu::sim::cuda::WaitEventKnown(*event);
  if (uint64_t time = 0; RecordedTime(*event, &time)) Runtime::SleepUntil(time);
  fgpu::sim::cuda::TrimPoolsAfterSync(event->ctx->device);
  return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  return Elapsed(pMilliseconds, hStart, hEnd);
}
CUresult cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  return Elapsed(pMilliseconds, hStart, hEnd);
}

// The event captures all work queued in the context so far: it completes when the context's
// last work ends (its tail on the timeline), or at once when the context is idle.
CUresult cuCtxRecordEvent(CUcontext hCtx, CUevent hEvent) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().ContextOrCurrent(hCtx, &ctx); rc != CUDA_SUCCESS) return rc;
  Event* event = nullptr;
  if (CUresult rc = LookupEvent(hEvent, &event); rc != CUDA_SUCCESS) return rc;
  if (event->ctx != ctx) return CUDA_ERROR_INVALID_HANDLE;  // as documented
  Store(*event, std::max(SharedDevices::NowNs(), ctx->tail_ns.load()));
  return CUDA_SUCCESS;
}

// Work queued in the context from now on, on any stream, starts after the event's work ends
// (cuStreamWaitEvent's model, for every stream of the context at once). The event may belong to
// another context or device. An event never recorded imposes nothing.
CUresult cuCtxWaitEvent(CUcontext hCtx, CUevent hEvent) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().ContextOrCurrent(hCtx, &ctx); rc != CUDA_SUCCESS) return rc;
  Event* event = nullptr;
  if (CUresult rc = LookupEvent(hEvent, &event); rc != CUDA_SUCCESS) return rc;
  uint64_t time = 0;
  if (!RecordedTime(*event, &time)) return CUDA_SUCCESS;
  for (std::atomic<uint64_t>* mark : {&ctx->wait_floor_ns, &ctx->tail_ns}) {
    uint64_t seen = mark->load();
    while (seen < time && !mark->compare_exchange_weak(seen, time)) {
    }
  }
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent hEvent) {
  Event* event = nullptr;
  if (CUresult rc = LookupEvent(hEvent, &event); rc != CUDA_SUCCESS) return rc;
  HandleRegistry::Get().Erase(event);
  fgpu::sim::cuda::ReleaseSharedEventPage(*event);
  delete event;
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy(CUevent hEvent) { return cuEventDestroy_v2(hEvent); }

}  // extern "C"
