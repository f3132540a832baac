#include "cli/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

extern char** environ;

namespace fgpu::cli {

namespace {

int ExitStatusOf(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 255;
}

int MillisecondsUntil(Deadline deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(std::min<long long>(left.count(), 60'000));
}

}  // namespace

Result<ChildProcess> ChildProcess::Spawn(const std::vector<std::string>& argv) {
  if (argv.empty()) return Status::InvalidArgument("no program to start");
  // Close-on-exec on both ends, so no other program this process starts (here or in
  // another thread) inherits them; dup2 onto fd 1 clears the flag for this child's stdout
  // only. The write end is closed here right after the spawn: while anyone but the child
  // holds it, reading never sees end-of-file.
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return Status::Unavailable(std::string("pipe: ") + std::strerror(errno));
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  std::vector<char*> raw_argv;
  raw_argv.reserve(argv.size() + 1);
  for (const std::string& arg : argv) raw_argv.push_back(const_cast<char*>(arg.c_str()));
  raw_argv.push_back(nullptr);

  pid_t pid = -1;
  const int error = posix_spawn(&pid, raw_argv[0], &actions, nullptr, raw_argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  if (error != 0) {
    close(pipe_fds[0]);
    return Status::Unavailable("cannot start " + argv[0] + ": " + std::strerror(error));
  }
  return ChildProcess(pid, pipe_fds[0]);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_),
      running_(std::exchange(other.running_, false)),
      stdout_fd_(std::exchange(other.stdout_fd_, -1)),
      stdout_closed_(other.stdout_closed_),
      buffered_(std::move(other.buffered_)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    KillAndReap();
    CloseStdout();
    pid_ = other.pid_;
    running_ = std::exchange(other.running_, false);
    stdout_fd_ = std::exchange(other.stdout_fd_, -1);
    stdout_closed_ = other.stdout_closed_;
    buffered_ = std::move(other.buffered_);
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  KillAndReap();
  CloseStdout();
}

void ChildProcess::KillAndReap() {
  if (!running_) return;
  kill(pid_, SIGKILL);
  int wait_status = 0;
  while (waitpid(pid_, &wait_status, 0) < 0 && errno == EINTR) {
  }
  running_ = false;
}

void ChildProcess::CloseStdout() {
  if (stdout_fd_ >= 0) close(stdout_fd_);
  stdout_fd_ = -1;
  stdout_closed_ = true;
}

Result<std::optional<std::string>> ChildProcess::ReadLine(Deadline deadline) {
  while (true) {
    const size_t newline = buffered_.find('\n');
    if (newline != std::string::npos) {
      std::string line = buffered_.substr(0, newline);
      buffered_.erase(0, newline + 1);
      return std::optional<std::string>(std::move(line));
    }
    if (stdout_closed_) {
      if (buffered_.empty()) return std::optional<std::string>();
      return std::optional<std::string>(std::exchange(buffered_, {}));
    }
    pollfd readable{stdout_fd_, POLLIN, 0};
    const int ready = poll(&readable, 1, MillisecondsUntil(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return Status::Unavailable(std::string("poll: ") + std::strerror(errno));
    if (ready == 0) {
      if (std::chrono::steady_clock::now() < deadline) continue;  // the 60 s poll cap, not the deadline
      return Status::Unavailable("timed out waiting for output of pid " + std::to_string(pid_));
    }
    char chunk[4096];
    const ssize_t got = read(stdout_fd_, chunk, sizeof(chunk));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Status::Unavailable(std::string("read: ") + std::strerror(errno));
    if (got == 0) {
      CloseStdout();
    } else {
      buffered_.append(chunk, static_cast<size_t>(got));
    }
  }
}

Result<int> ChildProcess::Wait(Deadline deadline) {
  if (!running_) return Status::InvalidArgument("pid " + std::to_string(pid_) + " was already waited for");
  // No portable waitpid with a timeout; the children here exit within milliseconds of
  // closing stdout, so a short polling interval costs nothing noticeable.
  while (true) {
    int wait_status = 0;
    const pid_t done = waitpid(pid_, &wait_status, WNOHANG);
    if (done == pid_) {
      running_ = false;
      return ExitStatusOf(wait_status);
    }
    if (done < 0 && errno != EINTR) {
      return Status::Unavailable(std::string("waitpid: ") + std::strerror(errno));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      KillAndReap();
      return Status::Unavailable("pid " + std::to_string(pid_) + " did not exit in time and was killed");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace fgpu::cli
