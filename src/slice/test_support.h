// Helpers for this folder's tests: a private scratch directory per test, a slice spec,
// raw file edits, memory shared with forked children, and child-process plumbing. Tests only.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "slice/process_liveness.h"
#include "slice/slice.h"

namespace fgpu::slice::testing {

class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "fgpu-slice-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp failed";
      return;
    }
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  // Where a test's slice lives (created by the test).
  std::string slice() const { return path_ + "/slice"; }

 private:
  std::string path_;
};

inline constexpr const char* kUuid0 = "GPU-00000000-1111-2222-3333-444444444444";
inline constexpr const char* kUuid1 = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";

inline SliceSpec OneDeviceSpec(uint64_t cap) {
  SliceSpec spec;
  spec.id = "test-slice";
  spec.devices.push_back(DeviceLimit{kUuid0, cap, 100});
  return spec;
}

inline SliceSpec TwoDeviceSpec(uint64_t cap0, uint64_t cap1) {
  SliceSpec spec = OneDeviceSpec(cap0);
  spec.devices.push_back(DeviceLimit{kUuid1, cap1, 50});
  return spec;
}

// Overwrites `size` bytes at `offset` of `path` (a raw edit, as a corrupting writer would).
inline void PokeBytes(const std::string& path, size_t offset, const void* data, size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(::pwrite(fd, data, size, static_cast<off_t>(offset)), static_cast<ssize_t>(size));
  ::close(fd);
}

template <typename T>
void Poke(const std::string& path, size_t offset, T value) {
  PokeBytes(path, offset, &value, sizeof(value));
}

// An anonymous MAP_SHARED object of type T visible to the forked children of this process.
template <typename T>
class SharedObject {
 public:
  SharedObject() {
    void* memory = ::mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) {
      ADD_FAILURE() << "mmap failed";
      return;
    }
    object_ = new (memory) T();
  }
  ~SharedObject() {
    if (object_ != nullptr) {
      object_->~T();
      ::munmap(object_, sizeof(T));
    }
  }
  SharedObject(const SharedObject&) = delete;
  SharedObject& operator=(const SharedObject&) = delete;
  T* operator->() const { return object_; }
  T& operator*() const { return *object_; }

 private:
  T* object_ = nullptr;
};

// Forks a child that runs `body` and _exits with its return value (no gtest, no atexit in
// the child). Returns the child's pid.
template <typename Body>
pid_t ForkChild(Body body) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  return pid;
}

// Waits for `pid`; returns its exit code, or 128 + signal when a signal killed it.
// A process that is certainly alive for the whole test, and is not this one: the parent.
inline ProcessUsage LiveStranger() {
  ProcessUsage stranger;
  stranger.pid = ::getppid();
  stranger.start_time = ReadStartTime(stranger.pid);
  return stranger;
}

inline int WaitChild(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace fgpu::slice::testing
