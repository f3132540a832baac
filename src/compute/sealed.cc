// Sealed boards: the node agent's memfds and the checks a receiver makes (see sealed.h).
#include "compute/sealed.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "compute/board.h"
#include "compute/board_layout.h"

namespace fgpu::compute {
namespace {

constexpr unsigned kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

bool WriteAll(int fd, const void* data, size_t size) {
  return ::pwrite(fd, data, size, 0) == static_cast<ssize_t>(size);
}

// One memfd of `size` bytes starting with `header`, sealed and 0600.
Result<int> MakeSealed(const std::string& name, uint64_t size, const void* header, size_t header_size) {
  const int fd = ::memfd_create(name.c_str(), MFD_ALLOW_SEALING | MFD_CLOEXEC);
  if (fd < 0) return Status::Unavailable(ErrnoMessage("memfd_create " + name));
  const bool ok = ::ftruncate(fd, static_cast<off_t>(size)) == 0 && WriteAll(fd, header, header_size) &&
                  ::fcntl(fd, F_ADD_SEALS, kSeals) == 0 && ::fchmod(fd, 0600) == 0;
  if (!ok) {
    const Status failed = Status::Unavailable(ErrnoMessage(name));
    ::close(fd);
    return failed;
  }
  return fd;
}

}  // namespace

std::string BoardMemfdName(std::string_view uuid) { return "fgpu-board:" + std::string(uuid); }
std::string PolicyMemfdName(std::string_view uuid) { return "fgpu-policy:" + std::string(uuid); }

Result<SealedPair> CreateSealedPair(std::string_view uuid) {
  if (uuid.empty() || uuid.size() >= layout::kUuidBytes || uuid.find('/') != std::string_view::npos)
    return Status::InvalidArgument("compute board: bad GPU uuid '" + std::string(uuid) + "'");
  const layout::BoardHeader board_header = FreshBoardHeader(uuid);
  Result<int> board = MakeSealed(BoardMemfdName(uuid), layout::BoardFileSize(), &board_header, sizeof(board_header));
  if (!board.ok()) return board.status();
  struct stat info {};
  if (::fstat(*board, &info) != 0) {
    const Status failed = Status::Unavailable(ErrnoMessage(BoardMemfdName(uuid)));
    ::close(*board);
    return failed;
  }
  layout::PolicyHeader policy_header{};
  std::memcpy(policy_header.magic, layout::kPolicyMagic, sizeof(policy_header.magic));
  policy_header.version = layout::kPolicyVersion;
  policy_header.header_size = sizeof(layout::PolicyHeader);
  policy_header.file_size = layout::PolicyFileSize();
  std::memcpy(policy_header.uuid, uuid.data(), uuid.size());
  policy_header.entry_count = layout::kEntryCount;
  policy_header.entry_size = sizeof(layout::PolicyEntry);
  policy_header.board_inode = static_cast<uint64_t>(info.st_ino);
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  policy_header.created_ns = static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
  Result<int> policy =
      MakeSealed(PolicyMemfdName(uuid), layout::PolicyFileSize(), &policy_header, sizeof(policy_header));
  if (!policy.ok()) {
    ::close(*board);
    return policy.status();
  }
  return SealedPair{*board, *policy};
}

Status CheckSealed(int fd, uint64_t size, const std::string& what, bool read_only, uid_t owner) {
  struct stat info {};
  if (fd < 0 || ::fstat(fd, &info) != 0) return Status::Unavailable(ErrnoMessage(what));
  if (!S_ISREG(info.st_mode)) return Status::Corrupt(what + " is not a regular file");
  if (static_cast<uint64_t>(info.st_size) != size) {
    return Status::Corrupt(what + " is " + std::to_string(info.st_size) + " bytes, expected " + std::to_string(size));
  }
  if (info.st_uid != owner) {
    return Status::PermissionDenied(what + " belongs to uid " + std::to_string(info.st_uid) + ", not " +
                                    std::to_string(owner));
  }
  if ((info.st_mode & 0077) != 0) return Status::PermissionDenied(what + " is open to group or others");
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0) return Status::Corrupt(ErrnoMessage(what + ": not sealable"));
  if ((static_cast<unsigned>(seals) & kSeals) != kSeals) {
    return Status::Corrupt(what + " is not sealed against shrinking, growing and further seals");
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) return Status::Unavailable(ErrnoMessage(what));
  if (read_only && (flags & O_ACCMODE) != O_RDONLY) return Status::PermissionDenied(what + " was handed out writable");
  return Status::Ok();
}

Result<int> ReopenReadOnly(int fd) {
  const std::string self = "/proc/self/fd/" + std::to_string(fd);
  const int reopened = ::open(self.c_str(), O_RDONLY | O_CLOEXEC);
  if (reopened < 0) return Status::Unavailable(ErrnoMessage(self));
  return reopened;
}

void ClosePair(SealedPair* pair) {
  if (pair->board >= 0) ::close(pair->board);
  if (pair->policy >= 0) ::close(pair->policy);
  pair->board = pair->policy = -1;
}

}  // namespace fgpu::compute
