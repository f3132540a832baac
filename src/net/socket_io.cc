#include "net/socket_io.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

namespace fgpu::net {
namespace {

// Waits until `fd` is ready for `events` or the deadline passes. False on timeout or error.
bool WaitFor(int fd, short events, int64_t deadline_ms) {
  for (;;) {
    const int64_t left = deadline_ms - NowMs();
    if (left <= 0) return false;
    pollfd entry{fd, events, 0};
    const int rc = poll(&entry, 1, static_cast<int>(left));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) return false;
  }
}

}  // namespace

int64_t NowMs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1'000'000;
}

bool WriteAll(int fd, std::string_view bytes, int64_t deadline_ms) {
  while (!bytes.empty()) {
    if (!WaitFor(fd, POLLOUT, deadline_ms)) return false;
    const ssize_t written = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (written < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(written));
  }
  return true;
}

long ReadSome(int fd, char* buffer, unsigned long size, int64_t deadline_ms) {
  for (;;) {
    if (!WaitFor(fd, POLLIN, deadline_ms)) return -2;
    const ssize_t got = recv(fd, buffer, size, MSG_DONTWAIT);
    if (got >= 0) return got;
    if (errno != EINTR && errno != EAGAIN) return -1;
  }
}

}  // namespace fgpu::net
