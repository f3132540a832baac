#include "agent/stop_loss.h"

#include <dirent.h>
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <iterator>

#include "agent/log.h"
#include "core/units.h"
#include "slice/compute_spec.h"
#include "slice/process_liveness.h"

namespace fgpu::agent {
namespace {

// Lowest tier first (batch < standard < latency), then the newest: who is evicted first.
bool EvictedBefore(const SliceRecord& a, const SliceRecord& b) {
  if (a.tier != b.tier) return static_cast<int>(a.tier) < static_cast<int>(b.tier);
  return a.created_unix_ms > b.created_unix_ms;
}

std::string Percent(double ratio) { return std::to_string(static_cast<int>(ratio * 100 + 0.5)) + " %"; }

}  // namespace

StopLoss::StopLoss(SliceService* slices, std::shared_ptr<NvmlClient> nvml, StopLossPolicy policy, ComputeReader compute)
    : slices_(slices),
      nvml_(std::move(nvml)),
      policy_(policy),
      compute_(std::move(compute)),
      starvation_(policy.starved_below, policy.starve_window_ms) {}

StopLossCounters StopLoss::Counters() const {
  StopLossCounters counters;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    counters = counters_;
  }
  counters.starved = Starved();
  return counters;
}

std::vector<ProcessFacts> StopLoss::ProcessesOf(const SliceRecord& slice) const {
  std::vector<pid_t> candidates;
  Result<slice::SliceAdmin> admin = slice::SliceAdmin::Open(slice.dir);
  if (admin.ok()) {
    for (const slice::ProcessUsage& process : admin->Usage().processes) candidates.push_back(process.pid);
  }
  return slices_->membership().ProcessesOf(slice, candidates);
}

std::map<int, std::string> StopLoss::Attribute(const std::vector<int>& pids, const std::vector<SliceRecord>& slices,
                                                std::map<std::string, uint64_t>* charged) const {
  for (const SliceRecord& slice : slices) {
    Result<slice::SliceAdmin> admin = slice::SliceAdmin::Open(slice.dir);
    if (!admin.ok()) continue;
    const slice::UsageSnapshot usage = admin->Usage();
    (*charged)[slice.id] = usage.used.empty() ? 0 : usage.used[0];
  }
  std::map<int, std::string> owner;
  for (int pid : pids) {
    if (owner.count(pid) != 0) continue;
    const std::optional<ProcessFacts> facts = ReadProcess(pid);
    if (!facts) continue;  // gone since NVML listed it
    owner[pid] = "";
    for (const SliceRecord& slice : slices) {
      if (slices_->membership().BelongsTo(*facts, slice)) {
        owner[pid] = slice.id;
        break;
      }
    }
  }
  return owner;
}

void StopLoss::Signal(const std::vector<ProcessFacts>& members, int signal) {
  for (const ProcessFacts& member : members) {
    if (!SignalExactly(member.pid, member.start_time, signal)) counters_.signals_refused++;
  }
}

void StopLoss::Evict(const SliceRecord& slice, const std::string& why, int64_t now_ms, const char* event) {
  if (std::any_of(evictions_.begin(), evictions_.end(), [&](const Eviction& e) { return e.slice == slice.id; })) return;
  std::vector<ProcessFacts> members = ProcessesOf(slice);
  Log(LogLevel::kWarn, event,
      {{"slice", slice.id},
       {"gpu", slice.gpu_uuid},
       {"tier", slice::ToString(slice.tier)},
       {"tenant", slice.tenant},
       {"uid", std::to_string(slice.owner_uid)},
       {"processes", std::to_string(members.size())},
       {"grace_ms", std::to_string(policy_.grace_ms)},
       {"reason", why}});
  Signal(members, SIGTERM);
  evictions_.push_back({slice.id, now_ms + policy_.grace_ms, std::move(members), why});
  counters_.evictions++;
}

void StopLoss::FinishEvictions(int64_t now_ms) {
  std::vector<Eviction> pending;
  for (Eviction& eviction : evictions_) {
    Result<SliceRecord> slice = slices_->Get(eviction.slice);
    if (!slice.ok()) continue;  // gone: its fgpu run released it
    // The members found at SIGTERM and any that appeared since, each checked again.
    std::vector<ProcessFacts> members = ProcessesOf(*slice);
    for (const ProcessFacts& earlier : eviction.members) {
      const std::optional<ProcessFacts> now = ReadProcess(earlier.pid);
      const bool listed = std::any_of(members.begin(), members.end(), [&](const ProcessFacts& m) { return m.pid == earlier.pid; });
      if (!listed && now && now->start_time == earlier.start_time && !now->zombie) members.push_back(earlier);
    }
    if (!members.empty() && now_ms < eviction.kill_at_ms) {
      eviction.members = std::move(members);
      pending.push_back(std::move(eviction));
      continue;
    }
    Signal(members, SIGKILL);
    (void)slices_->Delete(eviction.slice, "evicted: " + eviction.why);
  }
  evictions_ = std::move(pending);
}

void StopLoss::Preempt(int64_t now_ms) {
  // The Governor decided who makes room (slice_service.h); stop-loss ends them gracefully.
  for (const Preemption& preemption : slices_->TakePreemptions()) Evict(preemption.slice, preemption.why, now_ms, "preempt");
}

void StopLoss::Tick(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  FinishEvictions(now_ms);
  Preempt(now_ms);
  if (nvml_ == nullptr) return;
  Result<std::vector<GpuState>> gpus = nvml_->Gpus();
  if (!gpus.ok()) return;
  const std::vector<SliceRecord> slices = slices_->List();
  starvation_.Retain(slices);
  {
    std::lock_guard<std::mutex> starved_lock(starved_mutex_);
    std::erase_if(starved_, [&](const std::string& id) {
      return std::none_of(slices.begin(), slices.end(), [&](const SliceRecord& s) { return s.id == id; });
    });
  }
  counters_.unaccounted_bytes.clear();
  const auto gone = [&](const auto& entry) {
    return std::none_of(slices.begin(), slices.end(), [&](const SliceRecord& s) { return s.id == entry.first; });
  };
  std::erase_if(counters_.measured_busy_ns, gone);
  std::erase_if(counters_.busy_difference_ns, gone);
  // A MIG instance's GPU: NVML lists the processes of every instance on the GPU they are carved from.
  std::map<std::string, std::string> parent_of;
  for (const GpuRoom& room : slices_->Rooms()) {
    if (!room.gpu.parent_uuid.empty()) parent_of[room.gpu.uuid] = room.gpu.parent_uuid;
  }
  for (const GpuState& gpu : *gpus) {
    std::vector<SliceRecord> here;
    std::vector<SliceRecord> in_instances;
    for (const SliceRecord& slice : slices) {
      if (slice.gpu_uuid == gpu.uuid) here.push_back(slice);
      const auto parent = parent_of.find(slice.gpu_uuid);
      if (parent != parent_of.end() && parent->second == gpu.uuid) in_instances.push_back(slice);
    }
    CheckCompute(gpu, here, now_ms);  // first: starvation and overuse read what it measured
    // then: a bypasser is the culprit, evicted before anyone else (its instances' slices too: a
    // process in one is on this GPU's list)
    std::vector<SliceRecord> listed = here;
    listed.insert(listed.end(), in_instances.begin(), in_instances.end());
    CheckBypass(gpu, listed, now_ms);
    (void)slices_->SetFenced(gpu.uuid, CheckGpu(gpu, here, now_ms));  // the service keeps it (GpuRoom::fenced)
  }
}

void StopLoss::CheckBypass(const GpuState& gpu, const std::vector<SliceRecord>& here, int64_t now_ms) {
  Result<std::vector<GpuProcess>> processes = nvml_->Processes(gpu.uuid);
  if (!processes.ok()) return;
  std::vector<int> pids;
  for (const GpuProcess& process : *processes) pids.push_back(process.pid);
  std::map<std::string, uint64_t> charged;  // what each slice's ledger holds
  const std::map<int, std::string> owner = Attribute(pids, here, &charged);
  CheckUnattributed(gpu, pids, owner);
  std::map<std::string, uint64_t> seen;
  for (const GpuProcess& process : *processes) {
    const auto it = owner.find(process.pid);
    if (it != owner.end() && !it->second.empty()) seen[it->second] += process.used_bytes;
  }
  for (const SliceRecord& slice : here) {
    counters_.unaccounted_bytes[slice.id] =
        static_cast<int64_t>(seen[slice.id]) - static_cast<int64_t>(charged[slice.id]);
    if (seen[slice.id] <= slice.memory_bytes) continue;
    counters_.bypasses++;
    const std::string why = "its processes use " + FormatByteSize(seen[slice.id]) + " on " + gpu.uuid +
                            ", over its cap of " + FormatByteSize(slice.memory_bytes) + " (interposer bypassed)";
    if (policy_.bypass == StopLossPolicy::Bypass::kEvict) {
      Evict(slice, why, now_ms);
    } else {
      Log(LogLevel::kWarn, "bypass", {{"slice", slice.id}, {"tenant", slice.tenant}, {"reason", why}});
    }
  }
}

// A process on a GPU with slices that belongs to none: a program started outside fgpu (or one
// that left its slice's process tree and cgroup). It shares the GPU unenforced.
void StopLoss::CheckUnattributed(const GpuState& gpu, const std::vector<int>& pids,
                                 const std::map<int, std::string>& owner) {
  int now = 0;
  for (int pid : pids) {
    const auto it = owner.find(pid);
    if (it == owner.end() || !it->second.empty()) continue;  // gone, or a slice's
    const std::optional<ProcessFacts> facts = ReadProcess(pid);
    if (!facts) continue;
    ++now;
    const auto known = unattributed_known_.find(pid);
    if (known == unattributed_known_.end() || known->second != facts->start_time) {
      unattributed_known_[pid] = facts->start_time;
      counters_.unattributed_seen++;
      Log(LogLevel::kWarn, "unattributed",
          {{"pid", std::to_string(pid)},
           {"uid", std::to_string(facts->real_uid)},
           {"gpu", gpu.uuid},
           {"action", policy_.unattributed == StopLossPolicy::Unattributed::kKill ? "killed" : "alert"},
           {"reason", "uses the GPU outside every slice"}});
    }
    if (policy_.unattributed == StopLossPolicy::Unattributed::kKill) {
      if (SignalExactly(facts->pid, facts->start_time, SIGKILL)) {
        counters_.unattributed_killed++;
      } else {
        counters_.signals_refused++;
      }
    }
  }
  counters_.unattributed_now[gpu.uuid] = now;
  std::erase_if(unattributed_known_, [](const auto& entry) {
    const std::optional<ProcessFacts> facts = ReadProcess(entry.first);
    return !facts || facts->start_time != entry.second;
  });
}

void StopLoss::CheckCompute(const GpuState& gpu, const std::vector<SliceRecord>& here, int64_t now_ms) {
  GpuWatch& watch = watches_[gpu.uuid];
  const int64_t elapsed_ms = watch.last_tick_ms == 0 ? 0 : now_ms - watch.last_tick_ms;
  watch.last_tick_ms = now_ms;
  Result<std::vector<ProcessBusy>> busy = nvml_->ProcessUtilization(gpu.uuid, watch.last_sample_us, &watch.last_sample_us);
  if (!busy.ok() || here.empty()) return;
  std::vector<int> pids;
  for (const ProcessBusy& process : *busy) pids.push_back(process.pid);
  std::map<std::string, uint64_t> ignored;
  const std::map<int, std::string> owner = Attribute(pids, here, &ignored);
  std::map<std::string, unsigned> percent;
  for (const ProcessBusy& process : *busy) {
    const auto it = owner.find(process.pid);
    if (it != owner.end() && !it->second.empty()) percent[it->second] = std::min(100u, percent[it->second] + process.sm_percent);
  }
  for (const SliceRecord& slice : here) {
    const unsigned used = percent[slice.id];
    counters_.measured_busy_ns[slice.id] += static_cast<uint64_t>(elapsed_ms) * 1'000'000 * used / 100;
    if (compute_) {
      const uint64_t reported = compute_(slice).busy_ns;
      const auto [start, first] = watch.reported_at_start.try_emplace(slice.id, reported);
      // A counter below its first reading was reset (a new board row): start again from it.
      if (!first && reported < start->second) start->second = reported;
      counters_.busy_difference_ns[slice.id] = static_cast<int64_t>(reported - start->second) -
                                               static_cast<int64_t>(counters_.measured_busy_ns[slice.id]);
    }
    std::vector<unsigned>& window = watch.window[slice.id];
    window.push_back(used);
    if (window.size() > 64) window.erase(window.begin());
    int& over = watch.over_cap_ticks[slice.id];
    const bool over_cap = slice.compute_mode == slice::ComputeMode::kCap && used > slice.compute_share + policy_.overuse_margin;
    over = over_cap ? over + 1 : 0;
    if (over < policy_.overuse_ticks) continue;
    over = 0;
    counters_.bypasses++;
    counters_.compute_bypasses++;
    const std::string why = "its processes kept " + std::to_string(used) + " % of " + gpu.uuid + "'s SMs for " +
                            std::to_string(policy_.overuse_ticks) + " checks, over its cap of " +
                            std::to_string(slice.compute_share) + " % (interposer bypassed)";
    if (policy_.bypass == StopLossPolicy::Bypass::kEvict) {
      Evict(slice, why, now_ms);
    } else {
      Log(LogLevel::kWarn, "bypass", {{"slice", slice.id}, {"tenant", slice.tenant}, {"reason", why}});
    }
  }
  const auto gone = [&](const auto& entry) {
    return std::none_of(here.begin(), here.end(), [&](const SliceRecord& s) { return s.id == entry.first; });
  };
  std::erase_if(watch.window, gone);
  std::erase_if(watch.reported_at_start, gone);
}

int StopLoss::MeasuredPercent(const std::string& gpu_uuid, const std::string& slice_id, int ticks) const {
  const auto watch = watches_.find(gpu_uuid);
  if (watch == watches_.end()) return -1;
  const auto window = watch->second.window.find(slice_id);
  if (window == watch->second.window.end() || window->second.empty()) return -1;
  const std::vector<unsigned>& samples = window->second;
  const std::size_t n = std::min<std::size_t>(samples.size(), static_cast<std::size_t>(std::max(ticks, 1)));
  unsigned sum = 0;
  for (std::size_t i = samples.size() - n; i < samples.size(); ++i) sum += samples[i];
  return static_cast<int>(sum / n);
}

std::string StopLoss::CheckGpu(const GpuState& gpu, const std::vector<SliceRecord>& here, int64_t now_ms) {
  const std::string starved = CheckStarvation(gpu, here, now_ms);
  const uint64_t free = gpu.memory_total > gpu.memory_used ? gpu.memory_total - gpu.memory_used : 0;
  if (policy_.min_free_bytes == 0 || free >= policy_.min_free_bytes) return starved;
  const std::string why = FormatByteSize(free) + " free, under the threshold of " + FormatByteSize(policy_.min_free_bytes);
  if (!here.empty() && evictions_.empty()) {
    Evict(*std::min_element(here.begin(), here.end(), EvictedBefore), "GPU " + gpu.uuid + " has " + why, now_ms);
  }
  return why;
}

std::string StopLoss::CheckStarvation(const GpuState& gpu, const std::vector<SliceRecord>& here, int64_t now_ms) {
  if (!compute_ || policy_.starved_below <= 0) return "";
  std::string fence;
  for (const SliceRecord& slice : here) {
    const StarvationVerdict verdict = starvation_.Observe(slice, compute_(slice), now_ms);
    // The board is the slice's own report. The driver's measure (NVML, over the same window)
    // may contradict it: then the slice is not called starved. Acting against another tenant
    // needs more: the driver confirms it, and the GPU was busy (evicting helps nobody else).
    const int ticks = static_cast<int>(std::max<int64_t>(policy_.starve_window_ms / 1000, 1));
    const int measured = MeasuredPercent(slice.gpu_uuid, slice.id, ticks);
    const double bound = policy_.starved_below * slice.compute_share;
    const bool contradicted = measured >= 0 && measured >= bound;
    const bool confirmed = measured >= 0 && measured < bound && gpu.utilization_pct >= 50;
    if (verdict.decided) {
      const bool flagged = verdict.starved && !contradicted;
      if (verdict.starved && !confirmed) counters_.starvations_unconfirmed++;
      if (flagged) counters_.starvations++;
      MarkStarved(slice, flagged, verdict, measured);
    }
    if (policy_.starvation != StopLossPolicy::StarvationAction::kEvict || !verdict.starved || !confirmed) continue;
    const std::string why = "slice " + slice.id + " (" + slice::ToString(slice.tier) + ") starved: " +
                            Percent(verdict.achieved) + " of the GPU against a share of " +
                            std::to_string(slice.compute_share) + " %";
    if (fence.empty()) fence = why;
    if (!verdict.decided) continue;  // acted on when its window closed
    std::vector<SliceRecord> lower;
    for (const SliceRecord& other : here) {
      if (static_cast<int>(other.tier) < static_cast<int>(slice.tier)) lower.push_back(other);
    }
    if (!lower.empty() && evictions_.empty()) {
      Evict(*std::min_element(lower.begin(), lower.end(), EvictedBefore), why, now_ms);
    }
  }
  return fence;
}

// Publishes the slice's starvation for the API and /metrics, and logs each change: the moment a
// slice becomes starved (warn) and the moment it is not any more (info).
void StopLoss::MarkStarved(const SliceRecord& slice, bool starved, const StarvationVerdict& verdict, int measured) {
  std::lock_guard<std::mutex> lock(starved_mutex_);
  const bool was = starved_.count(slice.id) != 0;
  if (starved == was) return;
  if (starved) {
    starved_.insert(slice.id);
    Log(LogLevel::kWarn, "starved",
        {{"slice", slice.id},
         {"gpu", slice.gpu_uuid},
         {"tier", slice::ToString(slice.tier)},
         {"tenant", slice.tenant},
         {"share", std::to_string(slice.compute_share)},
         {"achieved", Percent(verdict.achieved)},
         {"measured", measured >= 0 ? std::to_string(measured) + " %" : std::string("unknown")},
         {"action", policy_.starvation == StopLossPolicy::StarvationAction::kEvict ? "evict" : "report"},
         {"reason", "its launches waited in the compute gate yet it got under " +
                        Percent(policy_.starved_below) + " of its share"}});
  } else {
    starved_.erase(slice.id);
    Log(LogLevel::kInfo, "starved_no_more", {{"slice", slice.id}, {"achieved", Percent(verdict.achieved)}});
  }
}

std::set<std::string> StopLoss::Starved() const {
  std::lock_guard<std::mutex> lock(starved_mutex_);
  return starved_;
}

}  // namespace fgpu::agent
