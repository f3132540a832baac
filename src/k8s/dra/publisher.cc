#include "k8s/dra/publisher.h"

#include <algorithm>
#include <optional>
#include <set>

#include "k8s/client/json_fields.h"

namespace fgpu::k8s {
namespace {

using nlohmann::json;

// Every read below tolerates objects of any shape: a peer may have written anything.
std::string NameOf(const json& object) {
  const json* metadata = Member(object, "metadata");
  return metadata != nullptr ? StringMember(*metadata, "name") : "";
}

int64_t GenerationOf(const json& object) {
  const json* pool = Path(object, "spec", "pool");
  return std::max<int64_t>(0, pool != nullptr ? IntegerMember(*pool, "generation").value_or(0) : 0);
}

// What two writes of the same pool share: name → spec with the pool's generation left out.
// Objects without a name are not ours to compare (nor to delete).
json ContentOf(const std::vector<json>& objects) {
  json content = json::object();
  for (const json& object : objects) {
    const std::string name = NameOf(object);
    if (name.empty()) continue;
    const json* spec = Member(object, "spec");
    json kept = spec != nullptr ? *spec : json();
    if (kept.is_object() && kept.contains("pool") && kept["pool"].is_object()) kept["pool"].erase("generation");
    content[name] = std::move(kept);
  }
  return content;
}

int64_t HighestGeneration(const std::vector<json>& objects) {
  int64_t highest = 0;
  for (const json& object : objects) highest = std::max(highest, GenerationOf(object));
  return highest;
}

bool OneGeneration(const std::vector<json>& objects) {
  std::set<int64_t> generations;
  for (const json& object : objects) {
    if (!NameOf(object).empty()) generations.insert(GenerationOf(object));
  }
  return generations.size() <= 1;
}

int64_t DeviceCount(const std::vector<json>& pool) {
  int64_t count = 0;
  for (const json& object : pool) {
    const json* devices = Path(object, "spec", "devices");
    if (devices != nullptr && devices->is_array()) count += static_cast<int64_t>(devices->size());
  }
  return count;
}

// The resourceVersion of the object named `name` among `objects`; nullopt when there is none.
std::optional<std::string> VersionOf(const std::string& name, const std::vector<json>& objects) {
  for (const json& object : objects) {
    if (!name.empty() && NameOf(object) == name) return StringMember(*Member(object, "metadata"), "resourceVersion");
  }
  return std::nullopt;
}

}  // namespace

SlicePublisher::SlicePublisher(std::string node, CapacityPolicy policy, SliceAgent* agent, SliceStore* store)
    : node_(std::move(node)), policy_(policy), agent_(agent), store_(store) {}

Result<bool> SlicePublisher::PublishOnce() {
  Result<std::vector<PublishedGpu>> gpus = agent_->Gpus();
  if (!gpus.ok()) {
    std::lock_guard lock(mutex_);
    ++counters_.errors;
    return gpus.status();
  }
  const std::vector<json> pool = BuildResourcePool(node_, 0, *gpus, policy_);
  const json content = ContentOf(pool);
  {
    std::lock_guard lock(mutex_);
    if (!last_content_.is_null() && last_content_ == content) return false;
  }
  Result<bool> written = Write(pool, content);
  if (!written.ok()) {
    std::lock_guard lock(mutex_);
    ++counters_.errors;
    last_content_ = json();  // re-read next time
  }
  return written;
}

Result<bool> SlicePublisher::Write(const std::vector<json>& pool, const json& content) {
  // Two tries: a conflict (someone else wrote between our list and write) re-lists once; the next
  // poll tries again anyway.
  for (int attempt = 0; attempt < 2; ++attempt) {
    Result<std::vector<json>> existing = store_->List(kDriverName, node_);
    if (!existing.ok()) return existing.status();
    const int64_t generation = HighestGeneration(*existing);
    if (ContentOf(*existing) == content && OneGeneration(*existing)) {
      Record(content, generation, DeviceCount(pool), /*wrote=*/false);
      return false;
    }
    Status written = WriteObjects(pool, *existing, generation + 1);
    if (written.code() == StatusCode::kAborted) continue;
    if (!written.ok()) return written;
    Status pruned = DeleteStale(content, *existing);
    if (!pruned.ok()) return pruned;
    Record(content, generation + 1, DeviceCount(pool), /*wrote=*/true);
    return true;
  }
  return Status::Aborted("the ResourceSlices of " + node_ + " kept changing under us");
}

Status SlicePublisher::WriteObjects(std::vector<json> pool, const std::vector<json>& existing, int64_t generation) {
  for (json& object : pool) {
    object["spec"]["pool"]["generation"] = generation;
    const std::optional<std::string> version = VersionOf(NameOf(object), existing);
    if (version.has_value()) object["metadata"]["resourceVersion"] = *version;
    // Aborted when changed (or, for a Create, made) since the list.
    Result<json> written = version.has_value() ? store_->Update(object) : store_->Create(object);
    if (!written.ok()) return written.status();
  }
  return Status::Ok();
}

Status SlicePublisher::DeleteStale(const json& content, const std::vector<json>& existing) {
  for (const json& object : existing) {
    const std::string name = NameOf(object);
    if (name.empty() || content.contains(name)) continue;
    Status deleted = store_->Delete(name);
    if (!deleted.ok()) return deleted;
  }
  return Status::Ok();
}

void SlicePublisher::Record(const json& content, int64_t generation, int64_t devices, bool wrote) {
  std::lock_guard lock(mutex_);
  last_content_ = content;
  if (wrote) ++counters_.publishes;
  counters_.generation = generation;
  counters_.devices = devices;
}

PublisherCounters SlicePublisher::Counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

}  // namespace fgpu::k8s
