// ComputeGate: the launch gate, the per-thread batches and the completion threads (see
// compute_gate.h and docs/compute.md "In the workload").
#include "hook/compute/compute_gate.h"

#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstring>
#include <mutex>
#include <string>

#include "compute/board.h"
#include "core/abi/cuda_api.h"
#include "hook/compute/board_source.h"
#include "hook/interpose/log.h"
#include "hook/interpose/real_calls.h"
#include "hook/interpose/real_driver.h"
#include "hook/memory/memory_hook.h"
#include "slice/slice.h"

namespace fgpu::hook {
namespace {

using compute::LaunchKind;
using compute::Mark;

constexpr int kGates = DeviceMap::kCachedCudaDevices;
constexpr uint64_t kRingSlots = 256;  // closed batches one GPU can have pending
// A thread whose open batch saw no launch for this long had paused: its marker, recorded at
// the next launch, completes when recorded, so that batch is charged its estimate at most.
constexpr int64_t kPausedNs = 1'000'000;
constexpr int64_t kMonitorIdleWaitNs = 100'000'000;
constexpr uint64_t kUndecided = ~uint64_t{0};
constexpr int64_t kContextDrainNs = 1'000'000'000;

// A closed batch waiting for its marker (a bounded MPSC ring, Vyukov's sequence protocol).
// `start_event` is the batch's start marker when the batch is timed; once the slot is free it is
// a spare the next batch of this context swaps for its own.
struct MarkSlot {
  std::atomic<uint64_t> sequence{0};
  CUevent event = nullptr;
  CUevent start_event = nullptr;
  CUcontext event_context = nullptr;
  Mark mark;
};

}  // namespace

// Named in compute_gate.h (LaunchTicket holds one); defined here only.
struct GpuGate {
  enum State : uint32_t { kUnresolved = 0, kReady = 1, kUngated = 2 };
  std::atomic<uint32_t> state{kUnresolved};
  int slice_device = -1;
  compute::Limiter* limiter = nullptr;
  std::atomic<uint64_t> settings_generation{kUndecided};
  std::atomic<bool> limited{false};
  MarkSlot slots[kRingSlots];
  std::atomic<uint64_t> tail{0};  // next sequence to claim (producers)
  uint64_t head = 0;              // next sequence to complete (the completion thread only)
  std::atomic<uint64_t> completed{0};  // = head, published for ComputeContextClosing
  std::atomic<uint32_t> published{0};  // futex word: bumped on every publish
  std::atomic<uint32_t> monitor_sleeping{0};
};

namespace {

struct Batch {
  GpuGate* gate = nullptr;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  bool per_thread_stream = false;
  Mark open;
  int64_t last_launch_ns = 0;
  int64_t last_close_ns = 0;
  // The start marker this thread records before a batch's first launch, in `start_context`;
  // created when `context_closings` had this value (see RecordStart).
  CUevent start_event = nullptr;
  CUcontext start_context = nullptr;
  uint64_t start_closings = 0;
  // When the start marker was recorded for a batch not opened yet (its launch failed), and on
  // which stream: the next launch there reuses it rather than recording again.
  int64_t start_recorded_ns = 0;
  CUstream start_stream = nullptr;
  bool start_per_thread_stream = false;
};

struct ThreadCache {
  CUcontext context = nullptr;
  GpuGate* gate = nullptr;
  Batch batch;
};

constinit RealCalls g_real{};
constinit std::atomic<bool> g_real_loaded{false};
constinit std::atomic<bool> g_armed{false};
constinit std::atomic<const slice::Ledger*> g_ledger{nullptr};
constinit std::atomic<uint64_t> g_decided_generation{kUndecided};
constinit std::mutex g_resolve_mutex;
// Bumped whenever a context of this process is closed: a thread's start marker created before
// the bump may belong to a dead context whose handle the driver has since reused.
constinit std::atomic<uint64_t> g_context_closings{0};
constinit GpuGate g_gates[kGates];
constinit thread_local ThreadCache t_cache __attribute__((tls_model("initial-exec")));

bool Limited(const slice::Ledger& ledger, int device) {
  return ledger.ComputeShare(device) < 100 || ledger.GetComputeMode(device) == slice::ComputeMode::kCap ||
         ledger.GetTier(device) != slice::Tier::kStandard;
}

void LoadReal() {
  if (g_real_loaded.load(std::memory_order_acquire)) return;
  g_real = ResolveRealCalls();
  g_real_loaded.store(true, std::memory_order_release);
}

// Decides, for the limits as they are now, whether any launch needs the gate. Out of line:
// it runs once per limits change, and inlined it would widen every launch's stack frame.
[[gnu::noinline, gnu::cold]] void Decide() {
  std::lock_guard<std::mutex> lock(g_resolve_mutex);
  const State& state = HookState();
  if (state.mode != Mode::kEnforcing || state.ledger == nullptr) {
    g_decided_generation.store(0, std::memory_order_relaxed);  // never armed (ledger stays null)
    return;
  }
  const slice::Ledger& ledger = *state.ledger;
  const uint64_t generation = ledger.LimitsGeneration();
  bool any = false;
  for (int device = 0; device < ledger.device_count(); ++device) any = any || Limited(ledger, device);
  LoadReal();
  g_ledger.store(&ledger, std::memory_order_relaxed);
  g_armed.store(any, std::memory_order_relaxed);
  g_decided_generation.store(generation, std::memory_order_release);
}

void Futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

// The device time between a completed slot's start and end markers; -1 when untimed.
int64_t DeviceSpanNs(const MarkSlot& slot) {
  if (!slot.mark.timed || slot.start_event == nullptr || g_real.event_elapsed == nullptr) return -1;
  float milliseconds = 0;
  if (g_real.event_elapsed(&milliseconds, slot.start_event, slot.event) != CUDA_SUCCESS || milliseconds < 0) return -1;
  return static_cast<int64_t>(static_cast<double>(milliseconds) * 1e6);
}

void* CompletionThread(void* argument) {
  auto* gate = static_cast<GpuGate*>(argument);
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);  // the application's signals are not ours
  CUcontext current = nullptr;
  for (;;) {
    MarkSlot& slot = gate->slots[gate->head % kRingSlots];
    if (slot.sequence.load(std::memory_order_acquire) != gate->head + 1) {
      const uint32_t seen = gate->published.load(std::memory_order_acquire);
      gate->monitor_sleeping.store(1, std::memory_order_seq_cst);
      if (slot.sequence.load(std::memory_order_acquire) != gate->head + 1) {
        const timespec timeout{0, kMonitorIdleWaitNs};
        Futex(&gate->published, FUTEX_WAIT_PRIVATE, seen, &timeout);
      }
      gate->monitor_sleeping.store(0, std::memory_order_relaxed);
      continue;
    }
    int64_t device_ns = -1;
    if (slot.event != nullptr) {
      if (slot.event_context != current && g_real.ctx_set_current(slot.event_context) == CUDA_SUCCESS)
        current = slot.event_context;
      // An error (context gone) counts as done now, and untimed.
      if (g_real.event_synchronize(slot.event) == CUDA_SUCCESS) device_ns = DeviceSpanNs(slot);
    }
    gate->limiter->OnMarkComplete(slot.mark, compute::MonotonicNs(), device_ns);
    slot.sequence.store(gate->head + kRingSlots, std::memory_order_release);
    ++gate->head;
    gate->completed.store(gate->head, std::memory_order_release);
  }
  return nullptr;
}

std::string SliceIdentity(const char* dir) {
  char resolved[PATH_MAX];
  return realpath(dir, resolved) != nullptr ? std::string(resolved) : std::string(dir);
}

const char* BaseName(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash != nullptr && slash[1] != '\0' ? slash + 1 : path;
}

[[gnu::noinline, gnu::cold]] void Configure(GpuGate* gate, const slice::Ledger& ledger) {
  const uint64_t generation = ledger.LimitsGeneration();
  const int device = gate->slice_device;
  gate->limiter->Configure(ledger.ComputeShare(device), ledger.GetComputeMode(device), ledger.GetTier(device));
  gate->limited.store(Limited(ledger, device), std::memory_order_relaxed);
  gate->settings_generation.store(generation, std::memory_order_release);
}

// The gate of CUDA device `ordinal`: opens its board, joins it, starts its completion thread.
[[gnu::noinline, gnu::cold]] GpuGate* Resolve(CUdevice ordinal) {
  if (ordinal < 0 || ordinal >= kGates) return nullptr;
  GpuGate* gate = &g_gates[ordinal];
  const uint32_t state = gate->state.load(std::memory_order_acquire);
  if (state == GpuGate::kReady) return gate;
  if (state == GpuGate::kUngated) return nullptr;
  std::lock_guard<std::mutex> lock(g_resolve_mutex);
  if (gate->state.load(std::memory_order_relaxed) != GpuGate::kUnresolved)
    return gate->state.load(std::memory_order_relaxed) == GpuGate::kReady ? gate : nullptr;
  const State& hook = HookState();
  MemoryHook* memory = EnforcingMemoryHook();
  CudaDeviceFacts facts;
  if (memory == nullptr || !memory->devices().Cuda(ordinal, &facts) || facts.slice_device == kNotInSlice) {
    gate->state.store(GpuGate::kUngated, std::memory_order_release);
    return nullptr;
  }
  compute::Policy policy;
  Result<compute::Board*> board = OpenComputeBoard(hook.options, facts.uuid, &policy);
  const int64_t now = compute::MonotonicNs();
  const std::string identity = SliceIdentity(hook.options.slice_dir);
  const int row = board.ok() ? (*board)->Join(compute::SliceKey(identity), BaseName(identity.c_str()), now) : -1;
  pthread_t thread{};
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
  if (row >= 0) gate->limiter = new compute::Limiter(*board, row, policy);
  for (uint64_t i = 0; i < kRingSlots; ++i) gate->slots[i].sequence.store(i, std::memory_order_relaxed);
  const bool started = row >= 0 && pthread_create(&thread, &attributes, CompletionThread, gate) == 0;
  pthread_attr_destroy(&attributes);
  if (!started) {
    if (!board.ok()) {
      LogProblem("compute shares are not enforced on %s: %s", facts.uuid, board.status().message().c_str());
    } else {
      const char* why = row >= 0             ? "cannot start the completion thread"
                        : (*board)->has_policy() ? "the node agent has given this slice no row on its compute board"
                                                 : "every row of its compute board is held by another slice";
      LogProblem("compute shares are not enforced on %s: %s", facts.uuid, why);
      if (row < 0) delete *board;  // nobody joined it: nothing refers to it
    }
    // Once per process and GPU: the gate is never resolved again.
    hook.ledger->CountComputeUnenforced();
    gate->state.store(GpuGate::kUngated, std::memory_order_release);
    return nullptr;
  }
  gate->slice_device = facts.slice_device;
  Configure(gate, *hook.ledger);
  gate->state.store(GpuGate::kReady, std::memory_order_release);
  return gate;
}

// The thread's context changed (or its first launch): which gate it launches into.
[[gnu::noinline]] GpuGate* CurrentGateMiss(CUcontext context) {
  ThreadCache& cache = t_cache;
  CUdevice ordinal = -1;
  if (g_real.ctx_get_device == nullptr || g_real.ctx_get_device(&ordinal) != CUDA_SUCCESS) return nullptr;
  cache.context = context;
  cache.gate = Resolve(ordinal);
  return cache.gate;
}

GpuGate* CurrentGate(CUcontext* context_out) {
  CUcontext context = nullptr;
  if (g_real.ctx_get_current == nullptr || g_real.ctx_get_current(&context) != CUDA_SUCCESS || context == nullptr)
    return nullptr;
  *context_out = context;
  const ThreadCache& cache = t_cache;
  return context == cache.context ? cache.gate : CurrentGateMiss(context);
}

void DestroyEvent(CUevent* event) {
  if (*event != nullptr) g_real.event_destroy(*event);
  *event = nullptr;
}

// Closes the thread's open batch behind a marker. False (batch kept open) if the ring is full.
bool Close(Batch& batch, bool late) {
  if (batch.open.launches == 0 || batch.gate == nullptr) return true;
  GpuGate& gate = *batch.gate;
  uint64_t position = gate.tail.load(std::memory_order_relaxed);
  MarkSlot* slot = nullptr;
  for (;;) {
    slot = &gate.slots[position % kRingSlots];
    const uint64_t sequence = slot->sequence.load(std::memory_order_acquire);
    if (sequence == position) {
      if (gate.tail.compare_exchange_weak(position, position + 1, std::memory_order_relaxed)) break;
    } else if (sequence < position) {
      return false;  // full: the completion thread is behind; try at the next launch
    } else {
      position = gate.tail.load(std::memory_order_relaxed);
    }
  }
  if (slot->event_context != batch.context || slot->event == nullptr) {
    DestroyEvent(&slot->event);
    if (slot->event_context != batch.context) DestroyEvent(&slot->start_event);
    // Timing enabled: the completion thread reads the span from the batch's start marker.
    if (g_real.event_create(&slot->event, CU_EVENT_BLOCKING_SYNC) != CUDA_SUCCESS) slot->event = nullptr;
    slot->event_context = batch.context;
  }
  slot->mark = batch.open;
  slot->mark.late = late;
  if (slot->mark.timed) {
    // The recorded start marker goes with the batch; the thread keeps the slot's spare.
    CUevent spare = slot->start_event;
    slot->start_event = batch.start_event;
    batch.start_event = spare;
  }
  const auto record = batch.per_thread_stream && g_real.event_record_ptsz != nullptr ? g_real.event_record_ptsz
                                                                                       : g_real.event_record;
  if (slot->event != nullptr && record(slot->event, batch.stream) != CUDA_SUCCESS) {
    slot->mark.late = true;  // no marker: completes at once, charged its estimate
    g_real.event_destroy(slot->event);
    slot->event = nullptr;
  }
  gate.limiter->OnMarkClosed();
  batch.last_close_ns = compute::MonotonicNs();
  slot->sequence.store(position + 1, std::memory_order_release);
  gate.published.fetch_add(1, std::memory_order_release);
  if (gate.monitor_sleeping.load(std::memory_order_seq_cst) != 0) Futex(&gate.published, FUTEX_WAKE_PRIVATE, 1, nullptr);
  batch.open = Mark{};
  return true;
}

// Records the thread's start marker on the batch's stream, before its first launch, so the
// batch's device time is measured from when the device reached it. False: the batch is untimed.
bool RecordStart(Batch& batch, CUcontext context, CUstream stream, bool per_thread_stream) {
  const uint64_t closings = g_context_closings.load(std::memory_order_acquire);
  if (batch.start_context != context) {
    // A marker from a context that may have been destroyed since is abandoned, not destroyed:
    // its handle may name someone else's event by now.
    if (batch.start_closings == closings) DestroyEvent(&batch.start_event);
    batch.start_event = nullptr;
    batch.start_context = context;
    batch.start_closings = closings;
  }
  if (batch.start_event == nullptr && g_real.event_create(&batch.start_event, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
    batch.start_event = nullptr;
    return false;
  }
  const auto record = per_thread_stream && g_real.event_record_ptsz != nullptr ? g_real.event_record_ptsz
                                                                               : g_real.event_record;
  return record(batch.start_event, stream) == CUDA_SUCCESS;
}

// A recorded start marker for a batch about to open: the one left by a failed launch on the same
// stream moments ago, or a new one.
bool StartMarker(Batch& batch, CUcontext context, CUstream stream, bool per_thread_stream, int64_t now_ns) {
  if (batch.start_recorded_ns != 0 && now_ns - batch.start_recorded_ns < kPausedNs &&
      batch.start_context == context && batch.start_stream == stream &&
      batch.start_per_thread_stream == per_thread_stream) {
    return true;
  }
  const bool recorded = RecordStart(batch, context, stream, per_thread_stream);
  batch.start_recorded_ns = recorded ? now_ns : 0;
  batch.start_stream = stream;
  batch.start_per_thread_stream = per_thread_stream;
  return recorded;
}

void SleepUntil(int64_t deadline_ns) {
  const timespec until{static_cast<time_t>(deadline_ns / 1'000'000'000), static_cast<long>(deadline_ns % 1'000'000'000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr) == EINTR) {
  }
}

}  // namespace

bool ComputeGateArmed() {
  if (g_armed.load(std::memory_order_relaxed)) return true;
  const slice::Ledger* ledger = g_ledger.load(std::memory_order_relaxed);
  const uint64_t decided = g_decided_generation.load(std::memory_order_relaxed);
  if (ledger == nullptr) return decided == kUndecided;
  return ledger->LimitsGeneration() != decided;
}

// Sleeps at the gate until the limiter admits the launch (it said kWait at `now_ns`); returns
// the time of admission. Out of line: under budget no launch comes here.
[[gnu::noinline]] int64_t WaitForAdmission(compute::Limiter& limiter, Batch& batch, compute::Admission admission,
                                           int64_t now_ns) {
  do {
    Close(batch, /*late=*/false);  // what we queued must be measured while we wait
    SleepUntil(std::min(admission.until_ns, now_ns + limiter.policy().poll_ns));
    const int64_t woke = compute::MonotonicNs();
    limiter.OnWaited(woke - now_ns);
    now_ns = woke;
    admission = limiter.TryAdmit(now_ns);
  } while (admission.verdict != compute::Admission::kGo);
  limiter.OnThrottled();
  return now_ns;
}

LaunchTicket BeforeLaunch(CUstream stream, bool per_thread_stream, LaunchKind kind) {
  // The limits generation is read once per launch: for "is the decision current" and for "are
  // this gate's settings current" (a change between the two is seen at the next launch).
  const slice::Ledger* ledger = g_ledger.load(std::memory_order_relaxed);
  uint64_t generation = ledger != nullptr ? ledger->LimitsGeneration() : kUndecided;
  if (ledger == nullptr || generation != g_decided_generation.load(std::memory_order_acquire)) {
    Decide();
    ledger = g_ledger.load(std::memory_order_relaxed);
    if (ledger != nullptr) generation = ledger->LimitsGeneration();
  }
  LaunchTicket ticket;
  if (ledger == nullptr || !g_armed.load(std::memory_order_relaxed)) return ticket;
  GpuGate* gate = CurrentGate(&ticket.context);
  if (gate == nullptr) return ticket;
  if (gate->settings_generation.load(std::memory_order_acquire) != generation) Configure(gate, *ledger);
  if (!gate->limited.load(std::memory_order_relaxed)) return ticket;

  Batch& batch = t_cache.batch;
  compute::Limiter& limiter = *gate->limiter;
  int64_t now = compute::MonotonicNs();  // the one clock read of an admitted launch
  if (const compute::Admission admission = limiter.TryAdmit(now); admission.verdict != compute::Admission::kGo)
    now = WaitForAdmission(limiter, batch, admission, now);
  if (batch.open.launches > 0 && (batch.gate != gate || batch.context != ticket.context || batch.stream != stream ||
                                  batch.per_thread_stream != per_thread_stream || batch.open.kind != kind ||
                                  now - batch.last_launch_ns > kPausedNs)) {
    Close(batch, /*late=*/now - batch.last_launch_ns > kPausedNs);
  }
  ticket.gate = gate;
  ticket.now_ns = now;
  ticket.timed = batch.open.launches == 0 && StartMarker(batch, ticket.context, stream, per_thread_stream, now);
  return ticket;
}

void AfterLaunch(const LaunchTicket& ticket, CUstream stream, bool per_thread_stream, LaunchKind kind, CUresult rc) {
  if (ticket.gate == nullptr || rc != CUDA_SUCCESS) return;
  Batch& batch = t_cache.batch;
  compute::Limiter& limiter = *ticket.gate->limiter;
  const int64_t now = ticket.now_ns;
  if (batch.open.launches == 0) {
    batch.gate = ticket.gate;
    batch.context = ticket.context;
    batch.stream = stream;
    batch.per_thread_stream = per_thread_stream;
    batch.open.first_launch_ns = now;
    batch.open.kind = kind;
    batch.open.timed = ticket.timed;
    batch.start_recorded_ns = 0;  // consumed by this batch
  }
  batch.open.launches++;
  batch.open.estimated_ns += limiter.OnLaunched(now, kind);
  batch.last_launch_ns = now;
  if (limiter.ShouldClose(batch.open, now, batch.last_close_ns)) Close(batch, /*late=*/false);
}

CUresult GatedLaunch(CUstream stream, bool per_thread_stream, LaunchKind kind, FunctionRef<CUresult()> launch) {
  const LaunchTicket ticket = BeforeLaunch(stream, per_thread_stream, kind);
  const CUresult rc = launch();
  AfterLaunch(ticket, stream, per_thread_stream, kind, rc);
  return rc;
}

void ComputeContextClosing(CUcontext context, CUdevice device) {
  if (!g_armed.load(std::memory_order_relaxed)) return;
  Batch& batch = t_cache.batch;
  if (batch.open.launches > 0 && (batch.context == context || context == nullptr)) Close(batch, /*late=*/false);
  t_cache.context = nullptr;  // the handle may be reused by a new context
  if (batch.start_context == context || context == nullptr) DestroyEvent(&batch.start_event);
  batch.start_context = nullptr;
  batch.start_recorded_ns = 0;
  g_context_closings.fetch_add(1, std::memory_order_acq_rel);
  std::lock_guard<std::mutex> lock(g_resolve_mutex);  // one closer at a time
  for (int ordinal = 0; ordinal < kGates; ++ordinal) {
    GpuGate& gate = g_gates[ordinal];
    if (gate.state.load(std::memory_order_acquire) != GpuGate::kReady) continue;
    if (device >= 0 && ordinal != device) continue;
    const uint64_t target = gate.tail.load(std::memory_order_acquire);
    const int64_t deadline = compute::MonotonicNs() + kContextDrainNs;
    while (gate.completed.load(std::memory_order_acquire) < target && compute::MonotonicNs() < deadline) {
      SleepUntil(compute::MonotonicNs() + 50'000);
    }
    for (uint64_t index = 0; index < kRingSlots; ++index) {
      MarkSlot& slot = gate.slots[index];
      const bool ours = device >= 0 || slot.event_context == context;
      const bool free = slot.sequence.load(std::memory_order_acquire) % kRingSlots == index;
      if (!ours || !free) continue;
      DestroyEvent(&slot.event);
      DestroyEvent(&slot.start_event);
      slot.event_context = nullptr;
    }
  }
}

void CloseOpenBatch() {
  if (!g_armed.load(std::memory_order_relaxed)) return;
  Close(t_cache.batch, /*late=*/false);
}

}  // namespace fgpu::hook
