// Ledger: the workload side of a slice (see slice.h).
//
// Threads of one process share the process's slot, and a slot's ops must run one at a time
// (the protocol numbers them). So each device has a "lane": a flag in this process's private
// memory, held for the few instructions of one Apply. It is not shared memory: a crash takes
// every holder and waiter with it, so no other process can ever wait on it.
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "slice/ledger_protocol.h"
#include "slice/process_liveness.h"
#include "slice/slice.h"
#include "slice/slice_files.h"

namespace fgpu::slice {

// A failed Reserve reaps at most this often per process: a scan costs one kill() and one
// /proc read per occupied slot, and a workload at its cap may fail thousands of times a second.
constexpr int64_t kAutoReapIntervalNs = 1'000'000;

namespace {

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
  std::atomic<uint32_t> lanes[kMaxDevices] = {};
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

class LaneGuard {
 public:
  explicit LaneGuard(std::atomic<uint32_t>& lane) : lane_(lane) {
    int spins = 0;
    while (lane_.exchange(1, std::memory_order_acquire) != 0) {
      while (lane_.load(std::memory_order_relaxed) != 0) {
        // The holder is a thread of this process inside Apply (tens of ns). Yield only if it
        // was preempted there, so that it can finish.
        if (++spins < 256) {
#if defined(__x86_64__) || defined(__i386__)
          __builtin_ia32_pause();
#endif
        } else {
          sched_yield();
        }
      }
    }
  }
  ~LaneGuard() { lane_.store(0, std::memory_order_release); }
  LaneGuard(const LaneGuard&) = delete;
  LaneGuard& operator=(const LaneGuard&) = delete;

 private:
  std::atomic<uint32_t>& lane_;
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
    for (auto& lane : impl->lanes) lane.store(0, std::memory_order_relaxed);  // held by parent threads
    impl->self = self;
    impl->slot = -1;
    if (self.start_time == 0) continue;  // cannot identify ourselves: fail closed
    impl->slot = impl->protocol.Claim(self);
    if (impl->slot < 0 && impl->protocol.ReapDead(self) > 0) impl->slot = impl->protocol.Claim(self);
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

bool Ledger::Reserve(int device, uint64_t bytes) {
  Impl& impl = *impl_;
  if (device < 0 || device >= impl.device_count || impl.slot < 0) return false;
  if (bytes == 0) return true;
  if (bytes > layout::kMaxBytes) return false;  // no cap is that large
  {
    LaneGuard lane(impl.lanes[device]);
    if (impl.protocol.Apply(impl.slot, device, static_cast<int64_t>(bytes), /*check_cap=*/true)) return true;
  }
  // Slow path: maybe a dead process still holds memory under the cap.
  const int64_t now = MonotonicNs();
  int64_t last = impl.last_auto_reap_ns.load(std::memory_order_relaxed);
  if (now - last < kAutoReapIntervalNs ||
      !impl.last_auto_reap_ns.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
    return false;
  }
  if (impl.protocol.ReapDead(impl.self) == 0) return false;
  LaneGuard lane(impl.lanes[device]);
  return impl.protocol.Apply(impl.slot, device, static_cast<int64_t>(bytes), /*check_cap=*/true);
}

void Ledger::Release(int device, uint64_t bytes) {
  Impl& impl = *impl_;
  if (device < 0 || device >= impl.device_count || impl.slot < 0 || bytes == 0) return;
  LaneGuard lane(impl.lanes[device]);
  // Under the lane nobody else changes this slot's charge, so the clamp is exact.
  const uint64_t charged = impl.protocol.Charged(impl.slot, device);
  const uint64_t amount = bytes < charged ? bytes : charged;
  if (amount == 0) return;
  impl.protocol.Apply(impl.slot, device, -static_cast<int64_t>(amount), /*check_cap=*/false);
}

int Ledger::ReapDeadProcesses() { return impl_->protocol.ReapDead(impl_->self); }

uint64_t Ledger::LimitsGeneration() const {
  const auto* header = reinterpret_cast<const layout::LimitsHeader*>(impl_->limits.base());
  return __atomic_load_n(&header->generation, __ATOMIC_ACQUIRE);
}

int Ledger::TEST_slot() const { return impl_->slot; }

}  // namespace fgpu::slice
