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
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agent/nvml_client.h"
#include "agent/slice_service.h"

namespace fgpu::agent {

struct StopLossPolicy {
  enum class Bypass { kAlert, kEvict };
  Bypass bypass = Bypass::kEvict;
  int64_t grace_ms = 5000;
  uint64_t min_free_bytes = 0;
};

struct StopLossCounters {
  uint64_t bypasses = 0;
  uint64_t evictions = 0;
  std::map<std::string, int64_t> unaccounted_bytes;  // by slice id (negative: ledger ahead of NVML)
};

class StopLoss {
 public:
  StopLoss(SliceService* slices, std::shared_ptr<NvmlClient> nvml, StopLossPolicy policy);
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
  std::vector<pid_t> ProcessesOf(const SliceRecord& slice) const;

  SliceService* slices_;
  std::shared_ptr<NvmlClient> nvml_;
  StopLossPolicy policy_;
  mutable std::mutex mutex_;
  StopLossCounters counters_;
  std::vector<Eviction> evictions_;
};

}  // namespace fgpu::agent
