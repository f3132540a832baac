// The plot: unallocated GPU % against arrived GPU % for each policy (mean over seeds, with the
// seeds' min-max as a band), as a self-contained SVG with two panels — the whole run, and a
// zoom on arrivals from 80% to the end where the policies differ.
#pragma once

#include <string>
#include <vector>

#include "simulate/summary.h"

namespace fgpu::simulate {

std::string RenderSvgPlot(const std::vector<PolicySummary>& summaries, const std::string& title);

}  // namespace fgpu::simulate
