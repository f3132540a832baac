// Ledger: the workload side of a slice (see slice.h).
//
// Threads of one process share the process's slot. The protocol numbers a journal's ops, so
// each journal runs one op at a time: a slot has kLanes lanes per device, each with its own
// journal and charge, and a thread runs its op on an idle lane, picked with a non-blocking try
// on a flag in this process's private memory (docs/slice-format.md, "Lanes"). A thread stopped
// inside an op holds one lane only; a thread retries only when every lane of the device is held
// as it looks, e.g. when more than kLanes threads of this process are inside a ledger op on that
// device at once. The flags are not shared memory: a crash takes every holder and waiter with
// it, so no other process can ever wait on them.
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "slice/ledger_counters.h"
#include "slice/ledger_protocol.h"
#include "slice/process_liveness.h"
#include "slice/slice.h"
#include "slice/slice_files.h"

namespace fgpu::slice {

// A failed Reserve reaps at most this often per process: a scan costs one kill() and one
// /proc read per occupied slot, and a workload at its cap may fail thousands of times a second.
constexpr int64_t kAutoReapIntervalNs = 1'000'000;

namespace {

// A lane's busy flag, alone on its cache line so that threads on different lanes do not
// bounce one line between them.
struct alignas(64) LaneFlag {
  std::atomic<uint32_t> busy{0};
};

// Everything of one attached ledger; Ledger::Impl is this, named so that the file-local
// registry and fork handler below can reach it.
struct AttachedLedger {
  MappedFile limits;
  MappedFile ledger;
  CrashPlan crash;
  LedgerProtocol protocol;
  ProcessId self;
  int slot = -1;
  int device_count = 0;
  LaneFlag lanes[kMaxDevices][kLanes];
  std::atomic<int64_t> last_auto_reap_ns{INT64_MIN / 2};
  Ledger* owner = nullptr;
  AttachedLedger* next = nullptr;  // the process's list of attached ledgers (never unlinked)
};

}  // namespace

struct Ledger::Impl : AttachedLedger {};

namespace {

// Attached ledgers, for Attach's "same files → same Ledger" and the fork handler. Both are
// constant-initialised: the interposer must not run global constructors.
constinit std::atomic<AttachedLedger*> g_attached{nullptr};
constinit std::mutex g_attach_mutex;
constinit bool g_fork_handler_installed = false;

// The lane a thread tries first, + 1 (0: not chosen yet). Threads get consecutive lanes as they
// first come, and move to where they found room, so they spread over the lanes. Initial-exec
// TLS: no allocation or lock on a thread's first access.
constinit thread_local uint32_t t_lane_hint __attribute__((tls_model("initial-exec"))) = 0;
constinit std::atomic<uint32_t> g_next_lane_hint{0};

void PauseOrYield(int* spins) {
  // Only when all kLanes lanes are busy: their holders are threads of this process inside an op
  // (tens of ns). Yield only if one was preempted there, so that it can finish.
  if (++*spins < 256) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  } else {
    sched_yield();
  }
}

bool TryLane(LaneFlag& flag) {
  return flag.busy.load(std::memory_order_relaxed) == 0 && flag.busy.exchange(1, std::memory_order_acquire) == 0;
}

// Holds one lane of `device` for one op: an idle one, or a given one (tests).
class LaneHold {
 public:
  // Tries the lanes in `preferred` (a bit per lane) first, then the others, each time from
  // the thread's hint, with a non-blocking try; only when all kLanes are busy does it pause and
  // try again. The hint moves only when the thread left its lane because it was busy, not when
  // it followed a preference, so threads keep their spread.
  LaneHold(AttachedLedger& impl, int device, uint32_t preferred) : flags_(impl.lanes[device]) {
    uint32_t hint = t_lane_hint;
    if (hint == 0) {
      hint = g_next_lane_hint.fetch_add(1, std::memory_order_relaxed) % kLanes + 1;
      t_lane_hint = hint;
    }
    const int start = static_cast<int>(hint - 1);
    constexpr uint32_t kAll = (uint32_t{1} << kLanes) - 1;
    preferred &= kAll;
    for (int spins = 0;; PauseOrYield(&spins)) {
      for (const uint32_t mask : {preferred, kAll & ~preferred}) {
        if (mask == 0) continue;
        for (int i = 0; i < kLanes; ++i) {
          const int lane = (start + i) & (kLanes - 1);
          if ((mask >> lane & 1) == 0 || !TryLane(flags_[lane])) continue;
          if (mask != preferred && lane != start) t_lane_hint = static_cast<uint32_t>(lane + 1);
          lane_ = lane;
          return;
        }
      }
    }
  }
  struct Exactly {
    int lane;
  };
  LaneHold(AttachedLedger& impl, int device, Exactly exactly) : flags_(impl.lanes[device]), lane_(exactly.lane) {
    for (int spins = 0; !TryLane(flags_[lane_]); PauseOrYield(&spins)) {
    }
  }
  ~LaneHold() { flags_[lane_].busy.store(0, std::memory_order_release); }
  LaneHold(const LaneHold&) = delete;
  LaneHold& operator=(const LaneHold&) = delete;

  int lane() const { return lane_; }

 private:
  LaneFlag* flags_;
  int lane_ = 0;
};

int64_t MonotonicNs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

ProcessId CurrentProcess() {
  const int32_t pid = ::getpid();
  return ProcessId{pid, ReadStartTime(pid)};
}

// Takes over what a previous image of this process (before an exec: same pid, same start
// time) left in the ledger: its device memory died with the image, so its charges go.
// Returns the slot to keep, or -1.
int AdoptOwnSlots(LedgerProtocol& protocol, const ProcessId& self) {
  int kept = -1;
  for (int slot = 0; slot < kMaxProcesses; ++slot) {
    const SlotIdentity identity = protocol.Identity(slot);
    if (!(identity.process == self)) continue;
    // A REAPING slot naming us may be one another thread of ours is reaping right now.
    if (identity.state != layout::kLive && identity.state != layout::kClaiming) continue;
    protocol.Settle(slot, /*reaping=*/false);
    if (kept < 0 && protocol.MakeLive(slot, self)) {
      kept = slot;
    } else {
      protocol.Free(slot, self, identity.state);
    }
  }
  return kept;
}

// In a forked child: the inherited slots belong to the parent. Claim new ones, without
// allocating (the child of a multi-threaded parent may only call async-signal-safe code).
void ClaimSlotsInForkedChild() {
  const ProcessId self = CurrentProcess();
  for (AttachedLedger* impl = g_attached.load(std::memory_order_acquire); impl != nullptr;
       impl = impl->next) {
    for (auto& device : impl->lanes) {
      for (LaneFlag& flag : device) flag.busy.store(0, std::memory_order_relaxed);  // held by parent threads
    }
    impl->self = self;
    impl->slot = -1;
    if (self.start_time == 0) continue;  // cannot identify ourselves: fail closed
    impl->slot = impl->protocol.Claim(self);
    if (impl->slot < 0 && impl->protocol.ReapDead(self) > 0) impl->slot = impl->protocol.Claim(self);
    if (impl->slot < 0) CountIn(impl->ledger.base(), Counter::kNoFreeSlot);  // every Reserve refuses
  }
}

}  // namespace

Result<Ledger*> Ledger::Attach(const char* dir) {
  if (dir == nullptr || *dir == '\0') return Status::InvalidArgument("slice directory is empty");
  const std::string base(dir);
  std::lock_guard<std::mutex> lock(g_attach_mutex);

  Result<MappedFile> limits = MapLimits(base + "/" + kLimitsFileName, /*writable=*/false, /*keep_fd=*/false);
  if (!limits.ok()) return limits.status();
  const uint32_t device_count = reinterpret_cast<const layout::LimitsHeader*>(limits->base())->device_count;
  Result<MappedFile> ledger = MapLedger(base + "/" + kLedgerFileName, device_count, /*keep_fd=*/false);
  if (!ledger.ok()) return ledger.status();
  for (AttachedLedger* impl = g_attached.load(std::memory_order_acquire); impl != nullptr;
       impl = impl->next) {
    if (impl->ledger.device() == ledger->device() && impl->ledger.inode() == ledger->inode())
      return impl->owner;
  }

  const ProcessId self = CurrentProcess();
  if (self.start_time == 0)
    return Status::Unavailable("/proc/self/stat: cannot read this process's start time");

  auto* impl = new Impl;
  impl->limits = std::move(*limits);
  impl->ledger = std::move(*ledger);
  impl->crash.Arm(std::getenv(kCrashEnv));
  impl->protocol = LedgerProtocol(impl->ledger.base(), impl->limits.base(), device_count, &impl->crash);
  impl->self = self;
  impl->device_count = static_cast<int>(device_count);

  impl->protocol.ReapDead(self);
  impl->slot = AdoptOwnSlots(impl->protocol, self);
  if (impl->slot < 0) impl->slot = impl->protocol.Claim(self);
  if (impl->slot < 0 && impl->protocol.ReapDead(self) > 0) impl->slot = impl->protocol.Claim(self);
  if (impl->slot < 0) {
    CountIn(impl->ledger.base(), Counter::kNoFreeSlot);
    delete impl;
    return Status::ResourceExhausted(base + "/" + kLedgerFileName + ": all " + std::to_string(kMaxProcesses) +
                                     " process slots are held by live processes");
  }

  auto* attached = new Ledger;
  attached->impl_ = impl;
  impl->owner = attached;
  impl->next = g_attached.load(std::memory_order_relaxed);
  g_attached.store(impl, std::memory_order_release);
  if (!g_fork_handler_installed) {
    g_fork_handler_installed = pthread_atfork(nullptr, nullptr, ClaimSlotsInForkedChild) == 0;
  }
  return attached;
}

int Ledger::device_count() const { return impl_->device_count; }

int Ledger::FindDevice(const char* uuid) const {
  if (uuid == nullptr) return -1;
  for (int device = 0; device < impl_->device_count; ++device) {
    if (strcasecmp(device_uuid(device), uuid) == 0) return device;
  }
  return -1;
}

const char* Ledger::device_uuid(int device) const {
  if (device < 0 || device >= impl_->device_count) return "";
  return reinterpret_cast<const layout::LimitsDevice*>(impl_->limits.base() +
                                                       sizeof(layout::LimitsHeader))[device]
      .uuid;
}

uint64_t Ledger::Cap(int device) const {
  if (device < 0 || device >= impl_->device_count) return 0;
  return impl_->protocol.Cap(device);
}

uint64_t Ledger::Used(int device) const {
  if (device < 0 || device >= impl_->device_count) return 0;
  return impl_->protocol.Used(device);
}

uint64_t Ledger::ChargedByThisProcess(int device) const {
  if (device < 0 || device >= impl_->device_count || impl_->slot < 0) return 0;
  return impl_->protocol.Charged(impl_->slot, device);
}

namespace {

// Lane choice keeps the lanes near balance (docs/slice-format.md, "Lanes"): a Reserve prefers
// a lane that is negative (refilling it), a Release a lane that holds at least the amount. Left
// to the hint alone, memory allocated by one thread and freed by another would move charge
// from lane to lane without bound.
bool ReserveOn(AttachedLedger& impl, int device, uint64_t bytes, int lane) {
  if (lane < 0) {
    LaneHold hold(impl, device, impl.protocol.NegativeLanes(impl.slot, device));
    return impl.protocol.Apply(impl.slot, hold.lane(), device, static_cast<int64_t>(bytes), /*check_cap=*/true);
  }
  LaneHold hold(impl, device, LaneHold::Exactly{lane});
  return impl.protocol.Apply(impl.slot, lane, device, static_cast<int64_t>(bytes), /*check_cap=*/true);
}

// `lane` < 0: any idle lane.
bool ReserveBytes(AttachedLedger& impl, int device, uint64_t bytes, int lane) {
  if (device < 0 || device >= impl.device_count || impl.slot < 0) return false;
  if (bytes == 0) return true;
  if (bytes > layout::kMaxBytes) return false;  // no cap is that large
  if (ReserveOn(impl, device, bytes, lane)) return true;
  // Slow path: maybe a dead process still holds memory under the cap.
  const int64_t now = MonotonicNs();
  int64_t last = impl.last_auto_reap_ns.load(std::memory_order_relaxed);
  if (now - last < kAutoReapIntervalNs ||
      !impl.last_auto_reap_ns.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
    return false;
  }
  if (impl.protocol.ReapDead(impl.self) == 0) return false;
  return ReserveOn(impl, device, bytes, lane);
}

void ReleaseBytes(AttachedLedger& impl, int device, uint64_t bytes, int lane) {
  if (device < 0 || device >= impl.device_count || impl.slot < 0 || bytes == 0) return;
  // Clamped to what the slot holds, a defence against a double release. When one pass over the
  // lanes already shows enough, nothing is clamped. Otherwise the clamp uses a snapshot
  // (LedgerProtocol::SlotCharge): memory being released was reserved, and its reserve
  // committed, before this call began, so the snapshot counts it and an honest release is never
  // cut short (one pass could miss it: another thread's reserve on a lane already read and its
  // release on a lane not yet read). Two threads releasing the same memory at once can both
  // pass the clamp; the device total's own clamp still keeps the total from wrapping.
  int64_t lanes[kLanes];
  int64_t charge = impl.protocol.SlotChargeOnePass(impl.slot, device, lanes);
  if (charge < 0 || static_cast<uint64_t>(charge) < bytes) charge = impl.protocol.SlotCharge(impl.slot, device, lanes);
  if (charge <= 0) return;
  const uint64_t amount = std::min<uint64_t>(bytes, static_cast<uint64_t>(charge));
  const int64_t delta = -static_cast<int64_t>(amount);
  if (lane < 0) {
    uint32_t enough = 0;
    for (int k = 0; k < kLanes; ++k) {
      if (lanes[k] >= static_cast<int64_t>(amount)) enough |= uint32_t{1} << k;
    }
    LaneHold hold(impl, device, enough);
    impl.protocol.Apply(impl.slot, hold.lane(), device, delta, /*check_cap=*/false);
  } else {
    LaneHold hold(impl, device, LaneHold::Exactly{lane});
    impl.protocol.Apply(impl.slot, lane, device, delta, /*check_cap=*/false);
  }
}

const layout::LimitsDevice* LimitsDeviceOf(const AttachedLedger& impl, int device) {
  return reinterpret_cast<const layout::LimitsDevice*>(impl.limits.base() + sizeof(layout::LimitsHeader)) + device;
}

}  // namespace

bool Ledger::Reserve(int device, uint64_t bytes) { return ReserveBytes(*impl_, device, bytes, /*lane=*/-1); }

bool Ledger::ReserveOverCap(int device, uint64_t bytes) {
  AttachedLedger& impl = *impl_;
  if (device < 0 || device >= impl.device_count || impl.slot < 0 || bytes > layout::kMaxBytes) return false;
  if (bytes == 0) return true;
  LaneHold hold(impl, device, impl.protocol.NegativeLanes(impl.slot, device));
  return impl.protocol.Apply(impl.slot, hold.lane(), device, static_cast<int64_t>(bytes), /*check_cap=*/false);
}

void Ledger::Release(int device, uint64_t bytes) { ReleaseBytes(*impl_, device, bytes, /*lane=*/-1); }

uint32_t Ledger::ComputeShare(int device) const {
  if (device < 0 || device >= impl_->device_count) return 0;
  const uint32_t share = __atomic_load_n(&LimitsDeviceOf(*impl_, device)->compute_share, __ATOMIC_ACQUIRE);
  return std::clamp<uint32_t>(share, 1, 100);
}

ComputeMode Ledger::GetComputeMode(int device) const {
  if (device < 0 || device >= impl_->device_count) return ComputeMode::kCap;
  const uint32_t word = __atomic_load_n(layout::ComputeWord(LimitsDeviceOf(*impl_, device)), __ATOMIC_ACQUIRE);
  const uint8_t mode = layout::ComputeWordMode(word);
  return mode <= layout::kMaxComputeMode ? static_cast<ComputeMode>(mode) : ComputeMode::kCap;
}

Tier Ledger::GetTier(int device) const {
  if (device < 0 || device >= impl_->device_count) return Tier::kBatch;
  const uint32_t word = __atomic_load_n(layout::ComputeWord(LimitsDeviceOf(*impl_, device)), __ATOMIC_ACQUIRE);
  const uint8_t tier = layout::ComputeWordTier(word);
  return tier <= layout::kMaxTier ? static_cast<Tier>(tier) : Tier::kBatch;
}

int Ledger::ReapDeadProcesses() { return impl_->protocol.ReapDead(impl_->self); }

uint64_t Ledger::LimitsGeneration() const {
  const auto* header = reinterpret_cast<const layout::LimitsHeader*>(impl_->limits.base());
  return __atomic_load_n(&header->generation, __ATOMIC_ACQUIRE);
}

void Ledger::CountOomRefusal() {
  if (impl_->slot >= 0) CountIn(impl_->ledger.base(), Counter::kOomRefusals);
}

void Ledger::CountFailClosedRefusal() { CountIn(impl_->ledger.base(), Counter::kFailClosedRefusals); }

void Ledger::CountComputeUnenforced() { CountIn(impl_->ledger.base(), Counter::kComputeUnenforced); }

LedgerCounters Ledger::Counters() const { return ReadCounters(impl_->ledger.base()); }

bool Ledger::CountPassThrough(const char* dir) {
  if (dir == nullptr || *dir == '\0') return false;
  const std::string base(dir);
  Result<MappedFile> limits = MapLimits(base + "/" + kLimitsFileName, /*writable=*/false, /*keep_fd=*/false);
  if (!limits.ok()) return false;
  const uint32_t device_count = reinterpret_cast<const layout::LimitsHeader*>(limits->base())->device_count;
  Result<MappedFile> ledger = MapLedger(base + "/" + kLedgerFileName, device_count, /*keep_fd=*/false);
  if (!ledger.ok()) return false;
  CountIn(ledger->base(), Counter::kPassThrough);
  return true;  // both mappings go with `limits` and `ledger`
}

int Ledger::TEST_slot() const { return impl_->slot; }

bool Ledger::TEST_ReserveOnLane(int device, int lane, uint64_t bytes) {
  if (lane < 0 || lane >= kLanes) return false;
  return ReserveBytes(*impl_, device, bytes, lane);
}

void Ledger::TEST_ReleaseOnLane(int device, int lane, uint64_t bytes) {
  if (lane < 0 || lane >= kLanes) return;
  ReleaseBytes(*impl_, device, bytes, lane);
}

int64_t Ledger::TEST_LaneCharge(int device, int lane) const {
  if (device < 0 || device >= impl_->device_count || lane < 0 || lane >= kLanes || impl_->slot < 0) return 0;
  return impl_->protocol.LaneCharge(impl_->slot, device, lane);
}

bool Ledger::TEST_PauseAt(const char* step) {
  const CrashStep parsed = CrashStepFromName(step, step != nullptr ? std::strlen(step) : 0);
  if (parsed == CrashStep::kNone) return false;
  impl_->crash.ArmPause(parsed);
  return true;
}

bool Ledger::TEST_IsPaused() const { return impl_->crash.Paused(); }

void Ledger::TEST_ResumePaused() { impl_->crash.Resume(); }

}  // namespace fgpu::slice
