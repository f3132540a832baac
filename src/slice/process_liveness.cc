#include "slice/process_liveness.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace fgpu::slice {
namespace {

struct StatFields {
  bool exists = false;  // the file could be opened and read
  bool parsed = false;
  char state = '?';          // field 3
  uint64_t num_threads = 0;  // field 20
  uint64_t start_time = 0;   // field 22
};

StatFields ReadStat(int32_t pid) {
  StatFields fields;
  char path[32];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  int fd = -1;
  do {
    fd = ::open(path, O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return fields;
  // The line is a few hundred bytes: comm is at most 64 and the rest are numbers.
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
  if (length == 0) return fields;  // the process exited between open and read
  fields.exists = true;

  // comm (field 2) is parenthesised and may contain ')' and spaces: parse after the last ')'.
  const char* p = std::strrchr(buffer, ')');
  if (p == nullptr) return fields;
  ++p;
  // Token k after ')' is field k + 2.
  for (int token = 1; token <= 20; ++token) {
    while (*p == ' ') ++p;
    if (*p == '\0') return fields;
    if (token == 1) fields.state = *p;
    if (token == 18 || token == 20) {
      uint64_t value = 0;
      bool any = false;
      for (; *p >= '0' && *p <= '9'; ++p) {
        value = value * 10 + static_cast<uint64_t>(*p - '0');
        any = true;
      }
      if (!any) return fields;
      (token == 18 ? fields.num_threads : fields.start_time) = value;
    }
    while (*p != ' ' && *p != '\0') ++p;
  }
  fields.parsed = true;
  return fields;
}

}  // namespace

uint64_t ReadStartTime(int32_t pid) {
  if (pid <= 0) return 0;
  const StatFields fields = ReadStat(pid);
  return fields.parsed ? fields.start_time : 0;
}

bool IsProcessDead(int32_t pid, uint64_t start_time) {
  if (pid <= 0) return true;
  // EPERM means "exists, owned by another user": alive as far as kill can tell.
  if (::kill(pid, 0) == -1 && errno == ESRCH) return true;
  const StatFields fields = ReadStat(pid);
  if (!fields.exists) {
    // Gone between kill() and open(), or /proc is not mounted: ask kill() again, which
    // cannot be fooled by a missing /proc.
    return ::kill(pid, 0) == -1 && errno == ESRCH;
  }
  if (!fields.parsed) return false;
  if (fields.start_time != start_time) return true;  // the pid was reused
  // A zombie has exited and released its address space (and with it the device memory).
  // A zombie *leader* whose other threads still run is a live process, though.
  return (fields.state == 'Z' || fields.state == 'X') && fields.num_threads <= 1;
}

}  // namespace fgpu::slice
