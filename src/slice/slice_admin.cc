// SliceAdmin: the creator's side of a slice (see slice.h).
//
// The admin (the agent, or `fgpu run`) may serve many slices, so a hostile workload must not
// be able to crash it through its slice's ledger: reads go through a validated copy (pread), and
// the rare writes through a mapping checked to still have its size.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <new>

#include "slice/ledger_counters.h"
#include "slice/ledger_protocol.h"
#include "slice/process_liveness.h"
#include "slice/slice.h"
#include "slice/slice_files.h"

namespace fgpu::slice {

struct SliceAdmin::Impl {
  std::string dir;
  MappedFile limits;
  int ledger_fd = -1;  // read-only: Usage() copies through it
  uint32_t device_count = 0;
  MappedFile ledger;  // mapped on first write (TEST_ methods, ReapDeadProcesses) only
  SliceSpec spec;
  LedgerProtocol protocol;  // over `ledger` once mapped
  ProcessId self;

  ~Impl() {
    if (ledger_fd >= 0) ::close(ledger_fd);
  }
  std::string ledger_path() const { return dir + "/" + kLedgerFileName; }
  // The mapping the write paths use; false when the ledger cannot be mapped or has shrunk.
  bool MapForWriting() {
    if (ledger.base() == nullptr) {
      Result<MappedFile> mapped = MapLedger(ledger_path(), device_count, /*keep_fd=*/true);
      if (!mapped.ok()) return false;
      ledger = std::move(*mapped);
      protocol = LedgerProtocol(ledger.base(), limits.base(), device_count, /*crash=*/nullptr);
    }
    return ledger.StillWhole();
  }
};

namespace {

// 64-byte aligned: the protocol's 128-bit loads need 16, the layout assumes cache lines.
struct AlignedDelete {
  void operator()(char* bytes) const { ::operator delete[](bytes, std::align_val_t(64)); }
};
using LedgerCopy = std::unique_ptr<char[], AlignedDelete>;

// The ledger as it is now, validated; null with `problem` set when it cannot be read or is bad.
LedgerCopy ReadLedgerCopy(int fd, const std::string& path, uint32_t device_count, std::string* problem) {
  const uint64_t size = layout::LedgerFileSize(device_count);
  LedgerCopy copy(static_cast<char*>(::operator new[](size + 1, std::align_val_t(64))));
  size_t got = 0;
  while (got <= size) {  // one byte more than a ledger: a grown file is as wrong as a short one
    const ssize_t n = ::pread(fd, copy.get() + got, size + 1 - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *problem = path + ": " + std::strerror(errno);
      return nullptr;
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (Status valid = ValidateLedgerCopy(path, copy.get(), got, device_count); !valid.ok()) {
    *problem = valid.message();
    return nullptr;
  }
  return copy;
}

}  // namespace

namespace {

Status RemoveFile(const std::string& path, bool must_exist) {
  if (::unlink(path.c_str()) == 0) return Status::Ok();
  const int err = errno;
  if (err == ENOENT && !must_exist) return Status::Ok();
  if (err == ENOENT) return Status::NotFound(path + ": no such file");
  return Status::Unavailable(path + ": unlink: " + std::strerror(err));
}

}  // namespace

SliceAdmin::SliceAdmin(Impl* impl) : impl_(impl) {}
SliceAdmin::SliceAdmin(SliceAdmin&& other) noexcept : impl_(other.impl_) { other.impl_ = nullptr; }
SliceAdmin& SliceAdmin::operator=(SliceAdmin&& other) noexcept {
  if (this != &other) {
    delete impl_;
    impl_ = other.impl_;
    other.impl_ = nullptr;
  }
  return *this;
}
SliceAdmin::~SliceAdmin() { delete impl_; }

Result<SliceAdmin> SliceAdmin::Create(const std::string& dir, const SliceSpec& spec, const FileOwner* owner) {
  if (Status status = WriteSliceFiles(dir, spec, owner); !status.ok()) return status;
  return Open(dir);
}

Result<SliceAdmin> SliceAdmin::Open(const std::string& dir) {
  Result<MappedFile> limits = MapLimits(dir + "/" + kLimitsFileName, /*writable=*/true, /*keep_fd=*/true);
  if (!limits.ok()) return limits.status();
  const uint32_t device_count = reinterpret_cast<const layout::LimitsHeader*>(limits->base())->device_count;
  const std::string ledger_path = dir + "/" + kLedgerFileName;
  // O_NONBLOCK: a FIFO planted under the name must not hang the admin; the copy then fails.
  const int ledger_fd = ::open(ledger_path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (ledger_fd < 0) {
    const int err = errno;
    return err == ENOENT ? Status::NotFound(ledger_path + ": no such file")
                         : Status::Unavailable(ledger_path + ": " + std::strerror(err));
  }
  struct stat info {};
  if (::fstat(ledger_fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(ledger_fd);
    return Status::Corrupt(ledger_path + ": not a regular file");
  }
  // A ledger its user scribbled over still opens: Usage() reports it (degraded), and the slice,
  // whose limits are intact, is not re-created under its processes.
  const int32_t pid = ::getpid();
  const uint64_t start_time = ReadStartTime(pid);
  if (start_time == 0) {
    ::close(ledger_fd);
    return Status::Unavailable("/proc/self/stat: cannot read this process's start time");
  }

  auto* impl = new Impl;
  impl->dir = dir;
  impl->limits = std::move(*limits);
  impl->ledger_fd = ledger_fd;
  impl->device_count = device_count;
  impl->spec = SpecFromLimits(impl->limits);
  impl->self = ProcessId{pid, start_time};
  return SliceAdmin(impl);
}

const SliceSpec& SliceAdmin::spec() const { return impl_->spec; }

Status SliceAdmin::SetMemoryCap(int device, uint64_t cap) {
  const int count = static_cast<int>(impl_->spec.devices.size());
  if (device < 0 || device >= count) {
    return Status::InvalidArgument("device " + std::to_string(device) + " is not in slice " + impl_->spec.id +
                                   " (it has " + std::to_string(count) + ")");
  }
  if (cap > layout::kMaxBytes) {
    return Status::InvalidArgument("memory cap " + std::to_string(cap) + " exceeds 1 PiB");
  }
  auto* header = reinterpret_cast<layout::LimitsHeader*>(impl_->limits.base());
  auto* devices =
      reinterpret_cast<layout::LimitsDevice*>(impl_->limits.base() + sizeof(layout::LimitsHeader));
  // One aligned 64-bit store: readers see the old cap or the new one, never a mix. The
  // generation is bumped after, so whoever sees the new generation sees the new cap.
  __atomic_store_n(&devices[device].memory_cap, cap, __ATOMIC_RELEASE);
  __atomic_fetch_add(&header->generation, 1, __ATOMIC_ACQ_REL);
  impl_->spec.devices[device].memory_cap = cap;
  return Status::Ok();
}

Status SliceAdmin::SetCompute(int device, uint32_t share, ComputeMode mode, Tier tier) {
  const int count = static_cast<int>(impl_->spec.devices.size());
  if (device < 0 || device >= count) {
    return Status::InvalidArgument("device " + std::to_string(device) + " is not in slice " + impl_->spec.id +
                                   " (it has " + std::to_string(count) + ")");
  }
  if (Status status = ValidateCompute(share, mode, tier); !status.ok()) return status;
  auto* header = reinterpret_cast<layout::LimitsHeader*>(impl_->limits.base());
  auto* devices =
      reinterpret_cast<layout::LimitsDevice*>(impl_->limits.base() + sizeof(layout::LimitsHeader));
  layout::AliasedU32* compute = layout::ComputeWord(&devices[device]);
  // Two aligned 32-bit stores, then the generation: each field is read whole, and whoever sees
  // the new generation sees both. Only the admin writes limits, so keeping the reserved bits
  // needs no CAS.
  const uint16_t reserved = layout::ComputeWordReserved(__atomic_load_n(compute, __ATOMIC_RELAXED));
  __atomic_store_n(&devices[device].compute_share, share, __ATOMIC_RELEASE);
  __atomic_store_n(compute,
                   layout::PackComputeWord(static_cast<uint8_t>(mode), static_cast<uint8_t>(tier), reserved),
                   __ATOMIC_RELEASE);
  __atomic_fetch_add(&header->generation, 1, __ATOMIC_ACQ_REL);
  DeviceLimit& limit = impl_->spec.devices[device];
  limit.compute_share = share;
  limit.compute_mode = mode;
  limit.tier = tier;
  return Status::Ok();
}

UsageSnapshot SliceAdmin::Usage() const {
  UsageSnapshot snapshot;
  const int count = static_cast<int>(impl_->spec.devices.size());
  const auto* devices =
      reinterpret_cast<const layout::LimitsDevice*>(impl_->limits.base() + sizeof(layout::LimitsHeader));
  for (int device = 0; device < count; ++device) {
    snapshot.caps.push_back(__atomic_load_n(&devices[device].memory_cap, __ATOMIC_ACQUIRE));
  }
  const LedgerCopy copy = ReadLedgerCopy(impl_->ledger_fd, impl_->ledger_path(), impl_->device_count, &snapshot.problem);
  if (copy == nullptr) return snapshot;
  const LedgerProtocol protocol(copy.get(), impl_->limits.base(), impl_->device_count, /*crash=*/nullptr);
  for (int device = 0; device < count; ++device) snapshot.used.push_back(protocol.Used(device));
  snapshot.counters = ReadCounters(copy.get());
  for (int slot = 0; slot < kMaxProcesses; ++slot) {
    const SlotIdentity identity = protocol.Identity(slot);
    if (identity.state != layout::kLive) continue;
    ProcessUsage process;
    process.pid = identity.process.pid;
    process.start_time = identity.process.start_time;
    for (int device = 0; device < count; ++device) process.charged.push_back(protocol.Charged(slot, device));
    snapshot.processes.push_back(std::move(process));
  }
  return snapshot;
}

Result<LedgerCounters> SliceAdmin::Counters() const {
  std::string problem;
  const LedgerCopy copy = ReadLedgerCopy(impl_->ledger_fd, impl_->ledger_path(), impl_->device_count, &problem);
  if (copy == nullptr) return Status::Corrupt(problem);
  return ReadCounters(copy.get());
}

int SliceAdmin::ReapDeadProcesses() {
  if (!impl_->MapForWriting()) return 0;
  return impl_->protocol.ReapDead(impl_->self);
}

Status SliceAdmin::Remove() {
  const std::string& dir = impl_->dir;
  Status status = RemoveFile(dir + "/" + kLimitsFileName, /*must_exist=*/true);
  Status ledger_status = RemoveFile(dir + "/" + kLedgerFileName, /*must_exist=*/true);
  if (status.ok()) status = ledger_status;
  // Leftovers of a creator that died between write and rename.
  for (const char* name : {kLimitsFileName, kLedgerFileName}) {
    (void)RemoveFile(dir + "/." + name + ".tmp", /*must_exist=*/false);
  }
  if (::rmdir(dir.c_str()) != 0 && status.ok()) {
    status = Status::Unavailable(dir + ": rmdir: " + std::strerror(errno));
  }
  return status;  // the mappings stay valid until this object is destroyed
}

Result<int> SliceAdmin::TEST_PlantProcess(int32_t pid, uint64_t start_time,
                                          const std::vector<uint64_t>& charged) {
  if (!impl_->MapForWriting()) return Status::Unavailable(impl_->ledger_path() + ": cannot be mapped");
  const ProcessId planted{pid, start_time};
  const int slot = impl_->protocol.Claim(planted);
  if (slot < 0) return Status::ResourceExhausted("no free slot");
  for (size_t device = 0; device < charged.size() && device < impl_->spec.devices.size(); ++device) {
    if (charged[device] == 0) continue;
    impl_->protocol.Apply(slot, /*lane=*/0, static_cast<int>(device), static_cast<int64_t>(charged[device]),
                          /*check_cap=*/false);
  }
  return slot;
}

uint64_t SliceAdmin::TEST_TotalSlotCharges(int device) const {
  if (!impl_->MapForWriting()) return ~uint64_t{0};
  uint64_t total = 0;  // two's complement: negative lanes count
  for (int slot = 0; slot < kMaxProcesses; ++slot)
    total += static_cast<uint64_t>(impl_->protocol.SlotCharge(slot, device));
  return total;
}

}  // namespace fgpu::slice
