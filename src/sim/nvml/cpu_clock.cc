#include "sim/nvml/cpu_clock.h"

#include <limits>

namespace fgpu::sim::nvml {
namespace {

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

// value + offset, clamped to [0, kMax].
uint64_t SaturatingShift(uint64_t value, int64_t offset) {
  if (offset >= 0) {
    const auto up = static_cast<uint64_t>(offset);
    return value > kMax - up ? kMax : value + up;
  }
  // -(offset + 1) + 1 avoids negating INT64_MIN.
  const uint64_t down = static_cast<uint64_t>(-(offset + 1)) + 1;
  return value <= down ? 0 : value - down;
}

}  // namespace

uint64_t MonotonicNsToCpuMicros(uint64_t monotonic_ns, int64_t realtime_minus_monotonic_ns) {
  const uint64_t real_ns = SaturatingShift(monotonic_ns, realtime_minus_monotonic_ns);
  return real_ns / 1000 + (real_ns % 1000 != 0 ? 1 : 0);
}

uint64_t CpuMicrosToMonotonicNs(uint64_t cpu_us, int64_t realtime_minus_monotonic_ns) {
  if (cpu_us > kMax / 1000) return kMax;
  if (realtime_minus_monotonic_ns == std::numeric_limits<int64_t>::min()) {
    return SaturatingShift(SaturatingShift(cpu_us * 1000, std::numeric_limits<int64_t>::max()), 1);
  }
  return SaturatingShift(cpu_us * 1000, -realtime_minus_monotonic_ns);
}

}  // namespace fgpu::sim::nvml
