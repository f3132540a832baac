#include "agent/processes.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "slice/process_liveness.h"

namespace fgpu::agent {
namespace {

// The stat line's state (field 3) and parent (field 4), read after the last ')' of comm.
bool ReadStat(pid_t pid, char* state, pid_t* ppid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const std::size_t close = line.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream fields(line.substr(close + 1));
  long parent = 0;
  if (!(fields >> *state >> parent)) return false;
  *ppid = static_cast<pid_t>(parent);
  return true;
}

bool ReadUids(pid_t pid, uid_t* real, uid_t* effective) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Uid:", 0) != 0) continue;
    std::istringstream fields(line.substr(4));
    unsigned long r = 0, e = 0;
    if (!(fields >> r >> e)) return false;
    *real = static_cast<uid_t>(r);
    *effective = static_cast<uid_t>(e);
    return true;
  }
  return false;
}

// The unified hierarchy's path ("0::<path>") and every hierarchy's ("<id>:<controllers>:<path>").
void ReadCgroups(pid_t pid, ProcessFacts* facts) {
  std::ifstream cgroup("/proc/" + std::to_string(pid) + "/cgroup");
  std::string line;
  while (std::getline(cgroup, line)) {
    const std::size_t second = line.find(':', line.find(':') + 1);
    if (second == std::string::npos) continue;
    facts->all_cgroups.push_back(line.substr(second + 1));
    if (line.rfind("0::", 0) == 0) facts->cgroup = line.substr(3);
  }
}

int PidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

int PidfdSendSignal(int pidfd, int signal) {
  return static_cast<int>(syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0));
}

}  // namespace

std::optional<ProcessFacts> ReadProcess(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  ProcessFacts facts;
  facts.pid = pid;
  char state = '?';
  facts.start_time = slice::ReadStartTime(pid);
  if (facts.start_time == 0 || !ReadStat(pid, &state, &facts.ppid) ||
      !ReadUids(pid, &facts.real_uid, &facts.effective_uid)) {
    return std::nullopt;
  }
  facts.zombie = state == 'Z' || state == 'X';
  ReadCgroups(pid, &facts);
  // The same process throughout: a pid reused between the reads has another start time.
  if (slice::ReadStartTime(pid) != facts.start_time) return std::nullopt;
  return facts;
}

bool SignalExactly(pid_t pid, uint64_t start_time, int signal) {
  if (pid <= 1 || start_time == 0) return false;
  const int pidfd = PidfdOpen(pid);
  if (pidfd < 0) return false;
  // The pidfd names one process for good; checked after opening it, the start time proves it
  // is the one recorded (before, the pid could have been reused in between).
  const bool same = slice::ReadStartTime(pid) == start_time;
  const bool sent = same && PidfdSendSignal(pidfd, signal) == 0;
  close(pidfd);
  return sent;
}

}  // namespace fgpu::agent
