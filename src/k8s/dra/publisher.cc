#include "k8s/dra/publisher.h"

#include <algorithm>

#include "k8s/client/json_fields.h"

namespace fgpu::k8s {

using nlohmann::json;

SlicePublisher::SlicePublisher(std::string node, CapacityPolicy policy, SliceAgent* agent, SliceStore* store)
    : node_(std::move(node)), policy_(policy), agent_(agent), store_(store) {}

Result<bool> SlicePublisher::PublishOnce() {
  Result<std::vector<PublishedGpu>> gpus = agent_->Gpus();
  if (!gpus.ok()) {
    std::lock_guard lock(mutex_);
    ++counters_.errors;
    return gpus.status();
  }
  const json wanted = BuildResourceSlice(node_, 0, *gpus, policy_)["spec"]["devices"];
  {
    std::lock_guard lock(mutex_);
    if (!last_devices_.is_null() && last_devices_ == wanted) return false;
  }
  Result<bool> written = Write(wanted);
  std::lock_guard lock(mutex_);
  if (!written.ok()) {
    ++counters_.errors;
    last_devices_ = json();  // re-read next time
  }
  return written;
}

Result<bool> SlicePublisher::Write(const json& devices) {
  // Two tries: a conflict (someone else wrote between our read and write) re-reads once; the
  // next poll tries again anyway.
  for (int attempt = 0; attempt < 2; ++attempt) {
    Result<json> current = store_->Get(ResourceSliceName(node_));
    if (!current.ok() && current.status().code() != StatusCode::kNotFound) return current.status();
    if (current.ok()) {
      const json* spec = Member(*current, "spec");
      const json empty = json::object();
      const json& fields = spec != nullptr ? *spec : empty;
      const json* pool = Member(fields, "pool");
      const int64_t generation = std::max<int64_t>(0, pool != nullptr ? IntegerMember(*pool, "generation").value_or(0) : 0);
      const json* published = Member(fields, "devices");
      if (published != nullptr && *published == devices && StringMember(fields, "driver") == kDriverName &&
          StringMember(fields, "nodeName") == node_) {
        std::lock_guard lock(mutex_);
        last_devices_ = devices;
        counters_.generation = generation;
        counters_.devices = static_cast<int64_t>(devices.size());
        return false;
      }
      json object = BuildResourceSlice(node_, generation + 1, {}, policy_);
      object["spec"]["devices"] = devices;
      const json* metadata = Member(*current, "metadata");
      object["metadata"]["resourceVersion"] = metadata != nullptr ? StringMember(*metadata, "resourceVersion") : "";
      Result<json> updated = store_->Update(object);
      if (!updated.ok() && updated.status().code() == StatusCode::kAborted) continue;
      if (!updated.ok()) return updated.status();
      std::lock_guard lock(mutex_);
      last_devices_ = devices;
      ++counters_.publishes;
      counters_.generation = generation + 1;
      counters_.devices = static_cast<int64_t>(devices.size());
      return true;
    }
    json object = BuildResourceSlice(node_, 1, {}, policy_);
    object["spec"]["devices"] = devices;
    Result<json> created = store_->Create(object);
    if (!created.ok() && created.status().code() == StatusCode::kAborted) continue;  // created meanwhile
    if (!created.ok()) return created.status();
    std::lock_guard lock(mutex_);
    last_devices_ = devices;
    ++counters_.publishes;
    counters_.generation = 1;
    counters_.devices = static_cast<int64_t>(devices.size());
    return true;
  }
  return Status::Aborted("the ResourceSlice " + ResourceSliceName(node_) + " kept changing under us");
}

PublisherCounters SlicePublisher::Counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

}  // namespace fgpu::k8s
