// SharedDevices: attaching, process slots, memory charges and reaping. The kernel
// timeline and utilization are in timeline.cc.
#include "sim/state/shared_devices.h"

#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "sim/state/config_rules.h"
#include "sim/state/process_identity.h"
#include "sim/state/shared_devices_impl.h"

namespace fgpu::sim {

using layout::kSlotCount;
using layout::kSlotFree;
using layout::kSlotLive;
using layout::ProcessSlot;

namespace {

uint64_t StartTimeOf(int32_t pid) {
  Result<ProcessStat> stat = ReadProcessStat(pid);
  return stat.ok() ? stat->start_time : 0;  // 0: compare by pid alone
}

}  // namespace

// ---- locking ---------------------------------------------------------------------------

bool LockRobust(pthread_mutex_t* mutex, bool* owner_died) {
  *owner_died = false;
  const int rc = pthread_mutex_lock(mutex);
  if (rc == 0) return true;
  if (rc == EOWNERDEAD) {
    // The owner died mid-update. Every update is ordered so that what it left is usable;
    // mark the mutex consistent (else it becomes unrecoverable at unlock) and let the
    // caller tidy up.
    pthread_mutex_consistent(mutex);
    *owner_died = true;
    return true;
  }
  return false;  // ENOTRECOVERABLE: someone unlocked without making it consistent
}

SharedDevices::Impl::Guard::Guard(Impl& impl) : mutex_(&impl.mapping.header().mutex) {
  bool owner_died = false;
  held_ = LockRobust(mutex_, &owner_died);
  if (held_ && owner_died) impl.RepairAfterOwnerDeath();
}

SharedDevices::Impl::Guard::~Guard() {
  if (held_) pthread_mutex_unlock(mutex_);
}

// ---- slots -----------------------------------------------------------------------------

bool SharedDevices::Impl::SlotLooksCorrupt(int index) const {
  const ProcessSlot& slot = mapping.slot(index);
  if (slot.pid <= 0) return true;
  for (size_t d = 0; d < config.devices.size(); ++d) {
    if (slot.charged[d] > config.devices[d].total_bytes) return true;
  }
  return false;
}

void SharedDevices::Impl::ReleaseSlot(int index) {
  // This one store releases the slot's charges: used memory is the sum over live slots.
  mapping.slot(index).state = kSlotFree;
}

bool SharedDevices::Impl::ClaimSlot() {
  for (int i = 0; i < kSlotCount; ++i) {
    const ProcessSlot& slot = mapping.slot(i);
    if (slot.state == kSlotLive && slot.pid == pid && slot.start_time == start_time) {
      own_slot = i;  // registered already (attached twice, or by another object of ours)
      own_generation = slot.generation;
      return true;
    }
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    for (int i = 0; i < kSlotCount; ++i) {
      ProcessSlot& slot = mapping.slot(i);
      if (slot.state != kSlotFree) continue;
      const uint64_t epoch = NowNs() / layout::kBucketNs;
      slot.pid = pid;
      slot.start_time = start_time;
      std::memset(slot.charged, 0, sizeof(slot.charged));
      std::memset(slot.last_busy_ns, 0, sizeof(slot.last_busy_ns));
      slot.mig_device_plus1 = 0;  // a new process is bound to no MIG instance
      slot.generation += 1;
      slot.claimed_epoch = epoch;
      // Busy time the previous owner left in the current bucket is not ours; older
      // buckets are excluded by claimed_epoch.
      for (size_t d = 0; d < config.devices.size(); ++d) {
        layout::UtilizationBucket& bucket = mapping.device(static_cast<int>(d)).buckets[epoch % layout::kBucketCount];
        if (bucket.tag == epoch + 1) bucket.slot_busy_ns[i] = 0;
      }
      OrderStores();  // the slot counts only once it is fully written
      slot.state = kSlotLive;
      own_slot = i;
      own_generation = slot.generation;
      return true;
    }
    if (attempt == 0) Reap();
  }
  own_slot = -1;
  return false;
}

bool SharedDevices::Impl::EnsureOwnSlot() {
  const int32_t current_pid = static_cast<int32_t>(::getpid());
  if (current_pid != pid) {  // we are a fork child using the parent's object
    pid = current_pid;
    start_time = StartTimeOf(pid);
    own_slot = -1;
  }
  if (own_slot >= 0) {
    const ProcessSlot& slot = mapping.slot(own_slot);
    if (slot.state == kSlotLive && slot.pid == pid && slot.start_time == start_time &&
        slot.generation == own_generation) {
      return true;
    }
  }
  return ClaimSlot();
}

uint64_t SharedDevices::Impl::UsedBytes(int device) {
  const uint64_t total = config.devices[device].total_bytes;
  uint64_t used = 0;
  for (int i = 0; i < kSlotCount; ++i) {
    const ProcessSlot& slot = mapping.slot(i);
    if (slot.state != kSlotLive) continue;
    if (slot.pid <= 0 || slot.charged[device] > total) {  // corrupt: must not poison the device
      if (i == own_slot && slot.pid == pid) {
        mapping.slot(i).charged[device] = 0;  // keep our registration; the charge is unknowable
      } else {
        ReleaseSlot(i);
      }
      continue;
    }
    used += slot.charged[device];  // each term <= 1 PiB: 128 of them cannot overflow
  }
  return used;
}

int SharedDevices::Impl::Reap() {
  int reaped = 0;
  for (int i = 0; i < kSlotCount; ++i) {
    const ProcessSlot& slot = mapping.slot(i);
    if (slot.state == kSlotFree) continue;
    if (i == own_slot && slot.state == kSlotLive && slot.pid == pid) continue;
    if (slot.state != kSlotLive || SlotLooksCorrupt(i) || IsProcessGone(slot.pid, slot.start_time)) {
      ReleaseSlot(i);
      ++reaped;
    }
  }
  return reaped;
}

void SharedDevices::Impl::RepairAfterOwnerDeath() {
  for (int i = 0; i < kSlotCount; ++i) {
    const ProcessSlot& slot = mapping.slot(i);
    if (slot.state != kSlotFree && (slot.state != kSlotLive || SlotLooksCorrupt(i))) ReleaseSlot(i);
  }
  for (size_t d = 0; d < config.devices.size(); ++d) {
    layout::DeviceState& device = mapping.device(static_cast<int>(d));
    if (device.pending_tail - device.pending_head > layout::kPendingCapacity) device.pending_head = device.pending_tail;
  }
  RepairMig();
}

// ---- SharedDevices ---------------------------------------------------------------------

SharedDevices::SharedDevices(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SharedDevices::~SharedDevices() = default;

Result<std::unique_ptr<SharedDevices>> SharedDevices::Attach(const SimConfig& config,
                                                             const std::string& segment_name) try {
  Status s = ValidateSimConfig(config);
  if (!s.ok()) return s;
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  s = internal::CompleteDeviceIdentities(&impl->config.devices, {});
  if (!s.ok()) return s;
  impl->name = segment_name;
  Result<SegmentMapping> mapping = OpenOrCreateSegment(segment_name, impl->config);
  if (!mapping.ok()) return mapping.status();
  impl->mapping = std::move(mapping).value();
  for (size_t d = 0; d < impl->config.devices.size(); ++d) {
    if (impl->mapping.device(static_cast<int>(d)).total_bytes != impl->config.devices[d].total_bytes) {
      return Status::Corrupt("segment " + segment_name + " is corrupt: device " + std::to_string(d) +
                             " memory differs from its configuration; remove it with `fgpu sim reset`");
    }
  }
  impl->pid = static_cast<int32_t>(::getpid());
  impl->start_time = StartTimeOf(impl->pid);
  {
    Impl::Guard guard(*impl);
    if (!guard.held()) return Status::Unavailable("segment " + segment_name + ": its mutex is unrecoverable");
    if (!impl->ClaimSlot()) {
      return Status::ResourceExhausted("segment " + segment_name + ": all " + std::to_string(kSlotCount) +
                                       " process slots are held by live processes");
    }
  }
  return std::unique_ptr<SharedDevices>(new SharedDevices(std::move(impl)));
} catch (...) {  // std::bad_alloc: nothing may cross the C ABI above us
  return Status::Internal("out of memory while attaching the simulator segment");
}

std::string SharedDevices::DefaultSegmentName(const SimConfig& config) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "/fgpu-sim-%u-%016llx", static_cast<unsigned>(::getuid()),
                static_cast<unsigned long long>(ConfigFingerprint(config)));
  return buffer;
}

Status SharedDevices::Remove(const std::string& segment_name) { return RemoveSegment(segment_name); }

uint64_t SharedDevices::NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

int SharedDevices::device_count() const { return static_cast<int>(impl_->config.devices.size()); }
const DeviceSpec& SharedDevices::spec(int device) const {
  if (impl_->ValidDevice(device)) return impl_->config.devices[device];
  static const DeviceSpec kNoDevice = [] {  // function-local: built on first bad call, not at load
    DeviceSpec none;
    none.name.clear();
    none.total_bytes = none.granularity = none.context_overhead = 0;
    none.sm_count = none.cc_major = none.cc_minor = 0;
    return none;
  }();
  return kNoDevice;
}
const SimConfig& SharedDevices::config() const { return impl_->config; }
const std::string& SharedDevices::segment_name() const { return impl_->name; }

bool SharedDevices::TryCharge(int device, uint64_t bytes) {
  if (!impl_->ValidDevice(device)) return false;
  if (bytes == 0) return true;
  Impl::Guard guard(*impl_);
  if (!guard.held() || !impl_->EnsureOwnSlot()) return false;
  const uint64_t total = impl_->config.devices[device].total_bytes;
  for (int attempt = 0; attempt < 2; ++attempt) {
    const uint64_t used = impl_->UsedBytes(device);
    if (used <= total && total - used >= bytes && impl_->FitsInBoundInstance(device, bytes)) {
      impl_->mapping.slot(impl_->own_slot).charged[device] += bytes;  // one store: the whole update
      return true;
    }
    // Out of memory: only now pay for /proc reads to find the dead.
    if (attempt == 0 && impl_->Reap() == 0) break;
  }
  return false;
}

void SharedDevices::Credit(int device, uint64_t bytes) {
  if (!impl_->ValidDevice(device)) return;
  Impl::Guard guard(*impl_);
  if (!guard.held() || !impl_->EnsureOwnSlot()) return;
  uint64_t& charged = impl_->mapping.slot(impl_->own_slot).charged[device];
  charged -= bytes < charged ? bytes : charged;
}

uint64_t SharedDevices::ChargedByThisProcess(int device) const {
  if (!impl_->ValidDevice(device)) return 0;
  Impl::Guard guard(*impl_);
  if (!guard.held() || !impl_->EnsureOwnSlot()) return 0;
  return impl_->mapping.slot(impl_->own_slot).charged[device];
}

MemoryInfo SharedDevices::Memory(int device) {
  MemoryInfo info;
  if (!impl_->ValidDevice(device)) return info;
  info.total = impl_->config.devices[device].total_bytes;
  Impl::Guard guard(*impl_);
  if (!guard.held()) {
    info.used = info.total;  // fail safe: report nothing free
    return info;
  }
  impl_->Reap();
  const uint64_t used = impl_->UsedBytes(device);
  info.used = used < info.total ? used : info.total;
  info.free = info.total - info.used;
  return info;
}

std::vector<ProcessMemory> SharedDevices::Processes(int device) try {
  std::vector<ProcessMemory> result;
  if (!impl_->ValidDevice(device)) return result;
  Impl::Guard guard(*impl_);
  if (!guard.held()) return result;
  impl_->Reap();
  for (int i = 0; i < kSlotCount; ++i) {
    const ProcessSlot& slot = impl_->mapping.slot(i);
    if (slot.state == kSlotLive && slot.charged[device] > 0) result.push_back({slot.pid, slot.charged[device]});
  }
  return result;
} catch (...) {  // std::bad_alloc
  return {};
}

int SharedDevices::ReapDeadProcesses() {
  Impl::Guard guard(*impl_);
  return guard.held() ? impl_->Reap() : 0;
}

// ---- test hooks ------------------------------------------------------------------------

bool SharedDevices::TEST_WriteSlot(int index, int32_t pid, uint64_t start_time, int device,
                                   uint64_t charged_bytes) {
  if (index < 0 || index >= kSlotCount || !impl_->ValidDevice(device)) return false;
  Impl::Guard guard(*impl_);
  if (!guard.held() || index == impl_->own_slot) return false;
  ProcessSlot& slot = impl_->mapping.slot(index);
  slot.pid = pid;
  slot.start_time = start_time;
  std::memset(slot.charged, 0, sizeof(slot.charged));
  slot.charged[device] = charged_bytes;
  slot.mig_device_plus1 = 0;
  slot.generation += 1;
  slot.claimed_epoch = NowNs() / layout::kBucketNs;
  slot.state = kSlotLive;
  return true;
}

void SharedDevices::TEST_LockAndAbandon() {
  bool owner_died = false;
  (void)LockRobust(&impl_->mapping.header().mutex, &owner_died);
}

int SharedDevices::TEST_OwnSlot() const { return impl_->own_slot; }

// ---- environment -----------------------------------------------------------------------

Result<std::unique_ptr<SharedDevices>> AttachFromEnvironment() {
  const char* config_path = std::getenv(kConfigEnv);
  Result<SimConfig> config = LoadSimConfig(config_path != nullptr ? config_path : "");
  if (!config.ok()) return Status(config.status());
  const char* segment = std::getenv(kSegmentEnv);
  const std::string name =
      segment != nullptr && segment[0] != '\0' ? std::string(segment) : SharedDevices::DefaultSegmentName(*config);
  return SharedDevices::Attach(*config, name);
}

}  // namespace fgpu::sim
