#include "sim/nvml/nvml_test_env.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <poll.h>

namespace fgpu::sim::nvml {
namespace {

std::atomic<int> g_next_test_id{0};

std::string TempDir() {
  const char* dir = std::getenv("TMPDIR");
  return dir != nullptr && *dir != '\0' ? dir : "/tmp";
}

bool WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

void NvmlTest::SetUp() {
  const int id = g_next_test_id.fetch_add(1);
  segment_ = "/fgpu-nvml-test-" + std::to_string(::getpid()) + "-" + std::to_string(id);
  ASSERT_EQ(::setenv(kSegmentEnv, segment_.c_str(), 1), 0);
  ASSERT_EQ(::unsetenv(kConfigEnv), 0);
}

void NvmlTest::TearDown() {
  // Undo every init the test left behind, however many.
  while (nvmlShutdown() == NVML_SUCCESS) {
  }
  EXPECT_TRUE(SharedDevices::Remove(segment_).ok());
  for (const std::string& file : files_) ::unlink(file.c_str());
  ::unsetenv(kConfigEnv);
  ::unsetenv(kSegmentEnv);
}

void NvmlTest::UseConfig(const std::string& json) {
  std::string path = TempDir() + "/fgpu-nvml-test-config-XXXXXX";
  const int fd = ::mkstemp(path.data());
  ASSERT_GE(fd, 0) << "mkstemp " << path;
  files_.push_back(path);
  const bool written = WriteAll(fd, json);
  ::close(fd);
  ASSERT_TRUE(written);
  ASSERT_EQ(::setenv(kConfigEnv, path.c_str(), 1), 0);
}

nvmlDevice_t NvmlTest::Device(unsigned int index) {
  nvmlDevice_t device = nullptr;
  EXPECT_EQ(nvmlDeviceGetHandleByIndex_v2(index, &device), NVML_SUCCESS) << "device " << index;
  return device;
}

StderrCapture::StderrCapture() {
  std::fflush(stderr);
  std::string path = TempDir() + "/fgpu-nvml-test-stderr-XXXXXX";
  capture_fd_ = ::mkstemp(path.data());
  if (capture_fd_ < 0) return;
  ::unlink(path.c_str());
  saved_fd_ = ::dup(STDERR_FILENO);
  ::dup2(capture_fd_, STDERR_FILENO);
}

StderrCapture::~StderrCapture() { (void)Finish(); }

std::string StderrCapture::Finish() {
  if (capture_fd_ < 0) return "";
  std::fflush(stderr);
  ::dup2(saved_fd_, STDERR_FILENO);
  ::close(saved_fd_);
  std::string text;
  char buffer[4096];
  ::lseek(capture_fd_, 0, SEEK_SET);
  ssize_t n = 0;
  while ((n = ::read(capture_fd_, buffer, sizeof(buffer))) > 0) text.append(buffer, static_cast<size_t>(n));
  ::close(capture_fd_);
  capture_fd_ = -1;
  saved_fd_ = -1;
  return text;
}

ChildProcess::ChildProcess(std::function<bool(SharedDevices&)> body) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return;
  std::fflush(nullptr);  // nothing buffered may be written twice
  pid_ = ::fork();
  if (pid_ == 0) {
    ::close(fds[0]);
    auto shared = AttachFromEnvironment();
    if (!shared.ok() || !body(**shared)) ::_exit(1);
    const char ready = 'r';
    if (::write(fds[1], &ready, 1) != 1) ::_exit(2);
    while (true) ::pause();  // keeps the charges alive until SIGKILL
  }
  ::close(fds[1]);
  if (pid_ < 0) {
    ::close(fds[0]);
    return;
  }
  ready_fd_ = fds[0];
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) KillAndReap();
  if (ready_fd_ >= 0) ::close(ready_fd_);
}

bool ChildProcess::WaitReady() {
  if (ready_fd_ < 0) return false;
  pollfd pfd{ready_fd_, POLLIN, 0};
  if (::poll(&pfd, 1, 30'000) != 1) return false;
  char byte = 0;
  return ::read(ready_fd_, &byte, 1) == 1 && byte == 'r';
}

void ChildProcess::KillAndReap() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

unsigned long long WallMicros() {
  using namespace std::chrono;
  return static_cast<unsigned long long>(duration_cast<microseconds>(system_clock::now().time_since_epoch()).count());
}

}  // namespace fgpu::sim::nvml
