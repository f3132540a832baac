// Byte arithmetic that saturates at UINT64_MAX instead of wrapping: a sum or size that overflows
// becomes a request no ledger can grant, never a small one that it would.
#pragma once

#include <cstdint>

namespace fgpu::hook {

inline uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

inline uint64_t SaturatingMultiply(uint64_t a, uint64_t b) {
  uint64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? UINT64_MAX : product;
}

// `bytes` rounded up to a multiple of `granularity` (0 and 1 leave it as it is).
inline uint64_t RoundUpToGranule(uint64_t bytes, uint64_t granularity) {
  if (granularity <= 1 || bytes % granularity == 0) return bytes;
  return SaturatingAdd(bytes, granularity - bytes % granularity);
}

}  // namespace fgpu::hook
