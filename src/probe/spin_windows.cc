#include "probe/spin_windows.h"

#include <algorithm>
#include <cmath>

namespace fgpu::probe {

std::vector<double> WindowDuties(const std::vector<double>& completions_s, double device_s, double window_s,
                                 double elapsed_s) {
  if (window_s <= 0 || elapsed_s < window_s) return {};
  const auto count = static_cast<size_t>(std::floor(elapsed_s / window_s));
  std::vector<double> busy(count, 0.0);
  // Newest first, so each launch's end can be held before the next one's start.
  double next_start = completions_s.empty() ? 0 : completions_s.back();
  for (size_t i = completions_s.size(); i-- > 0;) {
    const double end = std::min(completions_s[i], next_start);
    const double begin = end - device_s;
    next_start = begin;
    // Apportion [max(begin, 0), end) to the windows it overlaps.
    const double from = std::max(begin, 0.0);
    if (end <= from) continue;
    const auto first = static_cast<size_t>(std::floor(from / window_s));
    for (size_t k = first; k < count; ++k) {
      const double lo = static_cast<double>(k) * window_s;
      const double hi = lo + window_s;
      if (lo >= end) break;
      busy[k] += std::min(end, hi) - std::max(from, lo);
    }
  }
  for (double& value : busy) value = 100.0 * value / window_s;
  return busy;
}

}  // namespace fgpu::probe
