// The agent's event log (docs/agent.md "Logs"): one line per event on stderr, for journald or
// any supervisor that keeps a daemon's stderr.
//
//   fgpu agent: info create slice=s7 gpu=GPU-… memory=1GiB compute=30 mode=share tier=standard tenant=a uid=1000
//   fgpu agent: warn refuse status=403 method=POST path=/v1/slices uid=1001 reason="tier latency is not …"
//
// Contract
// - A line is "fgpu agent: ", the level word (debug, info, warn, error), the event word, then
//   key=value fields. A value with a space, a quote, a backslash or a control character is
//   quoted, with \" \\ and \xNN escapes: a client's bytes in a reason can never start a line
//   of their own or forge a field. No colour.
// - Under systemd (JOURNAL_STREAM names this stderr) each line starts with the sd-daemon
//   priority prefix (<3> error … <7> debug), so `journalctl -p warning` filters by level.
// - Each line is one write(2): lines of concurrent threads never interleave.
// - Events below the level (SetLogLevel; default info) cost one relaxed atomic load.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace fgpu::agent {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

// "debug", "info", "warn" (or "warning"), "error"; InvalidArgument names the choices.
Result<LogLevel> ParseLogLevel(std::string_view name);
const char* LogLevelName(LogLevel level);

void SetLogLevel(LogLevel level);
bool LogEnabled(LogLevel level);

// One event's fields, in order. Numbers go in as text (std::to_string).
using LogFields = std::vector<std::pair<std::string_view, std::string>>;

// The line Log writes, without the journald prefix and the newline (for tests).
std::string FormatLogLine(LogLevel level, std::string_view event, const LogFields& fields);

// Writes the event when `level` is enabled.
void Log(LogLevel level, std::string_view event, const LogFields& fields);

// A size without the space FormatByteSize puts in ("1GiB", "1.50GiB"): one token in a line.
std::string CompactBytes(uint64_t bytes);

// Where Log writes (default: stderr, 2); tests point it at a pipe or a file.
void SetLogDescriptor(int fd);

}  // namespace fgpu::agent
