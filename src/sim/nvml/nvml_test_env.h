// Test support for the simulated NVML: a fixture that gives every test its own shared
// segment and configuration, a stderr capture, and forked child processes that act on
// the shared state as another workload would.
//
// The fixture leaves the library uninitialised and removes its segment and files in
// TearDown, whatever the test did. Single-threaded use only (fork + environment).
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/abi/nvml_api.h"
#include "sim/state/shared_devices.h"

namespace fgpu::sim::nvml {

class NvmlTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Writes `json` to a file owned by this test and points FGPU_SIM_CONFIG at it.
  void UseConfig(const std::string& json);
  // Handle of device `index`; fails the test (and returns nullptr) if it cannot.
  nvmlDevice_t Device(unsigned int index);
  const std::string& segment() const { return segment_; }

 private:
  std::string segment_;
  std::vector<std::string> files_;
};

// Redirects file descriptor 2 into a temporary file until Finish().
class StderrCapture {
 public:
  StderrCapture();
  ~StderrCapture();
  StderrCapture(const StderrCapture&) = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;
  // Restores stderr and returns what was written meanwhile.
  std::string Finish();

 private:
  int saved_fd_ = -1;
  int capture_fd_ = -1;
};

// A forked process that attaches to the shared state (FGPU_SIM_CONFIG/SEGMENT as
// inherited), runs `body` on it, reports readiness and then waits to be killed. A
// body returning false makes the child exit with status 1 before reporting ready.
class ChildProcess {
 public:
  explicit ChildProcess(std::function<bool(SharedDevices&)> body);
  ~ChildProcess();  // SIGKILLs and reaps the child if still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // True once the child ran `body` successfully (waits up to 30 s).
  bool WaitReady();
  // SIGKILL, then waitpid so that the pid no longer exists.
  void KillAndReap();
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int ready_fd_ = -1;
};

// Wall clock now, microseconds since the epoch (NVML's CPU timestamp unit).
unsigned long long WallMicros();

}  // namespace fgpu::sim::nvml
