#include "probe/byte_size.h"

#include <cctype>

namespace fgpu::probe {

namespace {

__extension__ typedef unsigned __int128 Wide;  // holds UINT64_MAX * 10^19 without overflow

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// Multiplier of a unit suffix; 0 when the suffix is unknown.
uint64_t UnitMultiplier(std::string_view unit) {
  struct Unit {
    std::string_view name;
    uint64_t multiplier;
  };
  static constexpr Unit kUnits[] = {
      {"", 1},
      {"B", 1},
      {"K", 1ull << 10},
      {"KiB", 1ull << 10},
      {"M", 1ull << 20},
      {"MiB", 1ull << 20},
      {"G", 1ull << 30},
      {"GiB", 1ull << 30},
      {"T", 1ull << 40},
      {"TiB", 1ull << 40},
      {"KB", 1000ull},
      {"MB", 1000ull * 1000},
      {"GB", 1000ull * 1000 * 1000},
      {"TB", 1000ull * 1000 * 1000 * 1000},
  };
  for (const Unit& candidate : kUnits) {
    if (EqualsIgnoreCase(unit, candidate.name)) return candidate.multiplier;
  }
  return 0;
}

}  // namespace

bool ParseSize(std::string_view text, uint64_t* bytes) {
  size_t at = 0;
  Wide whole = 0;
  const size_t whole_begin = at;
  for (; at < text.size() && IsDigit(text[at]); ++at) {
    whole = whole * 10 + static_cast<unsigned>(text[at] - '0');
    if (whole > UINT64_MAX) return false;
  }
  const bool has_whole = at > whole_begin;
  Wide fraction = 0;
  Wide fraction_scale = 1;
  bool has_fraction = false;
  if (at < text.size() && text[at] == '.') {
    ++at;
    for (; at < text.size() && IsDigit(text[at]); ++at) {
      has_fraction = true;
      if (fraction_scale < Wide{10'000'000'000'000'000'000ull}) {  // digits past 10^-19 are finer than a byte
        fraction = fraction * 10 + static_cast<unsigned>(text[at] - '0');
        fraction_scale *= 10;
      }
    }
    if (!has_fraction) return false;  // "1." or "."
  }
  if (!has_whole && !has_fraction) return false;
  while (at < text.size() && text[at] == ' ') ++at;
  const std::string_view unit = text.substr(at);
  const uint64_t multiplier = UnitMultiplier(unit);
  if (multiplier == 0) return false;
  if (has_fraction && multiplier == 1) return false;
  const Wide value = whole * multiplier + (fraction * multiplier + fraction_scale / 2) / fraction_scale;
  if (value > UINT64_MAX) return false;
  *bytes = static_cast<uint64_t>(value);
  return true;
}

}  // namespace fgpu::probe
