// StopLoss: what the agent does when sharing goes wrong (docs/agent.md "Stop-loss").
//
// Contract
// - Tick(now) is called about once a second from the agent's loop. For every GPU it asks NVML
//   which processes use it, how much memory and how much of its SMs; a process belongs to a
//   slice when Membership proves it (its cgroup, its batch job's cgroup, or descent from a
//   process that joined the slice — never its environment or a ledger entry alone), so a process
//   that bypasses the interposer (FGPU_DISABLE, its own loader) is still attributed.
// - Bypass: a slice whose processes use more device memory than its cap, or, in cap mode, more
//   of the SMs than its cap for `overuse_ticks` checks in a row (NVML's per-process utilization,
//   `overuse_margin` points of slack). Always logged and counted; with policy `evict`, the slice
//   is evicted.
// - Unattributed: a process on a GPU that has slices and that belongs to none of them. Logged
//   once and counted; with `unattributed` = kill it is killed (SIGKILL, through a pidfd).
// - Measured busy time: each slice's share of the SMs by NVML, summed over time, beside the
//   interposer's own (self-reported) busy time, so chargeback can be checked against the driver.
// - Low memory: a GPU whose physical free memory is under `min_free_bytes` (0 = off) gets its
//   lowest-tier slice (then the newest) evicted, one per tick.
// - Starvation (on by default: `starved_below` 0.5; 0 turns it off): a share-mode slice that
//   waited in the compute gate for a quarter of a window yet got less than `starved_below` × its
//   share (StarvationWatch; a slice without work never waits in the gate, so it is never
//   starved) is marked starved (Starved(), the API's "starved", /metrics), counted and logged,
//   unless NVML's measure of its processes contradicts it (they got at least that). With
//   `starvation` = kEvict (not the default) its GPU is also fenced and evicts its lowest-tier
//   slice below the starved one (then the newest), one per window — only when NVML confirms it:
//   the slice's processes got less than that by the driver's measure, and the GPU was busy. The
//   board's counters are the slices' own reports: alone they never make the agent act against
//   another tenant.
// - Fence: while a GPU is under its free-memory threshold or has a starved slice, no new slice
//   is placed on it (SliceService::SetFenced); the fence lifts at the first check without cause.
// - Preemption: the slices the Governor chose to make room for a waiting request (a higher
//   tier, or a tenant reclaiming its quota: slice_service.h, docs/governance.md) are evicted as
//   below; the request is placed once they are gone.
// - Eviction: SIGTERM to the slice's proven members, SIGKILL to those left after `grace`, each
//   through a pidfd opened and checked against the member's start time (SignalExactly), then the
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
#include <set>
#include <string>
#include <vector>

#include "agent/nvml_client.h"
#include "agent/processes.h"
#include "agent/slice_service.h"
#include "agent/starvation.h"

namespace fgpu::agent {

struct StopLossPolicy {
  enum class Bypass { kAlert, kEvict };
  enum class Unattributed { kAlert, kKill };
  Bypass bypass = Bypass::kEvict;
  Unattributed unattributed = Unattributed::kAlert;
  uint32_t overuse_margin = 10;  // percentage points over a cap-mode slice's cap before it counts
  int overuse_ticks = 5;         // checks in a row over it before it is a bypass
  int64_t grace_ms = 5000;
  uint64_t min_free_bytes = 0;
  // Starvation: report it (count, log, mark the slice), or also fence the GPU and evict below it.
  enum class StarvationAction { kReport, kEvict };
  double starved_below = 0.5;  // 0: starvation is not watched
  int64_t starve_window_ms = 10000;
  StarvationAction starvation = StarvationAction::kReport;
};

struct StopLossCounters {
  uint64_t bypasses = 0;          // memory or compute over the cap
  uint64_t compute_bypasses = 0;  // of which compute
  uint64_t evictions = 0;
  uint64_t starvations = 0;  // windows in which a slice was found starved
  uint64_t starvations_unconfirmed = 0;  // reported by the board, not confirmed by NVML: no action
  uint64_t unattributed_seen = 0;        // distinct GPU processes that belonged to no slice
  uint64_t unattributed_killed = 0;
  uint64_t signals_refused = 0;  // a signal not sent: the process was gone or another one now
  std::map<std::string, int64_t> unaccounted_bytes;  // by slice id (negative: ledger ahead of NVML)
  std::map<std::string, int> unattributed_now;       // by GPU uuid: processes of no slice, now
  std::map<std::string, uint64_t> measured_busy_ns;  // by slice id: NVML's SM time, summed
  // By slice id: the busy time its board row reports minus measured_busy_ns, both since the
  // slice was first watched (chargeback's self-report checked against the driver).
  std::map<std::string, int64_t> busy_difference_ns;
  std::set<std::string> starved;  // slice ids starved by their last closed window
};

class StopLoss {
 public:
  // A slice's compute counters now (its compute board row); null: starvation is not watched.
  using ComputeReader = std::function<ComputeSample(const SliceRecord&)>;

  StopLoss(SliceService* slices, std::shared_ptr<NvmlClient> nvml, StopLossPolicy policy,
           ComputeReader compute = nullptr);
  // A slice's proven member processes now (its ledger's pids are candidates only).
  std::vector<ProcessFacts> ProcessesOf(const SliceRecord& slice) const;
  void Tick(int64_t now_ms);
  StopLossCounters Counters() const;
  // The slices starved by their last closed window (the API's "starved"); cheap, and never
  // waits for a Tick in progress.
  std::set<std::string> Starved() const;

 private:
  struct Eviction {
    std::string slice;
    int64_t kill_at_ms = 0;
    std::vector<ProcessFacts> members;  // as found when the eviction began (SIGTERM)
    std::string why;
  };
  struct GpuWatch {
    uint64_t last_sample_us = 0;  // NVML's newest per-process sample read
    int64_t last_tick_ms = 0;
    std::map<std::string, int> over_cap_ticks;  // by slice id
    std::map<std::string, std::vector<unsigned>> window;  // by slice id: SM % per tick, last few
    std::map<std::string, uint64_t> reported_at_start;    // by slice id: its board busy when first watched
  };

  // pid -> slice id for the processes on one GPU (-: proven to belong to none); `charged`: each
  // slice's ledger charge, read in the same pass.
  std::map<int, std::string> Attribute(const std::vector<int>& pids, const std::vector<SliceRecord>& slices,
                                       std::map<std::string, uint64_t>* charged) const;
  // `event` names the log line: "evict", or "preempt" for room made for a queued request.
  void Evict(const SliceRecord& slice, const std::string& why, int64_t now_ms, const char* event = "evict");
  void FinishEvictions(int64_t now_ms);
  void Preempt(int64_t now_ms);
  // Bypass: NVML's per-process memory against each slice's cap; also the unaccounted bytes and
  // the processes of no slice.
  void CheckBypass(const GpuState& gpu, const std::vector<SliceRecord>& here, int64_t now_ms);
  // NVML's per-process SM utilization: measured busy time, cap-mode overuse.
  void CheckCompute(const GpuState& gpu, const std::vector<SliceRecord>& here, int64_t now_ms);
  void CheckUnattributed(const GpuState& gpu, const std::vector<int>& pids, const std::map<int, std::string>& owner);
  // The slice's SM % by NVML over the last `ticks` checks (-1 when unknown).
  int MeasuredPercent(const std::string& gpu_uuid, const std::string& slice_id, int ticks) const;
  void Signal(const std::vector<ProcessFacts>& members, int signal);
  // Why the GPU should take no new slices ("" = no cause): its free memory is under the
  // threshold, or one of its slices (`here`) is starved. Acts on the cause: evicts one slice.
  std::string CheckGpu(const GpuState& gpu, const std::vector<SliceRecord>& here, int64_t now_ms);
  std::string CheckStarvation(const GpuState& gpu, const std::vector<SliceRecord>& here, int64_t now_ms);
  void MarkStarved(const SliceRecord& slice, bool starved, const StarvationVerdict& verdict, int measured);
  SliceService* slices_;
  std::shared_ptr<NvmlClient> nvml_;
  StopLossPolicy policy_;
  ComputeReader compute_;
  StarvationWatch starvation_;
  mutable std::mutex mutex_;
  StopLossCounters counters_;
  std::vector<Eviction> evictions_;
  std::map<std::string, GpuWatch> watches_;  // by GPU uuid
  std::map<int, uint64_t> unattributed_known_;  // pid -> start time: logged once
  mutable std::mutex starved_mutex_;  // apart from mutex_: the API reads it during a Tick
  std::set<std::string> starved_;
};

}  // namespace fgpu::agent
