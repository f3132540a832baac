// Board: creation, validation and row claims (see board.h).
#include "compute/board.h"

#include "compute/sealed.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace fgpu::compute {
namespace {

Status WriteNewBoard(const std::string& path, std::string_view uuid) {
  // Unique per creating thread: several threads of one process may race to create the board.
  const std::string temp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(::gettid());
  const int fd = ::open(temp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);
  if (fd < 0) return Status::Unavailable(ErrnoMessage(temp));
  ::fchmod(fd, 0666);  // the umask must not keep other users' slices out
  const layout::BoardHeader header = FreshBoardHeader(uuid);
  bool ok = ::pwrite(fd, &header, sizeof(header), 0) == static_cast<ssize_t>(sizeof(header)) &&
            ::ftruncate(fd, static_cast<off_t>(layout::BoardFileSize())) == 0;
  ok = ::close(fd) == 0 && ok;
  // link, not rename: a process that lost the race to create the board must not replace the
  // winner's file, or the two would arbitrate on different boards.
  const bool published = ok && (::link(temp.c_str(), path.c_str()) == 0 || errno == EEXIST);
  const Status status = published ? Status::Ok() : Status::Unavailable(ErrnoMessage(path));
  ::unlink(temp.c_str());
  return status;
}

Status Validate(const std::string& path, const layout::BoardHeader& header, std::string_view uuid) {
  if (std::memcmp(header.magic, layout::kBoardMagic, sizeof(header.magic)) != 0)
    return Status::Corrupt(path + ": not an fgpu compute board (bad magic)");
  if (header.version != layout::kBoardVersion)
    return Status::VersionMismatch(path + ": board format version " + std::to_string(header.version) +
                                   ", this build reads version " + std::to_string(layout::kBoardVersion));
  if (header.header_size != sizeof(layout::BoardHeader) || header.file_size != layout::BoardFileSize() ||
      header.entry_count != layout::kEntryCount || header.entry_size != sizeof(layout::BoardEntry))
    return Status::Corrupt(path + ": board header sizes do not match this build's layout");
  if (::strnlen(header.uuid, sizeof(header.uuid)) == sizeof(header.uuid) ||
      std::string_view(header.uuid) != uuid)
    return Status::Corrupt(path + ": board names another GPU");
  return Status::Ok();
}

Status ValidatePolicy(const std::string& path, const layout::PolicyHeader& header, std::string_view uuid,
                      uint64_t board_inode) {
  if (std::memcmp(header.magic, layout::kPolicyMagic, sizeof(header.magic)) != 0)
    return Status::Corrupt(path + ": not an fgpu policy table (bad magic)");
  if (header.version != layout::kPolicyVersion)
    return Status::VersionMismatch(path + ": policy table format version " + std::to_string(header.version) +
                                   ", this build reads version " + std::to_string(layout::kPolicyVersion));
  if (header.header_size != sizeof(layout::PolicyHeader) || header.file_size != layout::PolicyFileSize() ||
      header.entry_count != layout::kEntryCount || header.entry_size != sizeof(layout::PolicyEntry))
    return Status::Corrupt(path + ": policy table header sizes do not match this build's layout");
  if (::strnlen(header.uuid, sizeof(header.uuid)) == sizeof(header.uuid) ||
      std::string_view(header.uuid) != uuid)
    return Status::Corrupt(path + ": policy table names another GPU");
  if (header.board_inode != board_inode) return Status::Corrupt(path + ": policy table of another board");
  return Status::Ok();
}

}  // namespace

layout::BoardHeader FreshBoardHeader(std::string_view uuid) {
  layout::BoardHeader header{};
  std::memcpy(header.magic, layout::kBoardMagic, sizeof(header.magic));
  header.version = layout::kBoardVersion;
  header.header_size = sizeof(layout::BoardHeader);
  header.file_size = layout::BoardFileSize();
  std::memcpy(header.uuid, uuid.data(), std::min(uuid.size(), layout::kUuidBytes - 1));
  header.entry_count = layout::kEntryCount;
  header.entry_size = sizeof(layout::BoardEntry);
  header.owner = layout::PackOwner(-1, 0);
  return header;
}

int64_t MonotonicNs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

uint64_t SliceKey(std::string_view identity) {
  uint64_t hash = 14695981039346656037ull;
  for (const char c : identity) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;
  }
  return hash == 0 ? 1 : hash;
}

Result<Board*> Board::Open(const std::string& dir, std::string_view uuid) {
  if (uuid.empty() || uuid.size() >= layout::kUuidBytes || uuid.find('/') != std::string_view::npos)
    return Status::InvalidArgument("compute board: bad GPU uuid '" + std::string(uuid) + "'");
  if (::mkdir(dir.c_str(), 01777) == 0) {
    ::chmod(dir.c_str(), 01777);
  } else if (errno != EEXIST) {
    return Status::Unavailable(ErrnoMessage(dir));
  }
  const std::string path = dir + "/" + std::string(uuid);
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    const Status written = WriteNewBoard(path, uuid);
    // Another process may have won the race to create it: use theirs.
    if (!written.ok() && ::access(path.c_str(), F_OK) != 0) return written;
    fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  }
  if (fd < 0) return Status::Unavailable(ErrnoMessage(path));
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    ::close(fd);
    return Status::Unavailable(ErrnoMessage(path));
  }
  if (static_cast<uint64_t>(info.st_size) != layout::BoardFileSize()) {
    ::close(fd);
    return Status::Corrupt(path + ": board is " + std::to_string(info.st_size) + " bytes, expected " +
                           std::to_string(layout::BoardFileSize()));
  }
  void* base = ::mmap(nullptr, layout::BoardFileSize(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) return Status::Unavailable(ErrnoMessage(path));
  const Status valid = Validate(path, *static_cast<layout::BoardHeader*>(base), uuid);
  if (!valid.ok()) {
    ::munmap(base, layout::BoardFileSize());
    return valid;
  }
  return new Board(base, nullptr, false, path);
}

Result<Board*> Board::Map(int board_fd, int policy_fd, std::string_view uuid, const MapOptions& options) {
  if (uuid.empty() || uuid.size() >= layout::kUuidBytes)
    return Status::InvalidArgument("compute board: bad GPU uuid '" + std::string(uuid) + "'");
  const std::string path = BoardMemfdName(uuid);
  const std::string policy_path = PolicyMemfdName(uuid);
  if (Status sealed = CheckSealed(board_fd, layout::BoardFileSize(), path, /*read_only=*/false, options.owner);
      !sealed.ok())
    return sealed;
  if (Status sealed = CheckSealed(policy_fd, layout::PolicyFileSize(), policy_path, !options.writable_policy, options.owner);
      !sealed.ok())
    return sealed;
  struct stat board_info {};
  if (::fstat(board_fd, &board_info) != 0) return Status::Unavailable(ErrnoMessage(path));
  void* base = ::mmap(nullptr, layout::BoardFileSize(), PROT_READ | PROT_WRITE, MAP_SHARED, board_fd, 0);
  if (base == MAP_FAILED) return Status::Unavailable(ErrnoMessage(path + ": mmap"));
  const int protection = options.writable_policy ? PROT_READ | PROT_WRITE : PROT_READ;
  void* policy = ::mmap(nullptr, layout::PolicyFileSize(), protection, MAP_SHARED, policy_fd, 0);
  if (policy == MAP_FAILED) {
    const Status failed = Status::Unavailable(ErrnoMessage(policy_path + ": mmap"));
    ::munmap(base, layout::BoardFileSize());
    return failed;
  }
  Status valid = Validate(path, *static_cast<layout::BoardHeader*>(base), uuid);
  if (valid.ok()) {
    valid = ValidatePolicy(policy_path, *static_cast<layout::PolicyHeader*>(policy), uuid,
                           static_cast<uint64_t>(board_info.st_ino));
  }
  if (!valid.ok()) {
    ::munmap(policy, layout::PolicyFileSize());
    ::munmap(base, layout::BoardFileSize());
    return valid;
  }
  return new Board(base, policy, options.writable_policy, path);
}

Board::Board(void* base, void* policy, bool policy_writable, std::string path)
    : header_(static_cast<layout::BoardHeader*>(base)),
      entries_(reinterpret_cast<layout::BoardEntry*>(static_cast<char*>(base) + sizeof(layout::BoardHeader))),
      policy_header_(static_cast<layout::PolicyHeader*>(policy)),
      policy_(policy == nullptr ? nullptr
                                : reinterpret_cast<layout::PolicyEntry*>(static_cast<char*>(policy) +
                                                                         sizeof(layout::PolicyHeader))),
      policy_writable_(policy_writable),
      path_(std::move(path)) {}

Board::~Board() {
  if (policy_header_ != nullptr) ::munmap(policy_header_, layout::PolicyFileSize());
  ::munmap(header_, layout::BoardFileSize());
}

int Board::Find(uint64_t key) const {
  for (int i = 0; i < static_cast<int>(layout::kEntryCount); ++i) {
    if (RowKey(i) == key) return i;
  }
  return -1;
}

bool Board::Claim(int index, uint64_t key, std::string_view slice_id, int64_t now_ns) {
  layout::BoardEntry& row = entries_[index];
  uint64_t seen = LoadU64(&row.key);
  const bool free_row = seen == 0;
  const bool abandoned = !free_row && now_ns - std::max(LoadI64(&row.demand_ns), LoadI64(&row.activity_ns)) >
                                          kAbandonedRowNs;
  if (!free_row && !abandoned) return false;
  // Mark the row busy right away so that the abandoned test fails for other claimers.
  StoreI64(&row.activity_ns, now_ns);
  if (!__atomic_compare_exchange_n(&row.key, &seen, key, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) return false;
  // A fresh start: nothing of the previous tenant counts for the new one.
  __atomic_store_n(&row.vtime, LoadU64(&header_->vclock), __ATOMIC_RELEASE);
  StoreI64(&row.tat_ns, now_ns);
  StoreI64(&row.inflight_until_ns, 0);
  StoreI64(&row.demand_ns, now_ns);
  __atomic_store_n(&row.busy_ns, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&row.launches, 0, __ATOMIC_RELEASE);
  const size_t length = std::min(slice_id.size(), layout::kSliceIdBytes - 1);
  for (size_t i = 0; i < layout::kSliceIdBytes; ++i) {
    __atomic_store_n(&row.slice_id[i], i < length ? slice_id[i] : '\0', __ATOMIC_RELAXED);
  }
  return true;
}

int Board::Join(uint64_t key, std::string_view slice_id, int64_t now_ns) {
  if (key == 0) return -1;  // 0 marks a free row, never a slice (SliceKey)
  int found = Find(key);
  // On a managed board the agent gave the slice its row, or none: a workload never claims one
  // (that is how 32 squatted rows used to leave later slices unenforced).
  if (found >= 0 || policy_ != nullptr) return found;
  for (int i = 0; i < static_cast<int>(layout::kEntryCount); ++i) {
    if (!Claim(i, key, slice_id, now_ns)) continue;
    // Another process of this slice may have claimed a row at the same time: keep the lowest.
    const int first = Find(key);
    if (first != i) {
      uint64_t mine = key;
      __atomic_compare_exchange_n(&entries_[i].key, &mine, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
      return first;
    }
    return i;
  }
  return -1;
}

}  // namespace fgpu::compute
