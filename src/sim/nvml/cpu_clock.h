// NVML reports sample times as CPU timestamps in microseconds since the Unix epoch;
// the shared device timeline runs on CLOCK_MONOTONIC nanoseconds (SharedDevices::NowNs).
//
// Conversion: cpu_us = ceil((monotonic_ns + offset) / 1000), where offset is
// CLOCK_REALTIME - CLOCK_MONOTONIC sampled once per process (Library). One fixed offset
// keeps a timestamp this process hands out and later receives back (lastSeenTimeStamp)
// on the same instant, even if the wall clock is stepped meanwhile. Rounding up means a
// sample's own timestamp, handed back, excludes that sample's kernel.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>

namespace fgpu::sim::nvml {

uint64_t MonotonicNsToCpuMicros(uint64_t monotonic_ns, int64_t realtime_minus_monotonic_ns);
// Inverse of the above, saturating: 0 for instants before the monotonic epoch,
// UINT64_MAX for instants beyond the representable range.
uint64_t CpuMicrosToMonotonicNs(uint64_t cpu_us, int64_t realtime_minus_monotonic_ns);

}  // namespace fgpu::sim::nvml
