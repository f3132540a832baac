#include "k8s/dra/quantity.h"

#include <cctype>
#include <limits>

namespace fgpu::k8s {
namespace {

// Wide enough for 30 digits times 2^60 before the range check.
__extension__ typedef unsigned __int128 Wide;

constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

struct Suffix {
  std::string_view text;
  int binary_shift;   // 2^(shift) for Ki..Ei
  int decimal_power;  // 10^(power) for m, k..E
};

constexpr Suffix kSuffixes[] = {
    {"Ki", 10, 0}, {"Mi", 20, 0}, {"Gi", 30, 0}, {"Ti", 40, 0}, {"Pi", 50, 0}, {"Ei", 60, 0},
    {"m", 0, -3},  {"k", 0, 3},   {"M", 0, 6},   {"G", 0, 9},   {"T", 0, 12},  {"P", 0, 15},
    {"E", 0, 18},  {"", 0, 0},
};

Status Invalid(std::string_view text, const char* why) {
  return Status::InvalidArgument("quantity '" + std::string(text) + "' " + why);
}

// value × 10^power × 2^shift, rounded up; false past kMax.
bool Scale(Wide digits, int fraction_digits, int power, int shift, uint64_t* out) {
  int exponent = power - fraction_digits;
  Wide value = digits;
  Wide divisor = 1;
  for (; exponent > 0; --exponent) {
    value *= 10;
    if (value > kMax) return false;
  }
  for (; exponent < 0; ++exponent) {
    divisor *= 10;
    if (divisor > (static_cast<Wide>(1) << 100)) break;  // anything left rounds to 0 or 1
  }
  for (int i = 0; i < shift; ++i) {
    value <<= 1;
    if (value / divisor > kMax) return false;
  }
  const Wide whole = value / divisor + (value % divisor != 0 ? 1 : 0);
  if (whole > kMax) return false;
  *out = static_cast<uint64_t>(whole);
  return true;
}

}  // namespace

Result<uint64_t> ParseQuantity(std::string_view text) {
  if (text.empty()) return Invalid(text, "is empty");
  if (text.size() > 64) return Invalid(text.substr(0, 64), "is too long");
  std::size_t i = 0;
  bool negative = false;
  if (text[i] == '+' || text[i] == '-') negative = text[i++] == '-';
  Wide digits = 0;
  int significant = 0, fraction_digits = 0;
  bool seen_digit = false, seen_point = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && !seen_point) {
      seen_point = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    seen_digit = true;
    if (significant == 0 && c == '0') {
      if (seen_point) ++fraction_digits;
      continue;
    }
    if (significant >= 30) return Invalid(text, "has too many digits");
    digits = digits * 10 + static_cast<unsigned>(c - '0');
    ++significant;
    if (seen_point) ++fraction_digits;
  }
  if (!seen_digit) return Invalid(text, "has no digits");
  const std::string_view rest = text.substr(i);
  int power = 0, shift = 0;
  const Suffix* suffix = nullptr;
  for (const Suffix& candidate : kSuffixes) {
    if (rest == candidate.text) {
      suffix = &candidate;
      break;
    }
  }
  if (suffix != nullptr) {  // "Ei" and "E" are suffixes; "E3" an exponent
    power = suffix->decimal_power;
    shift = suffix->binary_shift;
  } else if (rest.size() > 1 && (rest[0] == 'e' || rest[0] == 'E')) {
    std::size_t j = 1;
    bool exponent_negative = false;
    if (rest[j] == '+' || rest[j] == '-') exponent_negative = rest[j++] == '-';
    if (j >= rest.size()) return Invalid(text, "has an empty exponent");
    int exponent = 0;
    for (; j < rest.size(); ++j) {
      if (!std::isdigit(static_cast<unsigned char>(rest[j]))) return Invalid(text, "has a malformed exponent");
      exponent = exponent * 10 + (rest[j] - '0');
      if (exponent > 100) return Invalid(text, "is out of range");
    }
    power = exponent_negative ? -exponent : exponent;
  } else {
    return Invalid(text, "has an unknown suffix (use Ki, Mi, Gi, Ti, Pi, Ei, m, k, M, G, T, P, E)");
  }
  if (negative && digits != 0) return Invalid(text, "is negative");
  uint64_t value = 0;
  if (!Scale(digits, fraction_digits, power, shift, &value)) return Invalid(text, "is out of range");
  return value;
}

std::string FormatQuantity(uint64_t value, bool binary) {
  if (!binary || value == 0) return std::to_string(value);
  static constexpr const char* kBinary[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  int chosen = -1;
  for (int k = 0; k < 6; ++k) {
    const int shift = 10 * (k + 1);
    if ((value & ((uint64_t{1} << shift) - 1)) == 0) chosen = k;
  }
  if (chosen < 0) return std::to_string(value);
  return std::to_string(value >> (10 * (chosen + 1))) + kBinary[chosen];
}

}  // namespace fgpu::k8s
