#include "hook/interpose/log.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace fgpu::hook {

void LogProblem(const char* format, ...) {
  char line[1024];
  constexpr char kPrefix[] = "fgpu: ";
  std::memcpy(line, kPrefix, sizeof(kPrefix) - 1);
  size_t length = sizeof(kPrefix) - 1;
  va_list args;
  va_start(args, format);
  const int written = std::vsnprintf(line + length, sizeof(line) - length - 1, format, args);
  va_end(args);
  if (written > 0) length += std::min(static_cast<size_t>(written), sizeof(line) - length - 2);
  line[length++] = '\n';
  // errno belongs to the application: a diagnostic must not change it.
  const int saved_errno = errno;
  ssize_t ignored = write(STDERR_FILENO, line, length);
  (void)ignored;
  errno = saved_errno;
}

}  // namespace fgpu::hook
