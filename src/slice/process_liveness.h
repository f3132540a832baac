// Whether a (pid, start time) recorded in a ledger slot still names a running process.
//
// Contract
// - ReadStartTime returns /proc/<pid>/stat field 22 (clock ticks after boot): with the pid,
//   an identity that PID reuse cannot forge (a recycled pid has a later start time).
// - IsProcessDead is true only when the process is provably gone: kill(pid, 0) fails with
//   ESRCH, the pid now names a process with another start time (reuse), or the process is a
//   zombie (it has exited; the driver has released its memory). A pid <= 0 is dead. When
//   /proc cannot be read the process counts as alive: we never release the charges of a
//   process we cannot prove dead.
// - No allocation, no iostreams: usable from a pthread_atfork child handler.
#pragma once

#include <cstdint>

namespace fgpu::slice {

// 0 when the stat line cannot be read or parsed.
uint64_t ReadStartTime(int32_t pid);

bool IsProcessDead(int32_t pid, uint64_t start_time);

}  // namespace fgpu::slice
