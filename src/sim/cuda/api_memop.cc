// Stream memory operations: cuStreamWaitValue32/64, cuStreamWriteValue32/64 and
// cuStreamBatchMemOp (each with its _v2 and per-thread forms), and the gate that holds a stream
// behind a wait not yet satisfied (stream_gate.h, docs/sim-entry-points.md).
//
// A write lands when its stream gets to it: at once if the work before it has ended, else at
// that simulated time (on the host-call executor, which synchronisation already waits for). A
// wait is evaluated when its stream gets to it; if its condition does not hold then, the stream
// is held and the watcher thread re-evaluates it until it does.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/abi/cuda_api.h"
#include "sim/cuda/host_calls.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/runtime.h"
#include "sim/cuda/stream_gate.h"

namespace fgpu::sim::cuda {
namespace {

constexpr unsigned kWaitConditionMask = 0x3;
constexpr unsigned kMaxBatchOps = 256;  // "count must be less than 256"
constexpr uint64_t kFirstPollNs = 50'000;
constexpr uint64_t kLastPollNs = 2'000'000;

// What a held stream keeps, in order.
struct HeldOp {
  enum class Type : uint8_t { kWaitValue, kWaitEvent, kWaitPredicate, kRun } type = Type::kRun;
  uint64_t address = 0;  // kWaitValue
  uint64_t value = 0;
  bool wide = false;  // 64-bit
  unsigned condition = CU_STREAM_WAIT_VALUE_GEQ;
  Event* event = nullptr;  // kWaitEvent
  std::function<void()> run;
  std::function<bool()> ready;  // kWaitPredicate
};

// A memory operation's word is device memory, which the host and other streams copy to and from
// with plain memcpy while a wait watches it, as they do on a GPU, where the hardware orders the
// accesses. The simulator's device memory is host memory, so those copies and these atomics are
// a race only in C++'s terms: ThreadSanitizer is told not to pair them.
#define FGPU_SIMULATED_DEVICE_WORD __attribute__((no_sanitize("thread")))

FGPU_SIMULATED_DEVICE_WORD uint64_t LoadWord(uint64_t address, bool wide) {
  if (wide) return __atomic_load_n(reinterpret_cast<const uint64_t*>(address), __ATOMIC_ACQUIRE);
  return __atomic_load_n(reinterpret_cast<const uint32_t*>(address), __ATOMIC_ACQUIRE);
}

// The documented conditions; GEQ is cyclic (the difference read as signed).
bool ConditionHolds(uint64_t current, uint64_t value, unsigned condition, bool wide) {
  if (!wide) {
    const auto c = static_cast<uint32_t>(current), v = static_cast<uint32_t>(value);
    switch (condition) {
      case CU_STREAM_WAIT_VALUE_GEQ:
        return static_cast<int32_t>(c - v) >= 0;
      case CU_STREAM_WAIT_VALUE_EQ:
        return c == v;
      case CU_STREAM_WAIT_VALUE_AND:
        return (c & v) != 0;
      default:
        return static_cast<uint32_t>(~(c | v)) != 0;  // NOR
    }
  }
  switch (condition) {
    case CU_STREAM_WAIT_VALUE_GEQ:
      return static_cast<int64_t>(current - value) >= 0;
    case CU_STREAM_WAIT_VALUE_EQ:
      return current == value;
    case CU_STREAM_WAIT_VALUE_AND:
      return (current & value) != 0;
    default:
      return ~(current | value) != 0;  // NOR
  }
}

// Set once any memory operation was queued in this process: until then nothing is ever held.
std::atomic<bool> g_memops_submitted{false};

class StreamGateKeeper {
 public:
  static StreamGateKeeper& Get() {
    static auto* keeper = new StreamGateKeeper;  // never destroyed: its thread may still run at exit
    return *keeper;
  }

  // Runs `op` now when the stream is not held and `op` can complete now; otherwise keeps it.
  void Submit(Stream& stream, HeldOp op) {
    std::unique_lock lock(mu_);
    stream.used_memops.store(true);
    g_memops_submitted.store(true);
    auto found = held_.find(&stream);
    if (found == held_.end()) {
      if (TryNow(stream, op)) {
        changed_.notify_all();
        return;
      }
      found = held_.emplace(&stream, std::deque<HeldOp>{}).first;
      stream.held.store(true);
      if (!started_) {
        started_ = true;
        std::thread([this] { Watch(); }).detach();
      }
    }
    found->second.push_back(std::move(op));
    wake_.notify_all();
  }

  // A simulated write landed: held waits are re-evaluated now rather than at the next poll.
  void Poke() { wake_.notify_all(); }

  void WaitReleased(const Stream& stream) {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return !stream.held.load(); });
  }

  void WaitContext(const Context* ctx) {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] {
      return std::none_of(held_.begin(), held_.end(),
                          [&](const auto& entry) { return entry.first->ctx == ctx; });
    });
  }

  void WaitEvent(const Event& event) {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return event.time_ns.load() != kPendingEventNs; });
  }

  void Forget(const Stream* stream) {
    std::lock_guard lock(mu_);
    held_.erase(const_cast<Stream*>(stream));
    changed_.notify_all();
  }

 private:
  // Completes `op` if the stream may get past it now (caller holds mu_).
  static bool TryNow(Stream& stream, HeldOp& op) {
    Runtime& rt = Runtime::Get();
    switch (op.type) {
      case HeldOp::Type::kRun:
        op.run();
        return true;
      case HeldOp::Type::kWaitEvent: {
        if (!HandleRegistry::Get().Is(op.event, Kind::kEvent)) return true;  // destroyed: nothing to wait for
        const uint64_t time = op.event->time_ns.load();
        if (time == kPendingEventNs) return false;
        rt.AdvanceStream(stream, time);
        return true;
      }
      case HeldOp::Type::kWaitPredicate: {
        const uint64_t now = SharedDevices::NowNs();
        if (now < rt.ReadyTime(stream) || !op.ready()) return false;
        rt.AdvanceStream(stream, now);
        return true;
      }
      case HeldOp::Type::kWaitValue: {
        const uint64_t now = SharedDevices::NowNs();
        if (now < rt.ReadyTime(stream)) return false;  // the stream has not got there yet
        // The word may have been freed since: a wait on memory that is gone never completes.
        if (!MemoryRegistry::Get().CanAccess(op.address, op.wide ? 8 : 4, MemoryRegistry::Access::kRead,
                                             stream.ctx->device)) {
          return false;
        }
        if (!ConditionHolds(LoadWord(op.address, op.wide), op.value, op.condition, op.wide)) return false;
        rt.AdvanceStream(stream, now);  // nothing after the wait starts before it is satisfied
        return true;
      }
    }
    return false;
  }

  // Releases what can be released; returns whether anything moved (caller holds mu_).
  bool Pump() {
    bool moved = false;
    for (bool again = true; again;) {
      again = false;
      for (auto it = held_.begin(); it != held_.end();) {
        auto& queue = it->second;
        while (!queue.empty() && TryNow(*it->first, queue.front())) {
          queue.pop_front();
          again = moved = true;
        }
        if (queue.empty()) {
          it->first->held.store(false);
          it = held_.erase(it);
        } else {
          ++it;
        }
      }
    }
    return moved;
  }

  // When to look again: a wait whose stream has not got there yet at that time; a wait on a
  // word, after the backoff (caller holds mu_).
  uint64_t NextLook(uint64_t poll_ns) const {
    const uint64_t now = SharedDevices::NowNs();
    uint64_t next = UINT64_MAX;
    for (const auto& [stream, queue] : held_) {
      const HeldOp& head = queue.front();
      const uint64_t ready = Runtime::Get().ReadyTime(*stream);
      const bool timed = head.type == HeldOp::Type::kWaitValue || head.type == HeldOp::Type::kWaitPredicate;
      next = std::min(next, timed && ready > now ? ready : now + poll_ns);
    }
    return next;
  }

  void Watch() {
    std::unique_lock lock(mu_);
    uint64_t poll_ns = kFirstPollNs;
    for (;;) {
      if (Pump()) {
        changed_.notify_all();
        poll_ns = kFirstPollNs;
      } else {
        poll_ns = std::min(poll_ns * 2, kLastPollNs);
      }
      if (held_.empty()) {
        wake_.wait(lock, [&] { return !held_.empty(); });
        poll_ns = kFirstPollNs;
        continue;
      }
      const uint64_t next = NextLook(poll_ns), now = SharedDevices::NowNs();
      if (next > now) wake_.wait_for(lock, std::chrono::nanoseconds(next - now));
    }
  }

  std::mutex mu_;
  std::condition_variable wake_;     // the watcher: something was kept or written
  std::condition_variable changed_;  // synchronisation: a held stream moved
  std::unordered_map<Stream*, std::deque<HeldOp>> held_;
  bool started_ = false;
};

// The word must be device-accessible memory of the stream's device (device, pitched,
// stream-ordered, VMM, pinned or registered host memory), naturally aligned, not managed.
bool WordUsable(const Stream& stream, uint64_t address, bool wide, MemoryRegistry::Access access) {
  const uint64_t bytes = wide ? 8 : 4;
  if (address == 0 || address % bytes != 0) return false;
  const auto found = MemoryRegistry::Get().Find(address);
  if (!found || found->kind == AllocKind::kManaged) return false;
  return MemoryRegistry::Get().CanAccess(address, bytes, access, stream.ctx->device);
}

FGPU_SIMULATED_DEVICE_WORD void StoreWord(uint64_t address, uint64_t value, bool wide) {
  if (wide) {
    __atomic_store_n(reinterpret_cast<uint64_t*>(address), value, __ATOMIC_RELEASE);
  } else {
    __atomic_store_n(reinterpret_cast<uint32_t*>(address), static_cast<uint32_t>(value), __ATOMIC_RELEASE);
  }
  StreamGateKeeper::Get().Poke();
}

// One validated operation of a batch (or a single call).
struct MemOp {
  enum class Type : uint8_t { kWait, kWrite, kNothing } type = Type::kNothing;
  uint64_t address = 0;
  uint64_t value = 0;
  bool wide = false;
  unsigned condition = 0;
};

CUresult CheckWait(const Stream& stream, uint64_t address, uint64_t value, unsigned flags, bool wide,
                   MemOp* out) {
  // A condition and, optionally, FLUSH: host-backed memory is coherent, so every write that
  // satisfied the wait is already visible (CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES is 1).
  if ((flags & ~(kWaitConditionMask | CU_STREAM_WAIT_VALUE_FLUSH)) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (!WordUsable(stream, address, wide, MemoryRegistry::Access::kRead)) return CUDA_ERROR_INVALID_VALUE;
  *out = MemOp{MemOp::Type::kWait, address, value, wide, flags & kWaitConditionMask};
  return CUDA_SUCCESS;
}

CUresult CheckWrite(const Stream& stream, uint64_t address, uint64_t value, unsigned flags, bool wide,
                    bool v2, MemOp* out) {
  // NO_MEMORY_BARRIER is a v1 flag only; ordering is total here, so it changes nothing.
  const unsigned allowed = v2 ? 0u : static_cast<unsigned>(CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER);
  if ((flags & ~allowed) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (!WordUsable(stream, address, wide, MemoryRegistry::Access::kWrite)) return CUDA_ERROR_INVALID_VALUE;
  *out = MemOp{MemOp::Type::kWrite, address, value, wide, 0};
  return CUDA_SUCCESS;
}

void Enqueue(Stream& stream, const MemOp& op) {
  switch (op.type) {
    case MemOp::Type::kNothing:
      return;
    case MemOp::Type::kWrite: {
      Stream* target = &stream;
      RunOrHold(stream, [target, op] {
        const uint64_t due = Runtime::Get().ReadyTime(*target);
        if (SharedDevices::NowNs() >= due) {
          StoreWord(op.address, op.value, op.wide);
        } else {
          ScheduleHostCall(*target, due, [op] { StoreWord(op.address, op.value, op.wide); });
        }
      });
      return;
    }
    case MemOp::Type::kWait: {
      HeldOp held;
      held.type = HeldOp::Type::kWaitValue;
      held.address = op.address;
      held.value = op.value;
      held.wide = op.wide;
      held.condition = op.condition;
      StreamGateKeeper::Get().Submit(stream, std::move(held));
      return;
    }
  }
}

CUresult ResolveForMemOps(CUstream handle, bool per_thread, Stream** out) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = Runtime::Get().ResolveStream(handle, per_thread, out); rc != CUDA_SUCCESS) return rc;
  // Graphs have no memory-operation node here yet.
  if ((*out)->capture.load() != nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return CUDA_SUCCESS;
}

CUresult WaitValue(CUstream handle, uint64_t address, uint64_t value, unsigned flags, bool wide,
                   bool per_thread) {
  Stream* stream = nullptr;
  if (CUresult rc = ResolveForMemOps(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  MemOp op;
  if (CUresult rc = CheckWait(*stream, address, value, flags, wide, &op); rc != CUDA_SUCCESS) return rc;
  Enqueue(*stream, op);
  return CUDA_SUCCESS;
}

CUresult WriteValue(CUstream handle, uint64_t address, uint64_t value, unsigned flags, bool wide, bool v2,
                    bool per_thread) {
  Stream* stream = nullptr;
  if (CUresult rc = ResolveForMemOps(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  MemOp op;
  if (CUresult rc = CheckWrite(*stream, address, value, flags, wide, v2, &op); rc != CUDA_SUCCESS) return rc;
  Enqueue(*stream, op);
  return CUDA_SUCCESS;
}

// Every operation is validated before any is queued: a bad batch queues nothing.
CUresult BatchMemOp(CUstream handle, unsigned count, const CUstreamBatchMemOpParams* params, unsigned flags,
                    bool v2, bool per_thread) {
  Stream* stream = nullptr;
  if (CUresult rc = ResolveForMemOps(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  if (flags != 0 || count >= kMaxBatchOps || (count > 0 && params == nullptr))
    return CUDA_ERROR_INVALID_VALUE;
  std::vector<MemOp> ops(count);
  for (unsigned i = 0; i < count; ++i) {
    const CUstreamBatchMemOpParams& p = params[i];
    int type = 0;  // a C caller may pass any int: read it as one, not as the enum
    std::memcpy(&type, &p.operation, sizeof type);
    CUresult rc = CUDA_SUCCESS;
    switch (type) {
      case CU_STREAM_MEM_OP_WAIT_VALUE_32:
        rc = CheckWait(*stream, p.waitValue.address, p.waitValue.value, p.waitValue.flags, false, &ops[i]);
        break;
      case CU_STREAM_MEM_OP_WAIT_VALUE_64:
        rc = CheckWait(*stream, p.waitValue.address, p.waitValue.value64, p.waitValue.flags, true, &ops[i]);
        break;
      case CU_STREAM_MEM_OP_WRITE_VALUE_32:
        rc = CheckWrite(*stream, p.writeValue.address, p.writeValue.value, p.writeValue.flags, false, v2,
                        &ops[i]);
        break;
      case CU_STREAM_MEM_OP_WRITE_VALUE_64:
        rc = CheckWrite(*stream, p.writeValue.address, p.writeValue.value64, p.writeValue.flags, true, v2,
                        &ops[i]);
        break;
      case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:  // coherent memory: nothing to flush
        rc = p.flushRemoteWrites.flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
        break;
      case CU_STREAM_MEM_OP_BARRIER:  // _v2 only; ordering is total here
        rc = v2 && p.memoryBarrier.flags <= CU_STREAM_MEMORY_BARRIER_TYPE_GPU ? CUDA_SUCCESS
                                                                              : CUDA_ERROR_INVALID_VALUE;
        break;
      default:
        rc = CUDA_ERROR_INVALID_VALUE;
    }
    if (rc != CUDA_SUCCESS) return rc;
  }
  for (const MemOp& op : ops) Enqueue(*stream, op);
  return CUDA_SUCCESS;
}

}  // namespace

// --- stream_gate.h ---------------------------------------------------------------------

void RunOrHold(Stream& stream, const std::function<void()>& op) {
  if (!stream.held.load()) {
    op();
    return;
  }
  HeldOp held;
  held.run = op;
  StreamGateKeeper::Get().Submit(stream, std::move(held));
}

void WaitEventOnStream(Stream& stream, Event& event) {
  if (!stream.held.load() && event.time_ns.load() != kPendingEventNs) {
    Runtime::Get().AdvanceStream(stream, event.time_ns.load());
    return;
  }
  HeldOp held;
  held.type = HeldOp::Type::kWaitEvent;
  held.event = &event;
  StreamGateKeeper::Get().Submit(stream, std::move(held));
}

void HoldUntil(Stream& stream, std::function<bool()> ready) {
  HeldOp held;
  held.type = HeldOp::Type::kWaitPredicate;
  held.ready = std::move(ready);
  StreamGateKeeper::Get().Submit(stream, std::move(held));
}

void NotifyGateWrite() { StreamGateKeeper::Get().Poke(); }

bool StreamHeld(const Stream& stream) { return stream.held.load(); }

void WaitStreamReleased(const Stream& stream) {
  if (stream.held.load()) StreamGateKeeper::Get().WaitReleased(stream);
}

void WaitContextReleased(const Context* ctx) {
  if (g_memops_submitted.load()) StreamGateKeeper::Get().WaitContext(ctx);
}

void WaitEventKnown(const Event& event) {
  if (event.time_ns.load() == kPendingEventNs) StreamGateKeeper::Get().WaitEvent(event);
}

Stream::~Stream() {
  if (used_memops.load()) StreamGateKeeper::Get().Forget(this);
}

}  // namespace fgpu::sim::cuda

namespace sim = fgpu::sim::cuda;

extern "C" {

#define FGPU_MEMOP_VARIANTS(name, type, wide, body_v1, body_v2)                                \
  CUresult name(CUstream stream, CUdeviceptr addr, type value, unsigned int flags) {           \
    return sim::Guarded([&] { return body_v1(stream, addr, value, flags, wide, false); });     \
  }                                                                                            \
  CUresult name##_ptsz(CUstream stream, CUdeviceptr addr, type value, unsigned int flags) {    \
    return sim::Guarded([&] { return body_v1(stream, addr, value, flags, wide, true); });      \
  }                                                                                            \
  CUresult name##_v2(CUstream stream, CUdeviceptr addr, type value, unsigned int flags) {      \
    return sim::Guarded([&] { return body_v2(stream, addr, value, flags, wide, false); });     \
  }                                                                                            \
  CUresult name##_v2_ptsz(CUstream stream, CUdeviceptr addr, type value, unsigned int flags) { \
    return sim::Guarded([&] { return body_v2(stream, addr, value, flags, wide, true); });      \
  }

}  // extern "C"

namespace {
CUresult MemOpWait(CUstream s, CUdeviceptr a, uint64_t v, unsigned f, bool wide, bool pt) {
  return sim::WaitValue(s, a, v, f, wide, pt);
}
CUresult MemOpWriteV1(CUstream s, CUdeviceptr a, uint64_t v, unsigned f, bool wide, bool pt) {
  return sim::WriteValue(s, a, v, f, wide, false, pt);
}
CUresult MemOpWriteV2(CUstream s, CUdeviceptr a, uint64_t v, unsigned f, bool wide, bool pt) {
  return sim::WriteValue(s, a, v, f, wide, true, pt);
}
}  // namespace

extern "C" {

FGPU_MEMOP_VARIANTS(cuStreamWaitValue32, cuuint32_t, false, MemOpWait, MemOpWait)
FGPU_MEMOP_VARIANTS(cuStreamWaitValue64, cuuint64_t, true, MemOpWait, MemOpWait)
FGPU_MEMOP_VARIANTS(cuStreamWriteValue32, cuuint32_t, false, MemOpWriteV1, MemOpWriteV2)
FGPU_MEMOP_VARIANTS(cuStreamWriteValue64, cuuint64_t, true, MemOpWriteV1, MemOpWriteV2)
#undef FGPU_MEMOP_VARIANTS

CUresult cuStreamBatchMemOp(CUstream stream, unsigned int count, CUstreamBatchMemOpParams* paramArray,
                            unsigned int flags) {
  return sim::Guarded([&] { return sim::BatchMemOp(stream, count, paramArray, flags, false, false); });
}
CUresult cuStreamBatchMemOp_ptsz(CUstream stream, unsigned int count, CUstreamBatchMemOpParams* paramArray,
                                 unsigned int flags) {
  return sim::Guarded([&] { return sim::BatchMemOp(stream, count, paramArray, flags, false, true); });
}
CUresult cuStreamBatchMemOp_v2(CUstream stream, unsigned int count, CUstreamBatchMemOpParams* paramArray,
                               unsigned int flags) {
  return sim::Guarded([&] { return sim::BatchMemOp(stream, count, paramArray, flags, true, false); });
}
CUresult cuStreamBatchMemOp_v2_ptsz(CUstream stream, unsigned int count, CUstreamBatchMemOpParams* paramArray,
                                    unsigned int flags) {
  return sim::Guarded([&] { return sim::BatchMemOp(stream, count, paramArray, flags, true, true); });
}

}  // extern "C"
