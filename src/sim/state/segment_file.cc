#include "sim/state/segment_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <utility>

#include "sim/state/mig_state.h"

namespace fgpu::sim {
namespace {

// A device configured with a "mig" list starts in MIG mode with those GPU instances, each with
// one compute instance spanning it (the config was validated: every one places).
void WriteInitialMig(const DeviceSpec& spec, layout::MigDevice& mig) {
  if (spec.mig.empty()) return;
  const mig::ModelInfo* model = mig::ModelOfProduct(spec.name, spec.total_bytes);
  if (model == nullptr) return;
  Result<std::vector<std::pair<const mig::Profile*, int>>> placed = PlaceMigList(*model, spec.mig);
  if (!placed.ok()) return;
  mig.current_mode = 1;
  mig.pending_mode = 1;
  for (size_t i = 0; i < placed->size() && i < static_cast<size_t>(layout::kMigSlots); ++i) {
    const auto& [profile, start] = (*placed)[i];
    layout::MigGpuSlot& slot = mig.gpu[i];
    slot.id = static_cast<uint32_t>(i + 1);
    slot.profile_id = profile->id;
    slot.start = static_cast<uint32_t>(start);
    layout::MigComputeSlot& compute = slot.compute[0];
    compute.id = 0;
    compute.profile = static_cast<uint32_t>(ComputeProfileOfSlices(profile->compute_slices));
    compute.start = 0;
    compute.size = static_cast<uint32_t>(profile->compute_slices);
    compute.state = layout::kMigLive;
    slot.state = layout::kMigLive;
  }
}


using layout::SegmentHeader;

// Closes the fd on every return path.
class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Holds flock(LOCK_EX) on an fd for a scope. The unlock must be explicit: a mapping of the
// file keeps its open file description alive after close(), and the lock with it.
class ScopedFlock {
 public:
  explicit ScopedFlock(int fd) : fd_(fd) {
    int rc = 0;
    do {
      rc = ::flock(fd_, LOCK_EX);
    } while (rc != 0 && errno == EINTR);
    locked_ = rc == 0;
    error_ = locked_ ? 0 : errno;
  }
  ~ScopedFlock() {
    if (locked_) ::flock(fd_, LOCK_UN);
  }
  ScopedFlock(const ScopedFlock&) = delete;
  ScopedFlock& operator=(const ScopedFlock&) = delete;
  bool locked() const { return locked_; }
  int error() const { return error_; }

 private:
  int fd_;
  bool locked_ = false;
  int error_ = 0;
};

Status OsError(const std::string& what, const std::string& name, int err) {
  return Status::Unavailable(what + " shared memory segment " + name + ": " + std::strerror(err));
}

uint64_t MonotonicNowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

Result<SegmentMapping> MapShared(int fd, size_t size, const std::string& name) {
  void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) return OsError("cannot map", name, errno);
  return SegmentMapping(base, size);
}

// Size the file so that every page exists now: on a full /dev/shm, a page first touched
// later would kill the process with SIGBUS instead of failing here.
Status Reserve(int fd, uint64_t size, const std::string& name) {
  int rc = 0;
  do {
    rc = ::posix_fallocate(fd, 0, static_cast<off_t>(size));
  } while (rc == EINTR);
  if (rc == 0) return Status::Ok();
  if (rc != EOPNOTSUPP && rc != EINVAL) return OsError("cannot size", name, rc);
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) return OsError("cannot size", name, errno);
  return Status::Ok();
}

// Called with the flock held on an empty file.
Result<SegmentMapping> Initialize(int fd, const std::string& name, const SimConfig& config) {
  const uint64_t size = layout::SegmentSize(config.devices.size());
  Status s = Reserve(fd, size, name);
  if (!s.ok()) return s;
  Result<SegmentMapping> mapped = MapShared(fd, size, name);
  if (!mapped.ok()) return mapped.status();
  SegmentMapping& m = mapped.value();

  // The file is freshly zero-filled: only non-zero fields need writing.
  SegmentHeader& h = m.header();
  h.layout_version = layout::kSegmentVersion;
  h.header_size = sizeof(SegmentHeader);
  h.total_size = size;
  h.config_fingerprint = ConfigFingerprint(config);
  h.device_count = static_cast<uint32_t>(config.devices.size());
  h.creator_pid = static_cast<int32_t>(::getpid());
  h.created_ns = MonotonicNowNs();
  h.slot_count = layout::kSlotCount;
  h.bucket_count = static_cast<uint32_t>(layout::kBucketCount);
  h.bucket_ns = layout::kBucketNs;
  h.pending_capacity = static_cast<uint32_t>(layout::kPendingCapacity);

  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  const int rc = pthread_mutex_init(&h.mutex, &attr);
  pthread_mutexattr_destroy(&attr);
  if (rc != 0) return Status::Unavailable("cannot initialise the mutex of segment " + name + ": " + std::strerror(rc));

  for (size_t i = 0; i < config.devices.size(); ++i) {
    m.device(static_cast<int>(i)).total_bytes = config.devices[i].total_bytes;
    WriteInitialMig(config.devices[i], m.device(static_cast<int>(i)).mig);
  }

  // Everything above must be in memory before the magic: an opener that sees the magic
  // trusts the rest. (Openers also wait on our flock; this covers a creator killed
  // between the two, whose flock the kernel drops.)
  std::atomic_signal_fence(std::memory_order_seq_cst);
  std::memcpy(h.magic, layout::kMagic, sizeof(h.magic));
  return mapped;
}

Status ValidateHeader(const SegmentHeader& h, uint64_t file_size, const std::string& name, const SimConfig& config) {
  if (std::memcmp(h.magic, layout::kMagic, sizeof(h.magic)) != 0) {
    return Status::Corrupt("segment " + name + " is not an fgpu simulator segment (bad magic); remove it with " +
                           "`fgpu sim reset` or use another FGPU_SIM_SEGMENT");
  }
  if (h.layout_version != layout::kSegmentVersion) {
    return Status::VersionMismatch("segment " + name + " has layout version " + std::to_string(h.layout_version) +
                                   ", this library expects " + std::to_string(layout::kSegmentVersion) +
                                   "; remove it with `fgpu sim reset` or use another FGPU_SIM_SEGMENT");
  }
  auto corrupt = [&](const std::string& what) {
    return Status::Corrupt("segment " + name + " is corrupt: " + what + "; remove it with `fgpu sim reset`");
  };
  if (h.header_size != sizeof(SegmentHeader)) return corrupt("header size " + std::to_string(h.header_size));
  if (h.slot_count != layout::kSlotCount || h.bucket_count != layout::kBucketCount ||
      h.bucket_ns != layout::kBucketNs || h.pending_capacity != layout::kPendingCapacity) {
    return corrupt("table sizes differ from this layout");
  }
  if (h.device_count < 1 || h.device_count > kMaxSimDevices) {
    return corrupt("device count " + std::to_string(h.device_count));
  }
  if (h.total_size != layout::SegmentSize(h.device_count) || h.total_size != file_size) {
    return corrupt("size " + std::to_string(file_size) + " bytes, header says " + std::to_string(h.total_size) +
                   ", layout needs " + std::to_string(layout::SegmentSize(h.device_count)));
  }
  if (h.config_fingerprint != ConfigFingerprint(config)) {
    return Status::InvalidArgument("segment " + name + " was made for another device configuration (" +
                                   std::to_string(h.device_count) + " device(s)); use the same " + kConfigEnv +
                                   " as the processes already using it, or another " + kSegmentEnv);
  }
  if (h.device_count != config.devices.size()) return corrupt("device count does not match its fingerprint");
  return Status::Ok();
}

}  // namespace

SegmentMapping::SegmentMapping(SegmentMapping&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)), size_(std::exchange(other.size_, 0)) {}

SegmentMapping& SegmentMapping::operator=(SegmentMapping&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) ::munmap(base_, size_);
    base_ = std::exchange(other.base_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

SegmentMapping::~SegmentMapping() {
  if (base_ != nullptr) ::munmap(base_, size_);
}

Status ValidateSegmentName(const std::string& name) {
  if (name.size() < 2 || name[0] != '/') {
    return Status::InvalidArgument("segment name \"" + name + "\" must start with '/' followed by a name");
  }
  if (name.size() > 255) return Status::InvalidArgument("segment name \"" + name + "\" is longer than 255 bytes");
  for (size_t i = 1; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (c == '/' || c < 0x21 || c == 0x7f) {
      return Status::InvalidArgument("segment name \"" + name +
                                     "\" may contain only one '/', at the start, and no spaces or control characters");
    }
  }
  if (name == "/." || name == "/..") return Status::InvalidArgument("segment name \"" + name + "\" is reserved");
  return Status::Ok();
}

Result<SegmentMapping> OpenOrCreateSegment(const std::string& name, const SimConfig& config) {
  Status s = ValidateSegmentName(name);
  if (!s.ok()) return s;
  ScopedFd fd(::shm_open(name.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600));
  if (fd.get() < 0) return OsError("cannot open", name, errno);
  ScopedFlock creation_lock(fd.get());
  if (!creation_lock.locked()) return OsError("cannot lock", name, creation_lock.error());

  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return OsError("cannot stat", name, errno);
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (file_size == 0) {
    Result<SegmentMapping> created = Initialize(fd.get(), name, config);
    if (!created.ok()) return created.status();
    s = ValidateHeader(created->header(), layout::SegmentSize(config.devices.size()), name, config);
    if (!s.ok()) return s;
    return created;
  }

  // Read the header by value before mapping, so a garbage size is never mapped.
  SegmentHeader header{};
  const size_t want = file_size < sizeof(header) ? static_cast<size_t>(file_size) : sizeof(header);
  ssize_t got = 0;
  do {
    got = ::pread(fd.get(), &header, want, 0);
  } while (got < 0 && errno == EINTR);
  if (got < 0) return OsError("cannot read", name, errno);

  static constexpr char kNoMagic[8] = {};
  if (std::memcmp(header.magic, kNoMagic, sizeof(kNoMagic)) == 0) {
    // A creator died before writing the magic; nobody can be using it. Start over.
    if (::ftruncate(fd.get(), 0) != 0) return OsError("cannot reset", name, errno);
    Result<SegmentMapping> created = Initialize(fd.get(), name, config);
    if (!created.ok()) return created.status();
    return created;
  }
  if (static_cast<size_t>(got) < offsetof(SegmentHeader, total_size)) {
    return Status::Corrupt("segment " + name + " is corrupt: " + std::to_string(file_size) +
                           " bytes, too small for a header; remove it with `fgpu sim reset`");
  }
  if (static_cast<size_t>(got) < sizeof(header) && std::memcmp(header.magic, layout::kMagic, 8) == 0 &&
      header.layout_version == layout::kSegmentVersion) {
    return Status::Corrupt("segment " + name + " is corrupt: truncated to " + std::to_string(file_size) +
                           " bytes; remove it with `fgpu sim reset`");
  }
  s = ValidateHeader(header, file_size, name, config);
  if (!s.ok()) return s;
  return MapShared(fd.get(), static_cast<size_t>(file_size), name);
}

Status RemoveSegment(const std::string& name) {
  Status s = ValidateSegmentName(name);
  if (!s.ok()) return s;
  if (::shm_unlink(name.c_str()) != 0 && errno != ENOENT) return OsError("cannot remove", name, errno);
  return Status::Ok();
}

}  // namespace fgpu::sim
