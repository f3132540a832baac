// Creating, validating and mapping a slice's two files.
//
// Contract
// - ValidateSpec: InvalidArgument naming the first problem (id, device count, uuid, cap,
//   compute share, mode, tier). ValidateCompute: the compute fields alone.
// - WriteSliceFiles: creates `dir` (0755, must not exist; its parent must) holding `limits`
//   (0644, the creator's: read-only to everyone else) and `ledger` (0600, owned by `owner` when
//   given — the slice's workload user, whose processes alone may charge it — else by the
//   creator). Each file is written complete to a temporary name and renamed, so a reader sees no
//   file or a whole one. On failure nothing is left behind. Nothing is world-writable: a user
//   cannot charge, truncate or replace another user's slice (docs/security.md).
// - MapLimits / MapLedger validate everything in the header before returning a mapping:
//   NotFound (missing file, message names the path), VersionMismatch (names both versions),
//   Corrupt (wrong magic, truncated, size or count mismatch, unterminated strings, values out
//   of range), Unavailable (the OS refused). Nothing read later from a header is trusted:
//   callers use the counts validated here.
// - A MappedFile unmaps on destruction; it is movable, not copyable.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "core/status.h"
#include "slice/layout.h"
#include "slice/slice.h"

namespace fgpu::slice {

inline constexpr const char* kLimitsFileName = "limits";
inline constexpr const char* kLedgerFileName = "ledger";

class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(void* base, size_t size, int fd, dev_t device, ino_t inode)
      : base_(base), size_(size), fd_(fd), device_(device), inode_(inode) {}
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  char* base() const { return static_cast<char*>(base_); }
  size_t size() const { return size_; }
  dev_t device() const { return device_; }
  ino_t inode() const { return inode_; }
  // False when the file behind the mapping no longer has the mapped size (another process
  // truncated it): touching the mapping past the new end would raise SIGBUS.
  bool StillWhole() const;

 private:
  void* base_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;  // kept for StillWhole(); -1 when the caller asked not to keep it
  dev_t device_ = 0;
  ino_t inode_ = 0;
};

Status ValidateSpec(const SliceSpec& spec);
Status ValidateCompute(uint32_t share, ComputeMode mode, Tier tier);

// The user a slice's ledger belongs to (its workload's uid and primary gid).
struct FileOwner {
  uid_t uid = 0;
  gid_t gid = 0;
};

Status WriteSliceFiles(const std::string& dir, const SliceSpec& spec, const FileOwner* owner = nullptr);

// Checks a ledger's bytes as read (a copy, not a mapping): magic, version, header and file
// sizes, slot geometry for `device_count` devices, device totals within 1 PiB. Corrupt or
// VersionMismatch naming `path` and the problem.
Status ValidateLedgerCopy(const std::string& path, const char* bytes, size_t size, uint32_t device_count);

// `writable`: the admin maps limits read-write (to resize); the hook maps it read-only.
// `keep_fd`: keep the descriptor open for MappedFile::StillWhole (the admin does; the hook
// does not spend two of the application's descriptors).
Result<MappedFile> MapLimits(const std::string& path, bool writable, bool keep_fd);
// The ledger is always mapped read-write (CAS needs it). `device_count` comes from the
// validated limits file; the ledger must agree.
Result<MappedFile> MapLedger(const std::string& path, uint32_t device_count, bool keep_fd);

// The spec recorded in a validated limits mapping (caps as of now).
SliceSpec SpecFromLimits(const MappedFile& limits);

}  // namespace fgpu::slice
