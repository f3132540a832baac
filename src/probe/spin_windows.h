// The device duty of fixed windows, from the completion times the spin probe
// observed: the `"windows"` of `fgpu-probe spin --window-ms W` (docs/probe.md).
//
// Contract
// - `completions_s` are the observed completion times of the launches, in launch
//   order (so non-decreasing), in seconds since the start; every launch kept the
//   device busy for `device_s`.
// - A launch is taken to have run over [completion - device_s, completion], except
//   that launches on one stream run one after another: where that interval would
//   overlap the next launch's, it is moved earlier (a late observation, e.g. two
//   completions seen by one poll, only ever delays a completion). Time before 0 is
//   dropped.
// - The result has one value per complete window [k·W, (k+1)·W) with (k+1)·W <=
//   elapsed_s: 100 × busy time in it / W. The last, incomplete window is dropped; no
//   rounding.
#ifndef FGPU_PROBE_SPIN_WINDOWS_H_
#define FGPU_PROBE_SPIN_WINDOWS_H_

#include <vector>

namespace fgpu::probe {

std::vector<double> WindowDuties(const std::vector<double>& completions_s, double device_s, double window_s,
                                 double elapsed_s);

}  // namespace fgpu::probe

#endif  // FGPU_PROBE_SPIN_WINDOWS_H_
