#include "agent/log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "core/units.h"

namespace fgpu::agent {
namespace {

std::atomic<int>& Threshold() {
  static std::atomic<int> threshold{static_cast<int>(LogLevel::kInfo)};
  return threshold;
}

std::atomic<int>& Descriptor() {
  static std::atomic<int> fd{STDERR_FILENO};
  return fd;
}

bool NeedsQuotes(std::string_view value) {
  if (value.empty()) return true;
  for (char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= ' ' || byte == 0x7f || c == '"' || c == '\\' || c == '=') return true;
  }
  return false;
}

void AppendValue(std::string& line, std::string_view value) {
  if (!NeedsQuotes(value)) {
    line += value;
    return;
  }
  line += '"';
  for (char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      line += '\\';
      line += c;
    } else if (byte < ' ' || byte == 0x7f) {
      char escaped[5];
      std::snprintf(escaped, sizeof(escaped), "\\x%02x", byte);
      line += escaped;
    } else {
      line += c;
    }
  }
  line += '"';
}

// systemd's "<N>" priority prefix when stderr is the journal's stream (JOURNAL_STREAM is
// "device:inode" of it), else "". Decided once: the agent never reopens its stderr.
const char* JournalPrefix(LogLevel level) {
  static const bool journal = [] {
    const char* stream = std::getenv("JOURNAL_STREAM");
    struct stat info {};
    if (stream == nullptr || fstat(STDERR_FILENO, &info) != 0) return false;
    unsigned long long device = 0, inode = 0;
    return std::sscanf(stream, "%llu:%llu", &device, &inode) == 2 && device == info.st_dev && inode == info.st_ino;
  }();
  if (!journal || Descriptor().load(std::memory_order_relaxed) != STDERR_FILENO) return "";
  switch (level) {
    case LogLevel::kDebug: return "<7>";
    case LogLevel::kInfo: return "<6>";
    case LogLevel::kWarn: return "<4>";
    case LogLevel::kError: return "<3>";
  }
  return "";
}

}  // namespace

Result<LogLevel> ParseLogLevel(std::string_view name) {
  if (name == "debug") return LogLevel::kDebug;
  if (name == "info") return LogLevel::kInfo;
  if (name == "warn" || name == "warning") return LogLevel::kWarn;
  if (name == "error") return LogLevel::kError;
  return Status::InvalidArgument("log level must be debug, info, warn or error, not '" + std::string(name) + "'");
}

const char* LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "info";
}

void SetLogLevel(LogLevel level) { Threshold().store(static_cast<int>(level), std::memory_order_relaxed); }

bool LogEnabled(LogLevel level) { return static_cast<int>(level) >= Threshold().load(std::memory_order_relaxed); }

void SetLogDescriptor(int fd) { Descriptor().store(fd, std::memory_order_relaxed); }

std::string FormatLogLine(LogLevel level, std::string_view event, const LogFields& fields) {
  std::string line = "fgpu agent: ";
  line += LogLevelName(level);
  line += ' ';
  line += event;
  for (const auto& [key, value] : fields) {
    line += ' ';
    line += key;
    line += '=';
    AppendValue(line, value);
  }
  return line;
}

std::string CompactBytes(uint64_t bytes) {
  std::string text = FormatByteSize(bytes);
  std::erase(text, ' ');
  return text;
}

void Log(LogLevel level, std::string_view event, const LogFields& fields) {
  if (!LogEnabled(level)) return;
  const std::string line = JournalPrefix(level) + FormatLogLine(level, event, fields) + "\n";
  // One write: concurrent lines never interleave. A log that cannot be written is dropped.
  const ssize_t written = write(Descriptor().load(std::memory_order_relaxed), line.data(), line.size());
  (void)written;
}

}  // namespace fgpu::agent
