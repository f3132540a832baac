// Byte sizes as people write them ("512MiB", "1.5GiB", "500MB") and as fgpu prints them.
//
// Contract
// - ParseByteSize accepts a non-negative decimal number with an optional unit: B, KiB, MiB,
//   GiB, TiB, PiB (1024-based, also written Ki..Pi or K, M, G, T, P: `4G` = `4Gi` = `4GiB`)
//   or KB, MB, GB, TB, PB (SI, 1000-based). Units are
//   case-insensitive and may be separated from the number by spaces. A fraction is allowed
//   with a unit ("1.5GiB") and is rounded to the nearest byte; a bare number or a "B" count
//   must be whole. Anything else (empty, sign, exponent, trailing junk, more than
//   UINT64_MAX bytes) is InvalidArgument with a message that quotes the input.
// - FormatByteSize picks the largest binary unit that keeps the value >= 1 and prints an
//   exact multiple as an integer ("512 MiB") and anything else with two decimals
//   ("1.50 GiB").
// - Pure functions: thread-safe, no allocation beyond the returned string, never throw
//   (except std::bad_alloc from the string).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace fgpu {

inline constexpr uint64_t kKiB = 1ull << 10;
inline constexpr uint64_t kMiB = 1ull << 20;
inline constexpr uint64_t kGiB = 1ull << 30;
inline constexpr uint64_t kTiB = 1ull << 40;

Result<uint64_t> ParseByteSize(std::string_view text);
std::string FormatByteSize(uint64_t bytes);

}  // namespace fgpu
