#include "k8s/deviceplugin/shares.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

namespace fgpu::k8s {

bool ShareScope::Covers(const PublishedGpu& gpu) const {
  switch (kind) {
    case Kind::kWholeGpus:
      return gpu.parent_uuid.empty();
    case Kind::kMigProfile:
      return !gpu.parent_uuid.empty() && gpu.mig_profile == mig_profile;
    case Kind::kEveryGpu:
      break;
  }
  return true;
}

std::string MigResourceName(const std::string& profile) {
  std::string name = "fgpu.io/mig-" + profile;
  std::replace(name.begin(), name.end(), '+', '.');
  return name;
}

SharePlan::SharePlan(int shares_per_gpu, CapacityPolicy policy, ShareScope scope)
    : shares_(std::clamp(shares_per_gpu, 1, 100)), policy_(policy), scope_(std::move(scope)) {}

std::string SharePlan::IdOf(const std::string& gpu_uuid, int share) {
  return gpu_uuid + "-s" + std::to_string(share);
}

std::optional<std::pair<std::string, int>> SharePlan::Parse(const std::string& id) {
  const std::size_t mark = id.rfind("-s");
  if (mark == std::string::npos || mark == 0 || mark + 2 >= id.size()) return std::nullopt;
  int share = 0;
  const char* first = id.data() + mark + 2;
  const char* last = id.data() + id.size();
  const auto [end, error] = std::from_chars(first, last, share);
  if (error != std::errc() || end != last || share < 0 || (last - first > 1 && *first == '0')) return std::nullopt;
  return std::make_pair(id.substr(0, mark), share);
}

std::vector<ShareDevice> SharePlan::Devices(const std::vector<PublishedGpu>& gpus) const {
  std::vector<ShareDevice> devices;
  for (const PublishedGpu& gpu : gpus) {
    if (!scope_.Covers(gpu)) continue;
    const bool healthy = gpu.healthy && gpu.shareable;
    for (int share = 0; share < shares_; ++share) devices.push_back({IdOf(gpu.uuid, share), healthy, -1});
  }
  return devices;
}

std::vector<std::string> SharePlan::Prefer(const std::vector<std::string>& available,
                                           const std::vector<std::string>& must_include, int size) const {
  std::map<std::string, std::vector<std::string>> free_by_gpu;
  for (const std::string& id : available) {
    if (auto parsed = Parse(id)) free_by_gpu[parsed->first].push_back(id);
  }
  std::optional<std::string> pinned;
  for (const std::string& id : must_include) {
    auto parsed = Parse(id);
    if (!parsed) return {};
    if (pinned && *pinned != parsed->first) return {};  // must-include ids on two GPUs: no single-GPU answer
    pinned = parsed->first;
  }
  const std::string* chosen = nullptr;
  std::size_t chosen_free = 0;
  for (const auto& [gpu, ids] : free_by_gpu) {
    if (pinned && gpu != *pinned) continue;
    if (ids.size() < static_cast<std::size_t>(size)) continue;
    if (chosen == nullptr || ids.size() < chosen_free) chosen = &gpu, chosen_free = ids.size();
  }
  if (chosen == nullptr) return {};
  std::vector<std::string> picked(must_include.begin(), must_include.end());
  for (const std::string& id : free_by_gpu[*chosen]) {
    if (picked.size() >= static_cast<std::size_t>(size)) break;
    if (std::find(picked.begin(), picked.end(), id) == picked.end()) picked.push_back(id);
  }
  return picked;
}

Result<ShareGrant> SharePlan::Grant(const std::vector<std::string>& ids, const std::vector<PublishedGpu>& gpus) const {
  if (ids.empty()) return Status::InvalidArgument("no fgpu.io/gpu shares were allocated");
  ShareGrant grant;
  std::set<int> shares;
  for (const std::string& id : ids) {
    auto parsed = Parse(id);
    if (!parsed || parsed->second >= shares_) return Status::InvalidArgument("'" + id + "' is not a share of this plugin");
    if (grant.gpu_uuid.empty()) grant.gpu_uuid = parsed->first;
    if (parsed->first != grant.gpu_uuid) {
      return Status::InvalidArgument("the shares span " + grant.gpu_uuid + " and " + parsed->first +
                                     ": a container's fgpu.io/gpu shares must come from one GPU");
    }
    if (!shares.insert(parsed->second).second) return Status::InvalidArgument("share '" + id + "' is listed twice");
  }
  const auto gpu = std::find_if(gpus.begin(), gpus.end(), [&](const PublishedGpu& g) { return g.uuid == grant.gpu_uuid; });
  if (gpu == gpus.end()) return Status::InvalidArgument(grant.gpu_uuid + " is not a GPU of this node's agent");
  if (!scope_.Covers(*gpu)) return Status::InvalidArgument(grant.gpu_uuid + " is not a device of this resource");
  grant.shares.assign(shares.begin(), shares.end());
  const uint64_t count = shares.size();
  const uint64_t step = std::max<uint64_t>(policy_.memory_step_bytes, 1);
  grant.memory_bytes = gpu->memory_bytes * count / static_cast<uint64_t>(shares_) / step * step;
  // Rounded down, so a GPU's shares never add up past 100 % (1 share of 100 is 1 %).
  grant.compute_percent = static_cast<uint32_t>(std::max<uint64_t>(1, 100 * count / static_cast<uint64_t>(shares_)));
  if (grant.memory_bytes == 0) return Status::InvalidArgument("the shares hold less memory than one step");
  return grant;
}

}  // namespace fgpu::k8s
