// Metrics against arrival: after every pod the replay samples allocated GPU and fragmentation
// (% of cluster GPU); samples are binned by requested GPU so far ("arrived", % of capacity)
// rounded to an integer, and a bin's value is the mean of its samples — the authors' binning
// (their merge_alloc_discrete.py). A bin without samples takes the mean of bins x-1..x+1.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace fgpu::simulate {

class ArrivalCurve {
 public:
  void Add(double arrived_pct, double allocated_pct, double fragment_pct);

  // nullopt when no sample is within one bin of `arrived_pct`.
  std::optional<double> AllocatedAt(int arrived_pct) const;
  std::optional<double> FragmentAt(int arrived_pct) const;
  // The last bin with samples.
  int last_bin() const { return static_cast<int>(bins_.size()) - 1; }

 private:
  struct Bin {
    double allocated = 0;
    double fragment = 0;
    int64_t samples = 0;
  };
  std::optional<double> MeanAt(int arrived_pct, double Bin::*field) const;

  std::vector<Bin> bins_;
};

}  // namespace fgpu::simulate
