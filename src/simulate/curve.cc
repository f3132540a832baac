#include "simulate/curve.h"

#include <algorithm>
#include <cmath>

namespace fgpu::simulate {

void ArrivalCurve::Add(double arrived_pct, double allocated_pct, double fragment_pct) {
  // nearbyint rounds halves to even, as Python's round() in the authors' binning.
  const double rounded = std::nearbyint(arrived_pct);
  if (!(rounded >= 0) || rounded > 1e6) return;
  const auto bin = static_cast<size_t>(rounded);
  if (bin >= bins_.size()) bins_.resize(bin + 1);
  bins_[bin].allocated += allocated_pct;
  bins_[bin].fragment += fragment_pct;
  ++bins_[bin].samples;
}

std::optional<double> ArrivalCurve::MeanAt(int arrived_pct, double Bin::*field) const {
  const auto mean_over = [&](int first, int last) -> std::optional<double> {
    double sum = 0;
    int64_t samples = 0;
    for (int bin = std::max(first, 0); bin <= last && bin < static_cast<int>(bins_.size()); ++bin) {
      sum += bins_[static_cast<size_t>(bin)].*field;
      samples += bins_[static_cast<size_t>(bin)].samples;
    }
    if (samples == 0) return std::nullopt;
    return sum / static_cast<double>(samples);
  };
  if (std::optional<double> exact = mean_over(arrived_pct, arrived_pct)) return exact;
  return mean_over(arrived_pct - 1, arrived_pct + 1);
}

std::optional<double> ArrivalCurve::AllocatedAt(int arrived_pct) const {
  return MeanAt(arrived_pct, &Bin::allocated);
}

std::optional<double> ArrivalCurve::FragmentAt(int arrived_pct) const {
  return MeanAt(arrived_pct, &Bin::fragment);
}

}  // namespace fgpu::simulate
