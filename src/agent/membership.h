// Membership: which processes belong to a slice, by facts the processes cannot forge
// (docs/security.md "Signals only to proven members").
//
// A process belongs to a slice when it is not init (pid > 1), is alive, runs as the slice's
// owner (every uid), and one of these holds:
//   - it is in the slice's cgroup (or below it): the agent moved the process that joined there,
//     and a process cannot leave a cgroup it cannot write the parent of;
//   - it is in the batch system's cgroup of the slice's job (Slurm: a path component
//     "job_<id>", and "step_<step>" when the slice names a step);
//   - it is in the cgroup of the slice's pod (Kubernetes, a pod_uid an admin set: under the
//     kubelet's root "/kubepods" (cgroupfs) or "/kubepods.slice" (systemd), a path component
//     "pod<uid>" or "kubepods-…-pod<uid, '-' as '_'>.slice");
//   - it joined (POST /v1/slices/{id}/join, the kernel naming the caller), or descends from a
//     process that did, by the parent links in /proc (a process reparented to init or a
//     subreaper has left the tree: only a cgroup still holds it).
// A pid read from a ledger, NVML or /proc is only ever a candidate checked against this.
//
// Contract
// - Cgroups are used when a writable cgroup v2 hierarchy is mounted (CgroupBase()); otherwise
//   membership rests on the joined processes. Join moves the caller into the slice's cgroup
//   unless the slice belongs to a batch job (its own cgroup already holds it).
// - Members are persisted by the caller (Store) and restored with Restore.
// - Thread-safe.
#pragma once

#include <sys/types.h>

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/processes.h"
#include "agent/slice_record.h"
#include "core/status.h"

namespace fgpu::agent {

struct Member {
  pid_t pid = 0;
  uint64_t start_time = 0;
  bool operator==(const Member&) const = default;
};

class Membership {
 public:
  // `cgroup_base`: the directory (absolute, in the cgroup v2 mount) under which slice cgroups
  // are made, and `cgroup_base_path` the same as /proc/<pid>/cgroup names it; both empty: none.
  Membership(std::string cgroup_base, std::string cgroup_base_path);

  // Where this agent keeps its slices' cgroups: "<mount>/fgpu/<instance>" for a writable cgroup v2
  // mount, nullopt when there is none. `instance` keeps agents of different state directories
  // apart.
  static std::optional<std::pair<std::string, std::string>> CgroupBase(const std::string& instance);

  void Restore(const std::string& slice_id, std::vector<Member> members);
  // Records `process` as a member of `slice` and, for a slice of no batch job, moves it into the
  // slice's cgroup. The caller has checked who asks.
  Status Join(const SliceRecord& slice, const ProcessFacts& process);
  // Removes the slice's records and its cgroup (once empty; retried by Prune).
  void Forget(const std::string& slice_id);
  std::vector<Member> Members(const std::string& slice_id) const;

  bool BelongsTo(const ProcessFacts& process, const SliceRecord& slice) const;
  // Every live process proven to belong to the slice: its cgroup's, its job's, its joined
  // processes and their descendants (a /proc scan), and `candidates` that prove to be members.
  std::vector<ProcessFacts> ProcessesOf(const SliceRecord& slice, const std::vector<pid_t>& candidates) const;

  // The processes in the slice's cgroup now (none without cgroups): candidates, as any.
  std::vector<pid_t> CgroupProcesses(const std::string& slice_id) const;
  // The cgroup path (as /proc/<pid>/cgroup names it) of a slice; "" without cgroups.
  std::string CgroupPathOf(const std::string& slice_id) const;
  // Drops dead members' records and removes every empty slice cgroup (an empty cgroup holds
  // nothing: Join makes it again).
  void Prune();
  // At a clean stop: removes the empty slice cgroups and, when none is left, this agent's base.
  void Close();

 private:
  void RemoveEmptyCgroups() const;
  bool InPodCgroup(const ProcessFacts& process, const SliceRecord& slice) const;
  bool InJobCgroup(const ProcessFacts& process, const SliceRecord& slice) const;
  bool DescendsFromMember(const ProcessFacts& process, const std::string& slice_id) const;

  std::string cgroup_base_;       // filesystem path
  std::string cgroup_base_path_;  // as /proc/<pid>/cgroup shows it
  mutable std::mutex mutex_;
  std::map<std::string, std::vector<Member>> members_;
  std::vector<std::string> stale_cgroups_;  // forgotten slices' cgroups still holding processes
};

}  // namespace fgpu::agent
