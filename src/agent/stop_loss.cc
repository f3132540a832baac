#include "agent/stop_loss.h"

#include <dirent.h>
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <iterator>

#include "core/units.h"
#include "slice/compute_spec.h"
#include "slice/process_liveness.h"

namespace fgpu::agent {
namespace {

// The FGPU_SLICE of a process, from /proc/<pid>/environ ("" when unreadable or unset).
std::string SliceDirOf(int pid) {
  std::ifstream environ("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(environ)), std::istreambuf_iterator<char>());
  const std::string key = "FGPU_SLICE=";
  for (std::size_t at = 0; at < all.size();) {
    const std::size_t end = std::min(all.find('\0', at), all.size());
    if (all.compare(at, key.size(), key) == 0) return all.substr(at + key.size(), end - at - key.size());
    at = end + 1;
  }
  return "";
}

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
  std::lock_guard<std::mutex> lock(mutex_);
  return counters_;
}

std::vector<pid_t> StopLoss::ProcessesOf(const SliceRecord& slice) const {
  std::vector<pid_t> pids;
  Result<slice::SliceAdmin> admin = slice::SliceAdmin::Open(slice.dir);
  if (admin.ok()) {
    for (const slice::ProcessUsage& process : admin->Usage().processes) pids.push_back(process.pid);
  }
  // Processes that name the slice but never attached (the interposer bypassed or disabled).
  if (DIR* proc = opendir("/proc")) {
    while (dirent* entry = readdir(proc)) {
      const int pid = std::atoi(entry->d_name);
      if (pid > 0 && SliceDirOf(pid) == slice.dir && std::find(pids.begin(), pids.end(), pid) == pids.end()) {
        pids.push_back(pid);
      }
    }
    closedir(proc);
  }
  return pids;
}

std::map<int, std::string> StopLoss::Attribute(const std::vector<GpuProcess>& processes,
                                                const std::vector<SliceRecord>& slices,
                                                std::map<std::string, uint64_t>* charged) const {
  std::map<std::string, std::string> slice_by_dir;
  for (const SliceRecord& slice : slices) slice_by_dir[slice.dir] = slice.id;
  std::map<int, std::string> owner;
  for (const SliceRecord& slice : slices) {
    Result<slice::SliceAdmin> admin = slice::SliceAdmin::Open(slice.dir);
    if (!admin.ok()) continue;
    const slice::UsageSnapshot usage = admin->Usage();
    (*charged)[slice.id] = usage.used.empty() ? 0 : usage.used[0];
    for (const slice::ProcessUsage& process : usage.processes) owner[process.pid] = slice.id;
  }
  for (const GpuProcess& process : processes) {
    if (owner.count(process.pid) != 0) continue;
    const auto found = slice_by_dir.find(SliceDirOf(process.pid));
    if (found != slice_by_dir.end()) owner[process.pid] = found->second;
  }
  return owner;
}

void StopLoss::Evict(const SliceRecord& slice, const std::string& why, int64_t now_ms) {
  if (std::any_of(evictions_.begin(), evictions_.end(), [&](const Eviction& e) { return e.slice == slice.id; })) return;
  std::cerr << "fgpu agent: evicting slice " << slice.id << " (tenant " << slice.tenant << "): " << why << std::endl;
  for (pid_t pid : ProcessesOf(slice)) kill(pid, SIGTERM);
  evictions_.push_back({slice.id, now_ms + policy_.grace_ms});
  counters_.evictions++;
}

void StopLoss::FinishEvictions(int64_t now_ms) {
  std::vector<Eviction> pending;
  for (const Eviction& eviction : evictions_) {
    Result<SliceRecord> slice = slices_->Get(eviction.slice);
    if (!slice.ok()) continue;  // gone: its fgpu run released it
    const std::vector<pid_t> pids = ProcessesOf(*slice);
    const bool alive = std::any_of(pids.begin(), pids.end(), [](pid_t pid) {
      const uint64_t start = slice::ReadStartTime(pid);
      return start != 0 && !slice::IsProcessDead(pid, start);
    });
    if (alive && now_ms < eviction.kill_at_ms) {
      pending.push_back(eviction);
      continue;
    }
    for (pid_t pid : pids) kill(pid, SIGKILL);
    (void)slices_->Delete(eviction.slice);
  }
  evictions_ = std::move(pending);
}

void StopLoss::Preempt(const std::vector<SliceRecord>& slices, int64_t now_ms) {
  const std::optional<CreateRequest> head = slices_->QueueHead();
  if (!head || !evictions_.empty()) return;
  std::vector<SliceRecord> best;
  bool found = false;
  for (const GpuRoom& room : slices_->Rooms()) {
    if (head->gpu && *head->gpu != room.gpu.uuid && *head->gpu != std::to_string(room.gpu.index)) continue;
    std::vector<SliceRecord> lower;
    for (const SliceRecord& slice : slices) {
      if (slice.gpu_uuid == room.gpu.uuid && static_cast<int>(slice.tier) < static_cast<int>(head->tier)) {
        lower.push_back(slice);
      }
    }
    std::sort(lower.begin(), lower.end(), EvictedBefore);
    const uint32_t share = head->compute_share.value_or(1);
    uint64_t memory = room.memory_reserved;
    uint32_t compute = room.compute_reserved;
    std::vector<SliceRecord> victims;
    for (const SliceRecord& slice : lower) {
      if (memory + head->memory_bytes <= room.gpu.memory_total && compute + share <= 100) break;
      victims.push_back(slice);
      memory -= slice.memory_bytes;
      compute -= slice.compute_share;
    }
    const bool fits = memory + head->memory_bytes <= room.gpu.memory_total && compute + share <= 100;
    if (fits && !victims.empty() && (!found || victims.size() < best.size())) {
      best = victims;
      found = true;
    }
  }
  for (const SliceRecord& victim : best) {
    Evict(victim, std::string("preempted: a ") + slice::ToString(head->tier) + "-tier request needs its room", now_ms);
  }
}

void StopLoss::Tick(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  FinishEvictions(now_ms);
  Preempt(slices_->List(), now_ms);
  if (nvml_ == nullptr) return;
  Result<std::vector<GpuState>> gpus = nvml_->Gpus();
  if (!gpus.ok()) return;
  const std::vector<SliceRecord> slices = slices_->List();
  starvation_.Retain(slices);
  counters_.unaccounted_bytes.clear();
  for (const GpuState& gpu : *gpus) {
    std::vector<SliceRecord> here;
    for (const SliceRecord& slice : slices) {
      if (slice.gpu_uuid == gpu.uuid) here.push_back(slice);
    }
    CheckBypass(gpu, here, now_ms);  // first: a bypasser is the culprit, evicted before anyone else
    (void)slices_->SetFenced(gpu.uuid, CheckGpu(gpu, here, now_ms));  // the service keeps it (GpuRoom::fenced)
  }
}

void StopLoss::CheckBypass(const GpuState& gpu, const std::vector<SliceRecord>& here, int64_t now_ms) {
  Result<std::vector<GpuProcess>> processes = nvml_->Processes(gpu.uuid);
  if (!processes.ok()) return;
  std::map<std::string, uint64_t> charged;  // what each slice's ledger holds
  const std::map<int, std::string> owner = Attribute(*processes, here, &charged);
  std::map<std::string, uint64_t> seen;
  for (const GpuProcess& process : *processes) {
    const auto it = owner.find(process.pid);
    if (it != owner.end()) seen[it->second] += process.used_bytes;
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
      std::cerr << "fgpu agent: bypass alert, slice " << slice.id << ": " << why << std::endl;
    }
  }
}

std::string StopLoss::CheckGpu(const GpuState& gpu, const std::vector<SliceRecord>& here, int64_t now_ms) {
  const std::string starved = CheckStarvation(here, now_ms);
  const uint64_t free = gpu.memory_total > gpu.memory_used ? gpu.memory_total - gpu.memory_used : 0;
  if (policy_.min_free_bytes == 0 || free >= policy_.min_free_bytes) return starved;
  const std::string why = FormatByteSize(free) + " free, under the threshold of " + FormatByteSize(policy_.min_free_bytes);
  if (!here.empty() && evictions_.empty()) {
    Evict(*std::min_element(here.begin(), here.end(), EvictedBefore), "GPU " + gpu.uuid + " has " + why, now_ms);
  }
  return why;
}

std::string StopLoss::CheckStarvation(const std::vector<SliceRecord>& here, int64_t now_ms) {
  if (!compute_ || policy_.starved_below <= 0) return "";
  std::string fence;
  for (const SliceRecord& slice : here) {
    const StarvationVerdict verdict = starvation_.Observe(slice, compute_(slice), now_ms);
    if (!verdict.starved) continue;
    const std::string why = "slice " + slice.id + " (" + slice::ToString(slice.tier) + ") starved: " +
                            Percent(verdict.achieved) + " of the GPU against a share of " +
                            std::to_string(slice.compute_share) + " %";
    if (fence.empty()) fence = why;
    if (!verdict.decided) continue;  // acted on when its window closed
    counters_.starvations++;
    std::cerr << "fgpu agent: " << why << std::endl;
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

}  // namespace fgpu::agent
