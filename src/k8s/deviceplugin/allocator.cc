#include "k8s/deviceplugin/allocator.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "k8s/dra/cdi_spec.h"

namespace fgpu::k8s {
namespace {

using nlohmann::json;

constexpr const char* kKeyPrefix = "k8sdp/";

uint64_t Fnv1a(const std::string& text) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

bool Overlaps(const std::vector<int>& a, const std::vector<int>& b) {
  return std::any_of(a.begin(), a.end(), [&](int share) { return std::binary_search(b.begin(), b.end(), share); });
}

}  // namespace

ShareAllocator::ShareAllocator(AllocatorOptions options, SharePlan plan, SliceAgent* agent)
    : options_(std::move(options)), plan_(std::move(plan)), agent_(agent) {}

std::string ShareAllocator::KeyOf(const ShareGrant& grant) {
  std::string shares;
  for (int share : grant.shares) shares += std::to_string(share) + ",";
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(Fnv1a(shares)));
  return std::string(kKeyPrefix) + grant.gpu_uuid + "/" + std::to_string(grant.shares.front()) + "-" +
         std::to_string(grant.shares.size()) + "-" + hash;
}

Status ShareAllocator::Load() {
  if (loaded_) return Status::Ok();
  std::ifstream in(options_.checkpoint_path);
  if (in) {
    std::stringstream text;
    text << in.rdbuf();
    const json parsed = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_object() || !parsed.contains("allocations") || !parsed["allocations"].is_object()) {
      return Status::Corrupt(options_.checkpoint_path + " is not a checkpoint of this plugin; move it away to start afresh");
    }
    for (const auto& [key, record] : parsed["allocations"].items()) {
      if (!record.is_object() || !record.contains("gpu") || !record["gpu"].is_string() || !record.contains("shares") ||
          !record["shares"].is_array()) {
        return Status::Corrupt(options_.checkpoint_path + ": allocation " + key + " is malformed");
      }
      Record loaded{record["gpu"].get<std::string>(), {}};
      for (const json& share : record["shares"]) {
        if (!share.is_number_integer()) return Status::Corrupt(options_.checkpoint_path + ": allocation " + key + " is malformed");
        loaded.shares.push_back(share.get<int>());
      }
      std::sort(loaded.shares.begin(), loaded.shares.end());
      records_[key] = std::move(loaded);
    }
  }
  loaded_ = true;
  return Status::Ok();
}

Status ShareAllocator::Save() const {
  json allocations = json::object();
  for (const auto& [key, record] : records_) {
    allocations[key] = json{{"gpu", record.gpu_uuid}, {"shares", record.shares}};
  }
  return WriteJsonAtomically(options_.checkpoint_path, json{{"allocations", std::move(allocations)}}, 0600);
}

Status ShareAllocator::ReleaseOverlapping(const ShareGrant& grant) {
  for (auto it = records_.begin(); it != records_.end();) {
    if (it->second.gpu_uuid != grant.gpu_uuid || !Overlaps(it->second.shares, grant.shares)) {
      ++it;
      continue;
    }
    Result<std::vector<GrantedSlice>> slices = agent_->List(it->first);
    if (!slices.ok()) return slices.status();
    for (const GrantedSlice& slice : *slices) {
      if (slice.key != it->first) continue;
      if (Status deleted = agent_->Delete(slice.id); !deleted.ok()) return deleted;
      ++counters_.released;
    }
    it = records_.erase(it);
  }
  return Status::Ok();
}

Result<CdiDevice> ShareAllocator::Allocate(const std::vector<std::string>& ids) {
  std::lock_guard lock(mutex_);
  ++counters_.allocations;
  const auto failed = [&](Status status) -> Result<CdiDevice> {
    ++counters_.errors;
    return status;
  };
  if (Status loaded = Load(); !loaded.ok()) return failed(loaded);
  Result<std::vector<PublishedGpu>> gpus = agent_->Gpus();
  if (!gpus.ok()) return failed(gpus.status());
  Result<ShareGrant> grant = plan_.Grant(ids, *gpus);
  if (!grant.ok()) return failed(grant.status());
  // The kubelet hands out a share only once its last holder is gone: that holder's slice goes.
  if (Status released = ReleaseOverlapping(*grant); !released.ok()) return failed(released);
  const std::string key = KeyOf(*grant);
  records_[key] = Record{grant->gpu_uuid, grant->shares};
  if (Status saved = Save(); !saved.ok()) return failed(saved);

  SliceOrder order;
  order.key = key;
  order.gpu_uuid = grant->gpu_uuid;
  order.memory_bytes = grant->memory_bytes;
  order.compute_percent = grant->compute_percent;
  order.tenant = options_.tenant;
  order.owner_uid = options_.owner_uid;
  order.isolation = options_.isolation;
  Result<GrantedSlice> slice = agent_->Create(order);
  if (!slice.ok()) return failed(slice.status());
  const auto gpu = std::find_if(gpus->begin(), gpus->end(), [&](const PublishedGpu& g) { return g.uuid == grant->gpu_uuid; });
  Result<CdiDevice> edits =
      ContainerEditsFor(slice->id, *slice, gpu == gpus->end() ? -1 : (gpu->minor >= 0 ? gpu->minor : gpu->index),
                        options_.edits);
  if (!edits.ok()) return failed(edits.status());
  return edits;
}

Result<std::vector<ShareDevice>> ShareAllocator::Devices() {
  Result<std::vector<PublishedGpu>> gpus = agent_->Gpus();
  if (!gpus.ok()) return gpus.status();
  return plan_.Devices(*gpus);
}

std::vector<std::string> ShareAllocator::Prefer(const std::vector<std::string>& available,
                                                const std::vector<std::string>& must_include, int size) const {
  return plan_.Prefer(available, must_include, size);
}

AllocatorCounters ShareAllocator::Counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

}  // namespace fgpu::k8s
