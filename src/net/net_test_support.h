// Raw clients for the server's tests: idle connections from a chosen source address or as
// another user, which HttpCall cannot make.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>

#include "net/socket_io.h"

namespace fgpu::net::testing {

// A connected TCP socket to 127.0.0.1:`port` from `source` (any 127.0.0.0/8 address), or -1.
inline int ConnectTcp(int port, const char* source = "127.0.0.1") {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

inline int ConnectUnix(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof(address.sun_path), "%s", path.c_str());
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Everything the server sends until it closes or `timeout_ms` passes.
inline std::string ReadAll(int fd, int timeout_ms) {
  std::string answer;
  char buffer[4096];
  const int64_t deadline = NowMs() + timeout_ms;
  long got = 0;
  while ((got = ReadSome(fd, buffer, sizeof(buffer), deadline)) > 0)
    answer.append(buffer, static_cast<std::size_t>(got));
  return answer;
}

// Whether the server has closed `fd` (EOF or reset, after whatever it sent) within `timeout_ms`.
inline bool ClosedByServer(int fd, int timeout_ms) {
  char buffer[4096];
  const int64_t deadline = NowMs() + timeout_ms;
  for (;;) {
    const long got = ReadSome(fd, buffer, sizeof(buffer), deadline);
    if (got == 0 || got == -1) return true;
    if (got == -2) return false;
  }
}

// Runs `body` on a thread whose effective uid is `uid`: sockets it creates belong to `uid`, and
// it connects to a Unix socket as `uid`. Linux keeps credentials per thread, and the raw
// syscall (unlike glibc's setresuid) changes only the calling one, so the rest of the test
// stays root. False when the process may not (it is not root).
inline bool RunAsUid(uid_t uid, const std::function<void()>& body) {
  if (geteuid() != 0) return false;
  bool switched = false;
  std::thread thread([&] {
    switched = syscall(SYS_setresuid, -1, uid, -1) == 0;
    if (switched) body();
  });
  thread.join();
  return switched;
}

// Raises the soft descriptor limit to at least `wanted` (up to the hard limit).
inline void RaiseFileLimit(rlim_t wanted) {
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur >= wanted) return;
  files.rlim_cur = files.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, files.rlim_max);
  setrlimit(RLIMIT_NOFILE, &files);
}

// Polls `done` every 5 ms until it holds or `timeout_ms` passes.
inline bool WaitUntil(const std::function<bool()>& done, int timeout_ms) {
  const int64_t deadline = NowMs() + timeout_ms;
  while (!done()) {
    if (NowMs() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace fgpu::net::testing
