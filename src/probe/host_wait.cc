#include "probe/host_wait.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <string>

namespace fgpu::probe {

namespace {

// One unsigned decimal number at `text`'s start, consumed with the spaces after it.
std::optional<uint64_t> TakeNumber(std::string_view* text) {
  uint64_t value = 0;
  size_t digits = 0;
  while (digits < text->size() && (*text)[digits] >= '0' && (*text)[digits] <= '9') {
    const uint64_t digit = static_cast<uint64_t>((*text)[digits] - '0');
    if (value > (UINT64_MAX - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  text->remove_prefix(digits);
  while (!text->empty() && (text->front() == ' ' || text->front() == '\n')) text->remove_prefix(1);
  return value;
}

std::optional<uint64_t> ThreadRunQueueWaitNs(int task_dir, const char* tid) {
  const std::string path = std::string(tid) + "/schedstat";
  const int fd = openat(task_dir, path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;  // the thread ended since the directory was read
  char buffer[128];
  const ssize_t got = read(fd, buffer, sizeof buffer - 1);
  close(fd);
  if (got <= 0) return std::nullopt;
  return ParseRunQueueWaitNs(std::string_view(buffer, static_cast<size_t>(got)));
}

}  // namespace

std::optional<uint64_t> ParseRunQueueWaitNs(std::string_view schedstat) {
  std::optional<uint64_t> fields[3];
  for (std::optional<uint64_t>& field : fields) {
    field = TakeNumber(&schedstat);
    if (!field) return std::nullopt;
  }
  if (!schedstat.empty()) return std::nullopt;
  return fields[1];
}

std::optional<uint64_t> ProcessRunQueueWaitNs() {
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return std::nullopt;
  uint64_t total = 0;
  bool any = false;
  while (const dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    if (const std::optional<uint64_t> wait = ThreadRunQueueWaitNs(dirfd(tasks), entry->d_name)) {
      total += *wait;
      any = true;
    }
  }
  closedir(tasks);
  if (!any) return std::nullopt;
  return total;
}

}  // namespace fgpu::probe
