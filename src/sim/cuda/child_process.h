// Runs a test body in a forked child so it gets its own cuInit, its own device
// configuration and its own shared segment. The body returns "" on success or a
// failure description, which the parent reports.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "sim/state/shared_devices.h"

namespace fgpu::sim::testing {

inline std::string RunInChild(const std::function<std::string()>& body, int timeout_s = 60) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    close(fds[0]);
    alarm(static_cast<unsigned>(timeout_s));
    const std::string failure = body();
    const std::string message = failure.empty() ? "OK" : failure;
    (void)!write(fds[1], message.data(), message.size());
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string message;
  char buffer[512];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof(buffer))) > 0;) message.append(buffer, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return "child died: " + (message.empty() ? std::string("no output") : message);
  return message == "OK" ? "" : message;
}

}  // namespace fgpu::sim::testing

// Inside a RunInChild body: fail with file:line and the expression.
#define FGPU_REQUIRE(cond)                                                                           \
  do {                                                                                               \
    if (!(cond)) return std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " + #cond;       \
  } while (0)
#define FGPU_REQUIRE_CU(expr, code)                                                                  \
  do {                                                                                               \
    const CUresult fgpu_rc_ = (expr);                                                                \
    if (fgpu_rc_ != (code)) {                                                                        \
      return std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " + #expr + " returned " + \
             std::to_string(static_cast<int>(fgpu_rc_)) + ", expected " #code;                       \
    }                                                                                                \
  } while (0)
