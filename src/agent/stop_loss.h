// StopLoss: what the agent does when sharing goes wrong (docs/agent.md "Stop-loss").
//
// Contract
// - Tick(now) is called about once a second from the agent's loop. For every GPU it asks NVML
//   which processes use it and how much; a process belongs to a slice when the slice's ledger
//   lists it or its environment names the slice (FGPU_SLICE), so a process that bypasses the
//   interposer (FGPU_DISABLE, its own loader) is still attributed.
// - Bypass: a slice whose processes use more device memory than its cap. Always logged and
//   counted; with policy `evict`, the slice is evicted.
// - Low memory: a GPU whose physical free memory is under `min_free_bytes` (0 = off) gets its
//   lowest-tier slice (then the newest) evicted, one per tick.
// - Starvation (with `starved_below` > 0): a share-mode slice that waited in the compute gate
//   for a quarter of a window yet got less than `starved_below` × its share
//   (StarvationWatch) makes its GPU evict its lowest-tier slice below the starved one (then the
//   newest), one per window.
// - Fence: while a GPU is under its free-memory threshold or has a starved slice, no new slice
//   is placed on it (SliceService::SetFenced); the fence lifts at the first check without cause.
// - Preemption: when the oldest queued request cannot be placed and evicting slices of a
//   strictly lower tier on one GPU would make room (lowest tier first, then the newest), they are
//   evicted (the GPU needing the fewest evictions is chosen); the request is then placed.
// - Eviction: SIGTERM to the slice's processes, SIGKILL to those left after `grace`, then the
//   slice is deleted (its `fgpu run`, if any, has usually deleted it first).
// - Unaccounted bytes (what NVML sees minus what the ledger charged) are kept per slice for
//   /metrics.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agent/nvml_client.h"
#include "agent/slice_service.h"
#include "agent/starvation.h"

namespace fgpu::agent {

struct StopLossPolicy {
  enum class Bypass { kAlert, kEvict };
  Bypass bypass = Bypass::kEvict;
  int64_t grace_ms = 5000;
  uint64_t min_free_bytes = 0;
  double starved_below = 0;  // 0: starvation is not watched
  int64_t starve_window_ms = 10000;
};

struct StopLossCounters {
  uint64_t bypasses = 0;
  uint64_t evictions = 0;
  uint64_t starvations = 0;  // windows in which a slice was found starved
  std::map<std::string, int64_t> unaccounted_bytes;  // by slice id (negative: ledger ahead of NVML)
};

class StopLoss {
 public:
  // A slice's compute counters now (its compute board row); null: starvation is not watched.
  using ComputeReader = std::function<ComputeSample(const SliceRecord&)>;

  StopLoss(SliceService* slices, std::shared_ptr<NvmlClient> nvml, StopLossPolicy policy,
           ComputeReader compute = nullptr);
  void Tick(int64_t now_ms);
  StopLossCounters Counters() const;

 private:
  struct Eviction {
    std::string slice;
    int64_t kill_at_ms = 0;
  };

  // pid -> slice id for the processes on one GPU; `charged`: each slice's ledger charge, read in
  // the same pass.
  std::map<int, std::string> Attribute(const std::vector<GpuProcess>& processes,
                                       const std::vector<SliceRecord>& slices,
                                       std::map<std::string, uint64_t>* charged) const;
  void Evict(const SliceRecord& slice, const std::string& why, int64_t now_ms);
  void FinishEvictions(int64_t now_ms);
  void Preempt(const std::vector<SliceRecord>& slices, int64_t now_ms);
  // Bypass: NVML's per-process memory against each slice's cap; also the unaccounted bytes.
  void CheckBypass(const GpuState& gpu, const std::vector<SliceRecord>& here, int64_t now_ms);
  // Why the GPU should take no new slices ("" = no cause): its free memory is under the
  // threshold, or one of its slices (`here`) is starved. Acts on the cause: evicts one slice.
  std::string CheckGpu(const GpuState& gpu, const std::vector<SliceRecord>& here, int64_t now_ms);
  std::string CheckStarvation(const std::vector<SliceRecord>& here, int64_t now_ms);
  std::vector<pid_t> ProcessesOf(const SliceRecord& slice) const;

  SliceService* slices_;
  std::shared_ptr<NvmlClient> nvml_;
  StopLossPolicy policy_;
  ComputeReader compute_;
  StarvationWatch starvation_;
  mutable std::mutex mutex_;
  StopLossCounters counters_;
  std::vector<Eviction> evictions_;
};

}  // namespace fgpu::agent
