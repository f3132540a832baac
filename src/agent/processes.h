// What the agent may believe about a process, and how it signals one (docs/security.md
// "Signals").
//
// Contract
// - ReadProcess(pid) reads /proc/<pid>/{stat,status,cgroup}: nullopt when the process is gone
//   or unreadable. Nothing a process can set for itself (its environment, its comm) is read.
// - SignalExactly(pid, start_time, signal) signals that process and no other: it refuses
//   pid <= 1, opens a pidfd (which pins the process: the pid cannot be reused under it), checks
//   the start time through it, then signals through it (pidfd_send_signal). False when the
//   process is gone, is another process now, or the kernel refused.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fgpu::agent {

struct ProcessFacts {
  pid_t pid = 0;
  pid_t ppid = 0;
  uint64_t start_time = 0;  // /proc/<pid>/stat field 22
  uid_t real_uid = 0;
  uid_t effective_uid = 0;
  std::string cgroup;  // the cgroup v2 path ("/system.slice/x.scope"); "" on a v1-only host
  std::vector<std::string> all_cgroups;  // every hierarchy's path (v1 and v2), for batch systems' jobs
  bool zombie = false;

  // Every uid the process acts with is `uid`: a setuid program started by the user is not.
  bool RunsAs(uid_t uid) const { return real_uid == uid && effective_uid == uid; }
};

std::optional<ProcessFacts> ReadProcess(pid_t pid);

bool SignalExactly(pid_t pid, uint64_t start_time, int signal);

}  // namespace fgpu::agent
