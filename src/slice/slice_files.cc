#include "slice/slice_files.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "slice/atomic128.h"

namespace fgpu::slice {
namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

bool IsIdChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

bool EqualsIgnoreCase(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// NUL within the first `size` bytes: the field is a C string we can read safely.
bool IsTerminated(const char* field, size_t size) { return std::memchr(field, '\0', size) != nullptr; }

Status WriteAll(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::Unavailable("write: " + ErrnoText(errno));
    p += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

// Writes `bytes` to dir/.name.tmp with `mode` (exactly: umask does not apply) and `owner` (when
// given), fsyncs and renames it to dir/name, so readers never see a partial file.
Status WriteFileAtomically(const std::string& dir, const char* name, const std::vector<char>& bytes,
                           mode_t mode, const FileOwner* owner) {
  const std::string final_path = dir + "/" + name;
  const std::string temp_path = dir + "/." + name + ".tmp";
  const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Unavailable(temp_path + ": " + ErrnoText(errno));
  Status status = WriteAll(fd, bytes.data(), bytes.size());
  if (status.ok() && owner != nullptr && ::fchown(fd, owner->uid, owner->gid) != 0)
    status = Status::Unavailable(temp_path + ": fchown to uid " + std::to_string(owner->uid) + ": " + ErrnoText(errno));
  if (status.ok() && ::fchmod(fd, mode) != 0)
    status = Status::Unavailable(temp_path + ": fchmod: " + ErrnoText(errno));
  if (status.ok() && ::fsync(fd) != 0)
    status = Status::Unavailable(temp_path + ": fsync: " + ErrnoText(errno));
  ::close(fd);
  if (status.ok() && ::rename(temp_path.c_str(), final_path.c_str()) != 0) {
    status = Status::Unavailable(final_path + ": rename: " + ErrnoText(errno));
  }
  if (!status.ok()) ::unlink(temp_path.c_str());
  return status;
}

std::vector<char> BuildLimits(const SliceSpec& spec) {
  const auto count = static_cast<uint32_t>(spec.devices.size());
  std::vector<char> bytes(layout::LimitsFileSize(count), '\0');
  auto* header = reinterpret_cast<layout::LimitsHeader*>(bytes.data());
  std::memcpy(header->magic, layout::kLimitsMagic, sizeof(header->magic));
  header->version = kFormatVersion;
  header->header_size = sizeof(layout::LimitsHeader);
  header->file_size = bytes.size();
  std::memcpy(header->id, spec.id.data(), spec.id.size());
  header->device_count = count;
  header->generation = 1;
  auto* devices = reinterpret_cast<layout::LimitsDevice*>(bytes.data() + sizeof(layout::LimitsHeader));
  for (uint32_t i = 0; i < count; ++i) {
    const DeviceLimit& limit = spec.devices[i];
    std::memcpy(devices[i].uuid, limit.uuid.data(), limit.uuid.size());
    devices[i].memory_cap = limit.memory_cap;
    devices[i].compute_share = limit.compute_share;
    devices[i].compute_mode = static_cast<uint8_t>(limit.compute_mode);
    devices[i].tier = static_cast<uint8_t>(limit.tier);
    devices[i].reserved = 0;
  }
  return bytes;
}

std::vector<char> BuildLedger(uint32_t device_count) {
  std::vector<char> bytes(layout::LedgerFileSize(device_count), '\0');
  auto* header = reinterpret_cast<layout::LedgerHeader*>(bytes.data());
  std::memcpy(header->magic, layout::kLedgerMagic, sizeof(header->magic));
  header->version = kFormatVersion;
  header->header_size = sizeof(layout::LedgerHeader);
  header->file_size = bytes.size();
  header->device_count = device_count;
  header->slot_count = kMaxProcesses;
  header->slot_size = layout::SlotSize(device_count);
  header->slots_offset = layout::SlotsOffset(device_count);
  return bytes;  // every slot FREE, every counter 0
}

// Opens, fstats and maps `path` after checking it is at least `min_size` bytes, the magic
// and the version; `check` validates the rest from the header bytes before mapping.
template <typename Header, typename Check>
Result<MappedFile> OpenAndMap(const std::string& path, const char (&magic)[8], bool writable, bool keep_fd,
                              Check check) {
  // O_NONBLOCK: a FIFO planted under the name must not hang the opener (the hook at init); it
  // is then refused as not a regular file. No effect on a regular file.
  const int fd = ::open(path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return Status::NotFound(path + ": no such file");
    return Status::Unavailable(path + ": " + ErrnoText(err));
  }
  auto fail = [fd](Status status) -> Result<MappedFile> {
    ::close(fd);
    return status;
  };
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail(Status::Unavailable(path + ": fstat: " + ErrnoText(errno)));
  if (!S_ISREG(st.st_mode)) return fail(Status::Corrupt(path + ": not a regular file"));
  const auto actual_size = static_cast<uint64_t>(st.st_size);
  if (actual_size < sizeof(Header)) {
    return fail(Status::Corrupt(path + ": truncated (" + std::to_string(actual_size) +
                                " bytes, header needs " + std::to_string(sizeof(Header)) + ")"));
  }
  Header header{};
  if (::pread(fd, &header, sizeof(header), 0) != static_cast<ssize_t>(sizeof(header))) {
    return fail(Status::Unavailable(path + ": cannot read header"));
  }
  if (std::memcmp(header.magic, magic, sizeof(header.magic)) != 0) {
    return fail(Status::Corrupt(path + ": bad magic (not a slice file of this kind)"));
  }
  if (header.version != kFormatVersion) {
    return fail(Status::VersionMismatch(path + ": format version " + std::to_string(header.version) +
                                        ", this build reads version " + std::to_string(kFormatVersion)));
  }
  if (header.header_size != sizeof(Header)) {
    return fail(Status::Corrupt(path + ": header size " + std::to_string(header.header_size) + ", expected " +
                                std::to_string(sizeof(Header))));
  }
  uint64_t expected_size = 0;
  if (Status status = check(header, &expected_size); !status.ok())
    return fail(Status::Corrupt(path + ": " + status.message()));
  if (header.file_size != expected_size || actual_size != expected_size) {
    return fail(Status::Corrupt(path + ": size mismatch (file " + std::to_string(actual_size) +
                                " bytes, header says " + std::to_string(header.file_size) +
                                ", layout needs " + std::to_string(expected_size) + ")"));
  }
  void* base =
      ::mmap(nullptr, expected_size, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) return fail(Status::Unavailable(path + ": mmap: " + ErrnoText(errno)));
  int kept_fd = fd;
  if (!keep_fd) {
    ::close(fd);
    kept_fd = -1;
  }
  return MappedFile(base, expected_size, kept_fd, st.st_dev, st.st_ino);
}

}  // namespace

MappedFile::MappedFile(MappedFile&& other) noexcept { *this = std::move(other); }

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    this->~MappedFile();
    base_ = other.base_;
    size_ = other.size_;
    fd_ = other.fd_;
    device_ = other.device_;
    inode_ = other.inode_;
    other.base_ = nullptr;
    other.size_ = 0;
    other.fd_ = -1;
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (base_ != nullptr) ::munmap(base_, size_);
  if (fd_ >= 0) ::close(fd_);
  base_ = nullptr;
  fd_ = -1;
}

bool MappedFile::StillWhole() const {
  if (fd_ < 0) return true;
  struct stat st {};
  return ::fstat(fd_, &st) == 0 && static_cast<uint64_t>(st.st_size) >= size_;
}

Status ValidateCompute(uint32_t share, ComputeMode mode, Tier tier) {
  if (share == 0 || share > 100)
    return Status::InvalidArgument("compute share must be 1..100, got " + std::to_string(share));
  if (static_cast<uint8_t>(mode) > layout::kMaxComputeMode) {
    return Status::InvalidArgument("compute mode must be cap (0) or share (1), got " +
                                   std::to_string(static_cast<unsigned>(mode)));
  }
  if (static_cast<uint8_t>(tier) > layout::kMaxTier) {
    return Status::InvalidArgument("tier must be batch (0), standard (1) or latency (2), got " +
                                   std::to_string(static_cast<unsigned>(tier)));
  }
  return Status::Ok();
}

Status ValidateSpec(const SliceSpec& spec) {
  if (spec.id.empty() || spec.id.size() >= kIdBytes) {
    return Status::InvalidArgument("slice id must be 1.." + std::to_string(kIdBytes - 1) +
                                   " characters, got " + std::to_string(spec.id.size()));
  }
  for (char c : spec.id) {
    if (!IsIdChar(c))
      return Status::InvalidArgument("slice id '" + spec.id + "' has a character outside [A-Za-z0-9._-]");
  }
  if (spec.devices.empty() || spec.devices.size() > static_cast<size_t>(kMaxDevices)) {
    return Status::InvalidArgument("a slice has 1.." + std::to_string(kMaxDevices) + " devices, got " +
                                   std::to_string(spec.devices.size()));
  }
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    const DeviceLimit& device = spec.devices[i];
    const std::string where = "device " + std::to_string(i) + ": ";
    if (device.uuid.empty() || device.uuid.size() >= kUuidBytes) {
      return Status::InvalidArgument(where + "uuid must be 1.." + std::to_string(kUuidBytes - 1) +
                                     " characters");
    }
    for (char c : device.uuid) {
      if (c <= ' ' || c > '~')
        return Status::InvalidArgument(where + "uuid '" + device.uuid + "' has a non-printable character");
    }
    for (size_t j = 0; j < i; ++j) {
      if (EqualsIgnoreCase(spec.devices[j].uuid, device.uuid)) {
        return Status::InvalidArgument(where + "uuid " + device.uuid + " appears twice");
      }
    }
    if (device.memory_cap == 0 || device.memory_cap > layout::kMaxBytes) {
      return Status::InvalidArgument(where + "memory cap must be 1 byte..1 PiB, got " +
                                     std::to_string(device.memory_cap));
    }
    if (Status status = ValidateCompute(device.compute_share, device.compute_mode, device.tier); !status.ok())
      return Status::InvalidArgument(where + status.message());
  }
  return Status::Ok();
}

Status WriteSliceFiles(const std::string& dir, const SliceSpec& spec, const FileOwner* owner) {
  if (Status status = ValidateSpec(spec); !status.ok()) return status;
  if (dir.empty()) return Status::InvalidArgument("slice directory is empty");
  if (::mkdir(dir.c_str(), 0755) != 0) {
    const int err = errno;
    if (err == EEXIST) return Status::InvalidArgument(dir + ": already exists");
    if (err == ENOENT) return Status::NotFound(dir + ": parent directory does not exist");
    return Status::Unavailable(dir + ": mkdir: " + ErrnoText(err));
  }
  // 0755 whatever the umask: the workload must reach its files; nobody but the creator may add,
  // rename or remove one (the limits it reads stay the creator's).
  Status status = ::chmod(dir.c_str(), 0755) == 0 ? Status::Ok() : Status::Unavailable(dir + ": chmod: " + ErrnoText(errno));
  // The ledger first: a reader that finds the limits finds a ledger too.
  if (status.ok()) {
    status = WriteFileAtomically(dir, kLedgerFileName, BuildLedger(static_cast<uint32_t>(spec.devices.size())), 0600,
                                 owner);
  }
  if (status.ok()) status = WriteFileAtomically(dir, kLimitsFileName, BuildLimits(spec), 0644, nullptr);
  if (!status.ok()) {
    ::unlink((dir + "/" + kLedgerFileName).c_str());
    ::unlink((dir + "/" + kLimitsFileName).c_str());
    ::rmdir(dir.c_str());
  }
  return status;
}

Status ValidateLedgerCopy(const std::string& path, const char* bytes, size_t size, uint32_t device_count) {
  if (size < sizeof(layout::LedgerHeader)) return Status::Corrupt(path + ": truncated (" + std::to_string(size) + " bytes)");
  layout::LedgerHeader header{};
  std::memcpy(&header, bytes, sizeof(header));
  if (std::memcmp(header.magic, layout::kLedgerMagic, sizeof(header.magic)) != 0) {
    return Status::Corrupt(path + ": bad magic (not a slice ledger)");
  }
  if (header.version != kFormatVersion) {
    return Status::VersionMismatch(path + ": format version " + std::to_string(header.version) +
                                   ", this build reads version " + std::to_string(kFormatVersion));
  }
  const uint64_t expected = layout::LedgerFileSize(device_count);
  if (header.header_size != sizeof(header) || header.device_count != device_count ||
      header.slot_count != static_cast<uint32_t>(kMaxProcesses) || header.slot_size != layout::SlotSize(device_count) ||
      header.slots_offset != layout::SlotsOffset(device_count) || header.file_size != expected || size != expected) {
    return Status::Corrupt(path + ": header or size (" + std::to_string(size) + " bytes) does not match a ledger of " +
                           std::to_string(device_count) + " device(s)");
  }
  for (uint32_t d = 0; d < device_count; ++d) {
    uint64_t used = 0;
    std::memcpy(&used, bytes + sizeof(layout::LedgerHeader) + d * sizeof(layout::DeviceWord), sizeof(used));
    if (used > layout::kMaxBytes) {
      return Status::Corrupt(path + ": device " + std::to_string(d) + " has " + std::to_string(used) +
                             " bytes charged (over 1 PiB)");
    }
  }
  return Status::Ok();
}

Result<MappedFile> MapLimits(const std::string& path, bool writable, bool keep_fd) {
  Result<MappedFile> mapped = OpenAndMap<layout::LimitsHeader>(
      path, layout::kLimitsMagic, writable, keep_fd, [](const layout::LimitsHeader& header, uint64_t* size) {
        if (header.device_count == 0 || header.device_count > static_cast<uint32_t>(kMaxDevices)) {
          return Status::Corrupt("device count " + std::to_string(header.device_count) + " outside 1.." +
                                 std::to_string(kMaxDevices));
        }
        if (!IsTerminated(header.id, sizeof(header.id)) || header.id[0] == '\0') {
          return Status::Corrupt("slice id is empty or not NUL-terminated");
        }
        *size = layout::LimitsFileSize(header.device_count);
        return Status::Ok();
      });
  if (!mapped.ok()) return mapped;
  // The per-device records are validated from the mapping (their size is now known good).
  const auto* header = reinterpret_cast<const layout::LimitsHeader*>(mapped->base());
  const auto* devices =
      reinterpret_cast<const layout::LimitsDevice*>(mapped->base() + sizeof(layout::LimitsHeader));
  for (uint32_t i = 0; i < header->device_count; ++i) {
    const std::string where = path + ": device " + std::to_string(i) + ": ";
    if (!IsTerminated(devices[i].uuid, kUuidBytes) || devices[i].uuid[0] == '\0') {
      return Status::Corrupt(where + "uuid is empty or not NUL-terminated");
    }
    const uint64_t cap = __atomic_load_n(&devices[i].memory_cap, __ATOMIC_ACQUIRE);
    if (cap > layout::kMaxBytes)
      return Status::Corrupt(where + "memory cap " + std::to_string(cap) + " exceeds 1 PiB");
    const uint32_t share = __atomic_load_n(&devices[i].compute_share, __ATOMIC_ACQUIRE);
    if (share == 0 || share > 100)
      return Status::Corrupt(where + "compute share " + std::to_string(share) + " outside 1..100");
    const uint32_t compute = __atomic_load_n(layout::ComputeWord(&devices[i]), __ATOMIC_ACQUIRE);
    if (layout::ComputeWordMode(compute) > layout::kMaxComputeMode) {
      return Status::Corrupt(where + "compute mode " + std::to_string(layout::ComputeWordMode(compute)) +
                             " outside 0..1 (cap, share)");
    }
    if (layout::ComputeWordTier(compute) > layout::kMaxTier) {
      return Status::Corrupt(where + "tier " + std::to_string(layout::ComputeWordTier(compute)) +
                             " outside 0..2 (batch, standard, latency)");
    }
  }
  return mapped;
}

Result<MappedFile> MapLedger(const std::string& path, uint32_t device_count, bool keep_fd) {
  Result<MappedFile> mapped = OpenAndMap<layout::LedgerHeader>(
      path, layout::kLedgerMagic, /*writable=*/true, keep_fd,
      [device_count](const layout::LedgerHeader& header, uint64_t* size) {
        if (header.device_count != device_count) {
          return Status::Corrupt("device count " + std::to_string(header.device_count) +
                                 ", the limits file has " + std::to_string(device_count));
        }
        if (header.slot_count != static_cast<uint32_t>(kMaxProcesses) ||
            header.slot_size != layout::SlotSize(device_count) ||
            header.slots_offset != layout::SlotsOffset(device_count)) {
          return Status::Corrupt("slot geometry (" + std::to_string(header.slot_count) + " slots of " +
                                 std::to_string(header.slot_size) + " bytes at " +
                                 std::to_string(header.slots_offset) + ") does not match this format");
        }
        *size = layout::LedgerFileSize(device_count);
        return Status::Ok();
      });
  if (!mapped.ok()) return mapped;
  for (uint32_t d = 0; d < device_count; ++d) {
    void* word = mapped->base() + sizeof(layout::LedgerHeader) + d * sizeof(layout::DeviceWord);
    const uint64_t used = Load128(word).low;
    if (used > layout::kMaxBytes) {
      return Status::Corrupt(path + ": device " + std::to_string(d) + " has " + std::to_string(used) +
                             " bytes charged (over 1 PiB)");
    }
  }
  return mapped;
}

SliceSpec SpecFromLimits(const MappedFile& limits) {
  const auto* header = reinterpret_cast<const layout::LimitsHeader*>(limits.base());
  const auto* devices =
      reinterpret_cast<const layout::LimitsDevice*>(limits.base() + sizeof(layout::LimitsHeader));
  SliceSpec spec;
  spec.id = header->id;
  for (uint32_t i = 0; i < header->device_count; ++i) {
    DeviceLimit device;
    device.uuid = devices[i].uuid;
    device.memory_cap = __atomic_load_n(&devices[i].memory_cap, __ATOMIC_ACQUIRE);
    device.compute_share = __atomic_load_n(&devices[i].compute_share, __ATOMIC_ACQUIRE);
    // Validated when mapped; written since only by SetCompute, which validates too.
    const uint32_t compute = __atomic_load_n(layout::ComputeWord(&devices[i]), __ATOMIC_ACQUIRE);
    device.compute_mode = static_cast<ComputeMode>(layout::ComputeWordMode(compute));
    device.tier = static_cast<Tier>(layout::ComputeWordTier(compute));
    spec.devices.push_back(std::move(device));
  }
  return spec;
}

}  // namespace fgpu::slice
