#include "sim/state/process_identity.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace fgpu::sim {

Result<ProcessStat> ReadProcessStat(int32_t pid) {
  if (pid <= 0) return Status::NotFound("no process has pid " + std::to_string(pid));
  char path[32];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  int fd = -1;
  do {
    fd = ::open(path, O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ESRCH) return Status::NotFound(std::string(path) + ": no such process");
    return Status::Unavailable(std::string(path) + ": " + std::strerror(err));
  }
  // The line is at most a few hundred bytes: comm is capped at 64 and the other 51
  // fields are numbers.
  char buffer[1024];
  size_t length = 0;
  while (length < sizeof(buffer) - 1) {
    const ssize_t n = ::read(fd, buffer + length, sizeof(buffer) - 1 - length);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    length += static_cast<size_t>(n);
  }
  ::close(fd);
  buffer[length] = '\0';
  if (length == 0) return Status::NotFound(std::string(path) + ": empty (process exited)");

  // comm (field 2) is in parentheses and may itself contain ')' and spaces: parse after
  // the last ')'.
  const char* close_paren = std::strrchr(buffer, ')');
  if (close_paren == nullptr) return Status::Corrupt(std::string(path) + ": no ')' after comm");
  const char* p = close_paren + 1;
  ProcessStat stat;
  // Tokens after ')': token 1 is field 3 (state), token k is field k + 2.
  for (int token = 1; token <= 20; ++token) {
    while (*p == ' ') ++p;
    if (*p == '\0') return Status::Corrupt(std::string(path) + ": too few fields");
    if (token == 1) stat.state = *p;
    if (token == 18 || token == 20) {
      uint64_t value = 0;
      bool any = false;
      for (; *p >= '0' && *p <= '9'; ++p) {
        value = value * 10 + static_cast<uint64_t>(*p - '0');
        any = true;
      }
      if (!any) return Status::Corrupt(std::string(path) + ": field " + std::to_string(token + 2) + " is not a number");
      (token == 18 ? stat.num_threads : stat.start_time) = value;
    }
    while (*p != ' ' && *p != '\0') ++p;
  }
  return stat;
}

bool IsProcessGone(int32_t pid, uint64_t start_time) {
  if (pid <= 0) return true;
  // EPERM means "exists, owned by someone else": alive as far as kill can tell.
  if (::kill(pid, 0) == -1 && errno == ESRCH) return true;
  Result<ProcessStat> stat = ReadProcessStat(pid);
  if (!stat.ok()) return stat.status().code() == StatusCode::kNotFound;  // exited since kill()
  // A zombie has released everything a real driver would free: its memory is gone too.
  // A zombie leader whose other threads still run is a live process, though.
  if ((stat->state == 'Z' || stat->state == 'X') && stat->num_threads <= 1) return true;
  return start_time != 0 && stat->start_time != start_time;
}

}  // namespace fgpu::sim
