// Durations in the nanoseconds the compute share's clocks count, for its tests.
#pragma once

#include <cstdint>

namespace fgpu::compute {

inline constexpr int64_t kUs = 1'000;
inline constexpr int64_t kMs = 1'000'000;

}  // namespace fgpu::compute
