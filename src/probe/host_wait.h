// How long this process's threads waited for a CPU: the host's share of a spin window's
// shortfall. A slice whose launching thread sat runnable but descheduled for 30 ms of a 1 s
// window could not have asked for those 30 ms of device time, whatever the scheduler of GPU
// time did, so the compute-share tests widen a window's lower bar by exactly that much
// (docs/probe.md, `host_wait_ms`).
//
// Linux's /proc/<pid>/task/<tid>/schedstat holds three numbers: time on a CPU (ns), time spent
// runnable on a run queue waiting for one (ns), and the number of time slices.
#ifndef FGPU_PROBE_HOST_WAIT_H_
#define FGPU_PROBE_HOST_WAIT_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace fgpu::probe {

// The run-queue wait (second field) of one schedstat line; nullopt when the line is not three
// unsigned decimal numbers.
std::optional<uint64_t> ParseRunQueueWaitNs(std::string_view schedstat);

// The sum over this process's threads now; nullopt where the kernel keeps no schedstat.
std::optional<uint64_t> ProcessRunQueueWaitNs();

}  // namespace fgpu::probe

#endif  // FGPU_PROBE_HOST_WAIT_H_
