// ChildProcess: a program started with posix_spawn whose stdout is read line by line, with
// deadlines, so a step that hangs fails instead of hanging fgpu. stderr is shared with
// ours: the child's diagnostics reach the user unchanged.
//
// Not thread-safe; one owner reads and waits. A child still running when its ChildProcess
// is destroyed is killed and reaped, so an early error leaves no stray process behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace fgpu::cli {

using Deadline = std::chrono::steady_clock::time_point;
inline Deadline DeadlineIn(std::chrono::milliseconds timeout) {
  return std::chrono::steady_clock::now() + timeout;
}

class ChildProcess {
 public:
  // argv[0] is the program's path (not looked up in PATH). The child inherits this
  // process's environment. Unavailable when it cannot be started.
  static Result<ChildProcess> Spawn(const std::vector<std::string>& argv);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  // Stays valid after Wait(), for messages.
  pid_t pid() const { return pid_; }

  // The next stdout line without its '\n'; std::nullopt once stdout is closed (a last
  // unterminated line is returned first). Unavailable when the deadline passes first.
  Result<std::optional<std::string>> ReadLine(Deadline deadline);
  // Waits for the child to exit: its exit status, or 128 + signal number as a shell
  // reports it. When the deadline passes the child is killed and Unavailable returned.
  Result<int> Wait(Deadline deadline);

 private:
  ChildProcess(pid_t pid, int stdout_fd) : pid_(pid), running_(true), stdout_fd_(stdout_fd) {}
  void KillAndReap();
  void CloseStdout();

  pid_t pid_ = -1;
  bool running_ = false;  // not yet reaped
  int stdout_fd_ = -1;
  bool stdout_closed_ = false;
  std::string buffered_;  // bytes read past the last returned line
};

}  // namespace fgpu::cli
