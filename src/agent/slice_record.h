// What the agent knows of one slice: its identity, where it lives, its limits and who asked
// for it. The limits file in `dir` is the interposer's copy; this record is the agent's.
#pragma once

#include <sys/types.h>

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>

#include "agent/isolation.h"
#include "slice/slice.h"

namespace fgpu::agent {

// Whose work a slice holds in a batch system (Slurm: job "1234.0", user "alice", account
// "physics"), so chargeback can bill by them; empty when the creator named none.
struct JobLabels {
  std::string job;
  std::string user;
  std::string account;

  bool operator==(const JobLabels&) const = default;
};

// Which Kubernetes pod and resource claim a slice serves (the DRA plugin, src/k8s), each up to
// 253 of [a-z0-9.-]; empty when the creator named none. Exported on the slice's /metrics series.
struct KubeLabels {
  std::string kube_namespace;
  std::string pod;
  std::string claim;
  // The pod's UID, set by an admin (the plugin) only: the pod's cgroup then holds the slice's
  // processes (Membership), as a Slurm job's cgroup holds its job's. Not a /metrics label.
  std::string pod_uid{};

  bool operator==(const KubeLabels&) const = default;
};

struct SliceRecord {
  std::string id;
  std::string gpu_uuid;
  uint64_t memory_bytes = 0;
  uint32_t compute_share = 100;
  slice::ComputeMode compute_mode = slice::ComputeMode::kShare;
  slice::Tier tier = slice::Tier::kStandard;
  std::string tenant;
  JobLabels labels;
  KubeLabels kube;
  // The creator's idempotency key ("" = none): a create retried with it answers this slice
  // (docs/agent.md "Idempotent creates").
  std::string idempotency_key;
  int64_t owner_uid = -1;  // who created it (SO_PEERCRED over the Unix socket; -1 over TCP)
  int64_t owner_pid = -1;
  uint64_t owner_start_time = 0;  // /proc/<pid>/stat field 22: the owner's reuse-proof identity
  // Deleted by the agent once the owner has exited and no process of the slice is alive
  // (`fgpu run`'s slices: released when the workload's last process exits, even if fgpu run
  // itself was killed).
  bool release_on_exit = false;
  // trusted: beside other slices; hard: a MIG instance of its own; exclusive: a whole GPU of the
  // exclusive class (its limits are then the whole instance's or GPU's).
  Isolation isolation = Isolation::kTrusted;
  std::string dir;          // the slice directory the workload's FGPU_SLICE names
  int64_t created_unix_ms = 0;
  // Chargeback: usage is recorded up to here (0: not yet, from created_unix_ms), and the
  // slice's measured busy counter (compute board) was this much then.
  int64_t accounted_until_ms = 0;
  uint64_t accounted_busy_ns = 0;

  bool operator==(const SliceRecord&) const = default;
};

// Slice ids are "s" and a number the state directory never hands out twice (Store keeps the
// highest ever recorded), so usage records of different slices never share an id.
inline std::string SliceIdOf(uint64_t number) { return std::string("s").append(std::to_string(number)); }

// The number in an id SliceIdOf made; nullopt for anything else.
inline std::optional<uint64_t> SliceNumberOf(const std::string& id) {
  if (id.size() < 2 || id[0] != 's') return std::nullopt;
  uint64_t number = 0;
  const auto [end, error] = std::from_chars(id.data() + 1, id.data() + id.size(), number);
  if (error != std::errc() || end != id.data() + id.size()) return std::nullopt;
  return number;
}

// One closed interval of a slice's usage: what chargeback bills (docs/agent.md "Chargeback").
struct UsageRecord {
  std::string slice_id;
  std::string tenant;
  std::string gpu_uuid;
  int64_t start_unix_ms = 0;
  int64_t end_unix_ms = 0;
  double reserved_gpu_seconds = 0;  // wall time × share
  double memory_gib_hours = 0;      // cap × wall time
  double busy_gpu_seconds = 0;      // measured GPU occupancy
  JobLabels labels;                 // the slice's, copied: records outlive their slice
};

// Usage summed over records, by tenant, slice, account, user or job, prorated to a time window.
struct UsageTotal {
  std::string key;
  double reserved_gpu_seconds = 0;
  double memory_gib_hours = 0;
  double busy_gpu_seconds = 0;
  int64_t records = 0;
};

}  // namespace fgpu::agent
