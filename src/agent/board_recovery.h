// After a restart: finding a GPU's sealed board and policy table in a process that still maps
// them (docs/compute.md "The board on a managed node", restart). Memfds have no path; a live
// workload's mappings are the only way back to them.
//
// Contract
// - RecoverSealedPair(uuid, candidates, owner) reads /proc/<pid>/maps of each candidate (the
//   slices' ledger processes and members: candidates only, never trusted) for mappings named
//   "/memfd:fgpu-board:<uuid>" and "/memfd:fgpu-policy:<uuid>", opens each read-write through
//   /proc/<pid>/map_files/<range> (root only: CAP_SYS_ADMIN), and keeps a pair only when both
//   are memfds `owner` made (owner, 0600, sealed, sizes: compute::CheckSealed), their headers
//   are valid and the policy names the board's inode — a memfd a user made and named alike is
//   not the agent's and is never adopted. Among several valid pairs (agents restarted more than
//   once while old workloads live) the newest (the policy's created_ns). nullopt when none; the
//   caller then makes a new pair (old processes keep the old one until they exit).
// - The descriptors returned are the caller's (O_RDWR, O_CLOEXEC).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "compute/sealed.h"

namespace fgpu::agent {

std::optional<compute::SealedPair> RecoverSealedPair(const std::string& uuid, const std::vector<pid_t>& candidates,
                                                     uid_t owner);

}  // namespace fgpu::agent
