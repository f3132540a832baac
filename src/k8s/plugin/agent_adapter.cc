#include "k8s/plugin/agent_adapter.h"

#include <algorithm>

#include "core/mig_profiles.h"

namespace fgpu::k8s {
namespace {

GrantedSlice GrantedOf(const api::Slice& slice) {
  GrantedSlice granted;
  granted.id = slice.id;
  granted.gpu_uuid = slice.gpu;
  if (slice.details) {
    granted.key = slice.details->idempotency_key;
    granted.dir = slice.details->dir;
    granted.env = slice.details->env;
  }
  return granted;
}

}  // namespace

Result<GrantedSlice> AgentAdapter::Create(const SliceOrder& order) {
  api::SliceRequest request;
  request.memory_bytes = order.memory_bytes;
  if (order.isolation && *order.isolation != "trusted") {
    request.isolation = order.isolation;  // the whole instance: its memory and compute are the agent's to size
  } else {
    request.compute = order.compute_percent;
  }
  request.compute_mode = order.compute_mode;
  request.tier = order.tier;
  if (!order.tenant.empty()) request.tenant = order.tenant;
  request.gpu = order.gpu_uuid;
  request.mig_profile = order.mig_profile;
  request.mig_start = order.mig_start;
  request.idempotency_key = order.key;
  if (order.owner_uid) request.owner = static_cast<uint32_t>(*order.owner_uid);
  request.labels.kube_namespace = order.namespace_name;
  request.labels.pod = order.pod;
  request.labels.claim = order.claim;
  request.labels.pod_uid = order.pod_uid;
  Result<api::CreateReply> reply = client_.CreateSlice(request);
  if (!reply.ok()) return reply.status();
  if (!reply->slice) return Status::Internal("the agent queued a request that did not ask to wait");
  GrantedSlice granted = GrantedOf(*reply->slice);
  if (granted.dir.empty()) {
    return Status::PermissionDenied("the agent did not show slice " + granted.id +
                                    "'s details: the plugin must reach it as an admin (root, over its Unix socket)");
  }
  return granted;
}

Result<std::vector<GrantedSlice>> AgentAdapter::List(const std::string& key_prefix) {
  Result<std::vector<api::Slice>> slices = client_.ListSlices();
  if (!slices.ok()) return slices.status();
  std::vector<GrantedSlice> ours;
  for (const api::Slice& slice : *slices) {
    GrantedSlice granted = GrantedOf(slice);
    if (!granted.key.empty() && granted.key.rfind(key_prefix, 0) == 0) ours.push_back(std::move(granted));
  }
  return ours;
}

Status AgentAdapter::Delete(const std::string& id) {
  Status deleted = client_.DeleteSlice(id);
  if (deleted.code() == StatusCode::kNotFound) return Status::Ok();
  return deleted;
}

namespace {

// The memory slices of `parent`'s instances that hold a slice not made for a claim (its key is
// not "k8s/…"): taken outside Kubernetes, so the scheduler must not place over them.
uint8_t ForeignSlices(const api::Gpu& parent, const std::vector<api::Gpu>& gpus, const std::vector<api::Slice>& slices) {
  const mig::ModelInfo* model = mig::ModelOfProduct(parent.name, parent.memory_total);
  if (model == nullptr) return 0;
  uint8_t taken = 0;
  for (const api::Gpu& instance : gpus) {
    if (instance.parent_uuid != parent.uuid) continue;
    const bool foreign = std::any_of(slices.begin(), slices.end(), [&](const api::Slice& slice) {
      const std::string key = slice.details ? slice.details->idempotency_key : std::string();
      return slice.gpu == instance.uuid && key.rfind("k8s/", 0) != 0;
    });
    const mig::Profile* profile = mig::FindProfileByName(*model, instance.mig_profile);
    if (foreign && profile != nullptr) taken |= profile->Occupies(instance.mig_start);
  }
  return taken;
}

}  // namespace

Result<std::vector<PublishedGpu>> AgentAdapter::Gpus() {
  Result<std::vector<api::Gpu>> gpus = client_.ListGpus();
  if (!gpus.ok()) return gpus.status();
  const bool any_dynamic = std::any_of(gpus->begin(), gpus->end(), [](const api::Gpu& gpu) { return gpu.mig_dynamic; });
  std::vector<api::Slice> slices;
  if (any_dynamic) {
    Result<std::vector<api::Slice>> listed = client_.ListSlices();
    if (!listed.ok()) return listed.status();
    slices = std::move(*listed);
  }
  std::vector<PublishedGpu> published;
  for (const api::Gpu& gpu : *gpus) {
    // What a claim's slice can go on: a shared GPU or a MIG instance (a slice inside it), and a
    // dynamic MIG GPU (its placements); not a GPU in MIG mode with a fixed geometry itself, nor
    // one of the exclusive class (docs/mig.md "Isolation classes").
    const bool mig_gpu = gpu.isolation == "mig" && gpu.parent_uuid.empty() && !gpu.mig_dynamic;
    if (mig_gpu || gpu.isolation == "exclusive") continue;
    PublishedGpu entry;
    entry.uuid = gpu.uuid;
    entry.index = gpu.index;
    entry.product = gpu.name;
    entry.memory_bytes = gpu.memory_total;
    entry.compute_capability = gpu.compute_capability;
    entry.driver_version = gpu.driver_version;
    entry.mig_capable = gpu.mig_capable;
    entry.minor = gpu.minor_number;
    entry.shareable = !gpu.exclusive && gpu.fenced.empty();
    entry.mig_profile = gpu.mig_profile;
    entry.parent_uuid = gpu.parent_uuid;
    entry.mig_start = gpu.mig_start;
    entry.mig_dynamic = gpu.mig_dynamic;
    if (gpu.mig_dynamic) entry.mig_foreign_slices = ForeignSlices(gpu, *gpus, slices);
    published.push_back(std::move(entry));
  }
  return published;
}

}  // namespace fgpu::k8s
