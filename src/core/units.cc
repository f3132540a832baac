#include "core/units.h"

#include <array>
#include <cstdio>

namespace fgpu {
namespace {

// 128-bit intermediates let "1.999999999999GiB" round exactly without floating point.
__extension__ typedef unsigned __int128 U128;

constexpr U128 kUint64Max = static_cast<U128>(UINT64_MAX);
constexpr int kMaxFractionDigits = 18;  // 10^18 < 2^64; more digits cannot change the result

struct Unit {
  std::string_view name;
  uint64_t multiplier;
};

// A bare letter (`4G`, as coreutils, docker and fgpu-probe read it) and `Gi` (as Kubernetes
// writes it) are the binary units too: GPU memory is counted in GiB.
constexpr std::array<Unit, 21> kUnits = {{
    {"b", 1},
    {"kib", 1ull << 10}, {"mib", 1ull << 20}, {"gib", 1ull << 30}, {"tib", 1ull << 40}, {"pib", 1ull << 50},
    {"ki", 1ull << 10}, {"mi", 1ull << 20}, {"gi", 1ull << 30}, {"ti", 1ull << 40}, {"pi", 1ull << 50},
    {"k", 1ull << 10}, {"m", 1ull << 20}, {"g", 1ull << 30}, {"t", 1ull << 40}, {"p", 1ull << 50},
    {"kb", 1'000ull}, {"mb", 1'000'000ull}, {"gb", 1'000'000'000ull}, {"tb", 1'000'000'000'000ull},
    {"pb", 1'000'000'000'000'000ull},
}};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != b[i]) return false;
  }
  return true;
}

Status Invalid(std::string_view text, std::string_view why) {
  std::string msg = "invalid byte size \"";
  msg.append(text);
  msg.append("\": ");
  msg.append(why);
  return Status::InvalidArgument(std::move(msg));
}

constexpr std::string_view kExpected =
    "expected a non-negative number with an optional unit (B; KiB, MiB, GiB, TiB, PiB, also written Ki, Gi or K, G; "
    "KB, MB, GB, TB, PB)";

}  // namespace

Result<uint64_t> ParseByteSize(std::string_view text) {
  if (text.empty()) return Invalid(text, "empty");
  size_t pos = 0;
  if (text[0] == '-') return Invalid(text, "negative sizes are not allowed");
  if (!IsDigit(text[0])) return Invalid(text, kExpected);

  U128 whole = 0;
  while (pos < text.size() && IsDigit(text[pos])) {
    whole = whole * 10 + static_cast<unsigned>(text[pos] - '0');
    if (whole > kUint64Max) return Invalid(text, "larger than 2^64-1 bytes");
    ++pos;
  }
  U128 fraction = 0;      // the fraction digits as an integer...
  U128 fraction_scale = 1;  // ...over this power of ten
  bool has_fraction = false;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    if (pos >= text.size() || !IsDigit(text[pos])) return Invalid(text, "a '.' must be followed by digits");
    has_fraction = true;
    int digits = 0;
    while (pos < text.size() && IsDigit(text[pos])) {
      if (digits < kMaxFractionDigits) {
        fraction = fraction * 10 + static_cast<unsigned>(text[pos] - '0');
        fraction_scale *= 10;
        ++digits;
      }
      ++pos;
    }
  }
  const size_t number_end = pos;
  while (pos < text.size() && text[pos] == ' ') ++pos;
  std::string_view unit_text = text.substr(pos);
  if (unit_text.empty() && pos != number_end) return Invalid(text, "trailing spaces");

  uint64_t multiplier = 1;
  bool explicit_bytes = unit_text.empty();
  if (!unit_text.empty()) {
    bool found = false;
    for (const Unit& unit : kUnits) {
      if (EqualsIgnoringCase(unit_text, unit.name)) {
        multiplier = unit.multiplier;
        explicit_bytes = unit.multiplier == 1;
        found = true;
        break;
      }
    }
    if (!found) return Invalid(text, kExpected);
  }
  if (has_fraction && explicit_bytes && fraction != 0) {
    return Invalid(text, "a byte count must be a whole number");
  }

  U128 bytes = whole * multiplier;
  // Round half up: (fraction * multiplier + scale/2) / scale; both factors < 2^64.
  bytes += (fraction * multiplier + fraction_scale / 2) / fraction_scale;
  if (bytes > kUint64Max) return Invalid(text, "larger than 2^64-1 bytes");
  return static_cast<uint64_t>(bytes);
}

std::string FormatByteSize(uint64_t bytes) {
  static constexpr std::array<std::string_view, 7> kNames = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  size_t unit = 0;
  while (unit + 1 < kNames.size() && bytes >= (1ull << (10 * (unit + 1)))) ++unit;
  char buffer[48];
  const uint64_t divisor = 1ull << (10 * unit);
  if (bytes % divisor == 0) {
    std::snprintf(buffer, sizeof(buffer), "%llu %s", static_cast<unsigned long long>(bytes / divisor),
                  kNames[unit].data());
    return buffer;
  }
  double value = static_cast<double>(bytes) / static_cast<double>(divisor);
  // 1 GiB - 1 byte would print as "1024.00 MiB"; say "1.00 GiB" instead.
  if (value >= 1023.995 && unit + 1 < kNames.size()) {
    ++unit;
    value /= 1024.0;
  }
  std::snprintf(buffer, sizeof(buffer), "%.2f %s", value, kNames[unit].data());
  return buffer;
}

}  // namespace fgpu
