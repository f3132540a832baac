#include "agent/starvation.h"

#include <set>

namespace fgpu::agent {
namespace {

// Growth of a counter; a counter below its last reading was reset (its board re-created), so
// all of it is new.
uint64_t Growth(uint64_t now, uint64_t before) { return now >= before ? now - before : now; }

}  // namespace

StarvationVerdict StarvationWatch::Observe(const SliceRecord& slice, const ComputeSample& sample, int64_t now_ms) {
  auto [it, fresh] = windows_.try_emplace(slice.id, Window{now_ms, sample, {}});
  Window& window = it->second;
  window.verdict.decided = false;
  if (fresh || now_ms - window.start_ms < window_ms_) return window.verdict;
  window.verdict.decided = true;
  const double elapsed_ns = static_cast<double>(now_ms - window.start_ms) * 1e6;
  const double busy = static_cast<double>(Growth(sample.busy_ns, window.start.busy_ns));
  const double waited = static_cast<double>(Growth(sample.throttled_ns, window.start.throttled_ns));
  window.verdict.achieved = busy / elapsed_ns;
  window.verdict.starved = slice.compute_mode == slice::ComputeMode::kShare && waited >= elapsed_ns / 4 &&
                           window.verdict.achieved < below_ * slice.compute_share / 100.0;
  window.start_ms = now_ms;
  window.start = sample;
  return window.verdict;
}

void StarvationWatch::Retain(const std::vector<SliceRecord>& slices) {
  std::set<std::string> live;
  for (const SliceRecord& slice : slices) live.insert(slice.id);
  std::erase_if(windows_, [&](const auto& entry) { return live.count(entry.first) == 0; });
}

}  // namespace fgpu::agent
