// Who a pid is: its start time, and whether a recorded (pid, start time) still names a
// running process. The start time makes a slot safe against PID reuse: a new process
// with a recycled pid has a later start time.
//
// Thread-safe; reads /proc with plain open/read (no allocation, no iostreams).
#pragma once

#include <cstdint>

#include "core/status.h"

namespace fgpu::sim {

struct ProcessStat {
  char state = '?';         // /proc/<pid>/stat field 3: R, S, D, Z (zombie), X (dead), ...
  uint64_t num_threads = 0; // field 20: threads in the group, a zombie leader included
  uint64_t start_time = 0;  // field 22: clock ticks after boot
};

// NotFound when the process does not exist, Unavailable when /proc cannot be read,
// Corrupt when the stat line does not parse.
Result<ProcessStat> ReadProcessStat(int32_t pid);

// True when `pid` no longer names the process that had `start_time`: no such pid, a
// zombie (but not a leader thread that exited while other threads run), or a different
// start time (the pid was reused). A start_time of 0 (unknown)
// skips that comparison. When /proc is unreadable the process is assumed alive: we never
// release the memory of a process we cannot prove dead.
bool IsProcessGone(int32_t pid, uint64_t start_time);

}  // namespace fgpu::sim
