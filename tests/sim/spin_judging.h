// Reading `fgpu-probe spin --window-ms` results for the compute-share tests (docs/probe.md).
//
// Windows are on the device's clock, so a late poll moves no device time. What a busy host still
// does is keep a workload from asking: a bar on what a slice *gets* in a window is lowered by the
// time its probe sat runnable off a CPU in that window (`host_wait_ms`, in points of the window);
// a bar on what a slice may *not exceed* never is.
#pragma once

#include <algorithm>
#include <vector>

#include "probe_runner.h"

namespace fgpu::testing {

// The device duty of each complete window; empty (and a failure) when the run gave none.
inline std::vector<double> SpinWindows(const ProbeResult& result) {
  const nlohmann::json spin = result.Event("spin");
  if (!spin.is_object() || !spin.contains("windows")) {
    ADD_FAILURE() << "no spin windows: " << result.stderr_text;
    return {};
  }
  return spin["windows"].get<std::vector<double>>();
}

// Percentage points of each window the run's threads waited for a CPU: empty where the kernel
// keeps no schedstat (every shortfall is then 0, the strict bar).
inline std::vector<double> HostWaitPoints(const ProbeResult& result, double window_ms = 1000) {
  const nlohmann::json spin = result.Event("spin");
  std::vector<double> points;
  if (!spin.is_object() || !spin.contains("host_wait_ms")) return points;
  for (double wait_ms : spin["host_wait_ms"].get<std::vector<double>>()) points.push_back(100 * wait_ms / window_ms);
  return points;
}

// The most any of `runs` waited for a CPU in window i, in points.
inline double HostShortfall(const std::vector<ProbeResult>& runs, std::size_t i) {
  double most = 0;
  for (const ProbeResult& run : runs) {
    const std::vector<double> points = HostWaitPoints(run);
    if (i < points.size()) most = std::max(most, points[i]);
  }
  return most;
}

}  // namespace fgpu::testing
