// Sealed boards: on a managed node with board_socket, each GPU's compute board and its policy
// table are memfds the node agent makes, with no path (docs/compute.md "The board on a managed
// node"). Workloads receive them over the agent's socket (board_handout.h); nobody can truncate
// or grow them, so no process that maps them can be killed with SIGBUS, and a workload can map
// the policy table only read-only.
//
// Contract
// - CreateSealedPair(uuid): memfd_create("fgpu-board:<uuid>") and ("fgpu-policy:<uuid>") with
//   MFD_ALLOW_SEALING | MFD_CLOEXEC, each sized once and its header written (every row free),
//   then sealed F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL and fchmod 0600 (another user holding
//   a descriptor cannot reopen it read-write through /proc/self/fd). The policy header names the
//   board's inode. Both descriptors are read-write: the agent's. Unavailable on any failure.
// - CheckSealed(fd, size, what, read_only, owner): what a receiver checks before mapping — a
//   regular file of exactly `size` bytes, owned by `owner`, mode 0600, sealed at least
//   SHRINK | GROW | SEAL, and, when `read_only`, opened O_RDONLY (a writable policy descriptor is
//   refused: the interposer must not be able to write the table even by mistake). Corrupt or
//   PermissionDenied naming `what` and the problem.
// - ReopenReadOnly(fd): a new O_RDONLY open file description of the same memfd
//   (open("/proc/self/fd/N", O_RDONLY)): what the agent hands out for the policy table.
// - Usable in the interposer (libc only); Create and Reopen allocate only their messages.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace fgpu::compute {

// Descriptors the caller owns (-1: none).
struct SealedPair {
  int board = -1;
  int policy = -1;
};

// The memfd names (as /proc/<pid>/maps shows them after "/memfd:"): a restarted agent looks for them.
std::string BoardMemfdName(std::string_view uuid);
std::string PolicyMemfdName(std::string_view uuid);

Result<SealedPair> CreateSealedPair(std::string_view uuid);
Status CheckSealed(int fd, uint64_t size, const std::string& what, bool read_only, uid_t owner);
Result<int> ReopenReadOnly(int fd);
void ClosePair(SealedPair* pair);

}  // namespace fgpu::compute
