// Helpers for this folder's tests: unique segment names that are removed at scope exit,
// and child processes that report back through a pipe.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <functional>
#include <string>

#include "sim/state/shared_devices.h"

namespace fgpu::sim::testing {

// "/fgpu-test-<pid>-<counter>", removed (again) when the scope ends.
class ScopedSegment {
 public:
  ScopedSegment() {
    static std::atomic<int> counter{0};
    name_ = "/fgpu-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
    (void)SharedDevices::Remove(name_);
  }
  ~ScopedSegment() { (void)SharedDevices::Remove(name_); }
  ScopedSegment(const ScopedSegment&) = delete;
  ScopedSegment& operator=(const ScopedSegment&) = delete;
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

// A one-directional pipe carrying fixed-size values between a parent and a forked child.
class Channel {
 public:
  Channel() {
    if (::pipe(fds_) != 0) fds_[0] = fds_[1] = -1;
  }
  ~Channel() {
    CloseRead();
    CloseWrite();
  }
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  template <typename T>
  bool Send(const T& value) {
    return WriteAll(&value, sizeof(value));
  }
  // False on end of file (the writer closed or died) or error.
  template <typename T>
  bool Receive(T* value) {
    return ReadAll(value, sizeof(*value));
  }
  void CloseRead() {
    if (fds_[0] >= 0) ::close(fds_[0]);
    fds_[0] = -1;
  }
  void CloseWrite() {
    if (fds_[1] >= 0) ::close(fds_[1]);
    fds_[1] = -1;
  }

 private:
  bool WriteAll(const void* data, size_t size) {
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
      const ssize_t n = ::write(fds_[1], p, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      p += n;
      size -= static_cast<size_t>(n);
    }
    return true;
  }
  bool ReadAll(void* data, size_t size) {
    char* p = static_cast<char*>(data);
    while (size > 0) {
      const ssize_t n = ::read(fds_[0], p, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      p += n;
      size -= static_cast<size_t>(n);
    }
    return true;
  }
  int fds_[2];
};

// Forks; the child runs `body` and exits with its return value without running the
// parent's atexit handlers or gtest machinery. Returns the child's pid (or -1).
inline pid_t ForkChild(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  return pid;
}

// Waits for `pid`; returns its exit code, 128 + signal if killed, or -1.
inline int WaitChild(pid_t pid) {
  int status = 0;
  pid_t rc = 0;
  do {
    rc = ::waitpid(pid, &status, 0);
  } while (rc < 0 && errno == EINTR);
  if (rc != pid) return -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// A small device set for tests: `devices` devices of `memory` bytes, 2 MiB granularity,
// 1 MiB context overhead.
inline SimConfig SmallConfig(int devices = 1, uint64_t memory = 64ull << 20) {
  SimConfig config;
  for (int i = 0; i < devices; ++i) {
    DeviceSpec spec;
    spec.total_bytes = memory;
    spec.context_overhead = 1ull << 20;
    config.devices.push_back(spec);
  }
  return config;
}

}  // namespace fgpu::sim::testing
