// StarvationWatch: which slices get less GPU time than their share while they want more — the
// stop-loss trigger "a higher-tier slice is starved" (docs/agent.md "Stop-loss").
//
// A slice is starved over a window when it
//   - is in share mode (a cap holds a slice back on purpose),
//   - wanted the GPU: its launches waited in the compute gate for at least a quarter of the
//     window (throttled time, which the interposer counts), and
//   - got less than `below` × its share (measured busy time over the window).
// A host-bound workload does not wait in the gate, so it is never called starved; a workload
// that waits but gets its share is not either. The verdict of the last closed window holds
// until the next one closes, so stop-loss acts on it at most once per window.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "agent/slice_record.h"

namespace fgpu::agent {

// A slice's compute counters from its GPU's compute board.
struct ComputeSample {
  uint64_t busy_ns = 0;
  uint64_t throttled_ns = 0;
};

struct StarvationVerdict {
  bool starved = false;
  double achieved = 0;   // share of the GPU it got over the last closed window (0..1)
  bool decided = false;  // this observation closed the window (act once per window)
};

class StarvationWatch {
 public:
  StarvationWatch(double below, int64_t window_ms) : below_(below), window_ms_(window_ms) {}

  // Feeds the slice's counters read at `now_ms` and returns the last closed window's verdict.
  StarvationVerdict Observe(const SliceRecord& slice, const ComputeSample& sample, int64_t now_ms);
  // Drops the windows of slices that are gone.
  void Retain(const std::vector<SliceRecord>& slices);

 private:
  struct Window {
    int64_t start_ms = 0;
    ComputeSample start;
    StarvationVerdict verdict;
  };

  double below_;
  int64_t window_ms_;
  std::map<std::string, Window> windows_;  // by slice id
};

}  // namespace fgpu::agent
