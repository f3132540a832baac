#include "k8s/dra/driver.h"

#include <set>

#include "k8s/dra/cdi_spec.h"
#include "k8s/client/json_fields.h"

namespace fgpu::k8s {
namespace {

using nlohmann::json;

// The uid the pod's containers run as, when the pod says so (pod level, else the first
// container that sets it).
std::optional<int64_t> RunAsUserOf(const json& pod) {
  const auto uid_of = [](const json* context) -> std::optional<int64_t> {
    if (context == nullptr) return std::nullopt;
    const std::optional<int64_t> uid = IntegerMember(*context, "runAsUser");
    if (!uid || *uid < 0 || *uid > 0x7fffffff) return std::nullopt;
    return uid;
  };
  const json* spec = Member(pod, "spec");
  if (spec == nullptr) return std::nullopt;
  if (auto uid = uid_of(Member(*spec, "securityContext"))) return uid;
  const json* containers = Member(*spec, "containers");
  if (containers == nullptr || !containers->is_array()) return std::nullopt;
  for (const json& container : *containers) {
    if (auto uid = uid_of(Member(container, "securityContext"))) return uid;
  }
  return std::nullopt;
}

// Keys are "k8s/<claim uid>/<device>/<share or request>".
std::string ClaimUidOfKey(const std::string& key) {
  const std::string prefix = "k8s/";
  if (key.rfind(prefix, 0) != 0) return {};
  const std::size_t end = key.find('/', prefix.size());
  return end == std::string::npos ? std::string() : key.substr(prefix.size(), end - prefix.size());
}

}  // namespace

DraDriver::DraDriver(DraOptions options, SliceAgent* agent, ClusterReader* cluster)
    : options_(std::move(options)), agent_(agent), cluster_(cluster) {}

std::string DraDriver::KeyPrefixOf(const std::string& claim_uid) { return "k8s/" + claim_uid + "/"; }

std::string DraDriver::SliceKeyOf(const std::string& claim_uid, const AllocatedDevice& device) {
  std::string key = KeyPrefixOf(claim_uid) + device.device + "/" + (device.share_id.empty() ? device.request : device.share_id);
  // The agent takes keys of up to 128 characters; a long request name is replaced by its hash.
  if (key.size() > 128) {
    uint64_t hash = 1469598103934665603ull;
    for (unsigned char c : key) hash = (hash ^ c) * 1099511628211ull;
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
    key = KeyPrefixOf(claim_uid) + device.device.substr(0, 63) + "/" + text;
  }
  return key;
}

std::shared_ptr<std::mutex> DraDriver::ClaimLock(const std::string& uid) {
  std::lock_guard lock(mutex_);
  for (auto it = claim_locks_.begin(); it != claim_locks_.end();) {
    it = it->second.expired() ? claim_locks_.erase(it) : std::next(it);
  }
  std::shared_ptr<std::mutex> held = claim_locks_[uid].lock();
  if (!held) {
    held = std::make_shared<std::mutex>();
    claim_locks_[uid] = held;
  }
  return held;
}

PrepareOutcome DraDriver::Prepare(const ClaimRef& claim) {
  const std::shared_ptr<std::mutex> claim_lock = ClaimLock(claim.uid);
  std::lock_guard serialized(*claim_lock);
  Result<std::vector<PreparedDevice>> devices = PrepareLocked(claim);
  std::lock_guard lock(mutex_);
  ++counters_.prepares;
  if (!devices.ok()) {
    ++counters_.prepare_errors;
    cluster_->ReportPrepareFailure(claim, devices.status().message());
    return {{}, devices.status().message()};
  }
  return {std::move(*devices), {}};
}

std::optional<DraDriver::DeviceTarget> DraDriver::FindTargetLocked(const std::string& device) const {
  if (auto found = devices_.find(device); found != devices_.end()) {
    const auto gpu = gpus_.find(found->second);
    return DeviceTarget{found->second, gpu != gpus_.end() && !gpu->second.parent_uuid.empty(), std::nullopt};
  }
  if (auto found = placements_.find(device); found != placements_.end()) {
    return DeviceTarget{found->second.parent_uuid, true, found->second};
  }
  return std::nullopt;
}

Result<DraDriver::DeviceTarget> DraDriver::TargetOfDevice(const std::string& device) {
  {
    std::lock_guard lock(mutex_);
    if (std::optional<DeviceTarget> target = FindTargetLocked(device)) return *target;
  }
  // A device we have not seen: the GPUs may have changed since; ask the agent once.
  Result<std::vector<PublishedGpu>> gpus = agent_->Gpus();
  if (!gpus.ok()) return gpus.status();
  std::lock_guard lock(mutex_);
  gpus_.clear();
  devices_.clear();
  placements_.clear();
  std::set<std::string> dynamic;
  for (const PublishedGpu& gpu : *gpus) {
    gpus_[gpu.uuid] = gpu;
    if (gpu.mig_dynamic && gpu.parent_uuid.empty()) dynamic.insert(gpu.uuid);
  }
  for (const PublishedGpu& gpu : *gpus) {
    // A dynamic GPU is published as its placements; neither it nor its instances are devices.
    if (dynamic.count(gpu.uuid) != 0 || dynamic.count(gpu.parent_uuid) != 0) continue;
    devices_[DeviceNameOf(gpu.uuid)] = gpu.uuid;
  }
  for (const PublishedGpu& gpu : *gpus) {
    for (MigPlacement& placement : PlacementsOf(gpu)) placements_[placement.device] = std::move(placement);
  }
  if (std::optional<DeviceTarget> target = FindTargetLocked(device)) return *target;
  return Status::NotFound("device " + device + " is not a GPU of this node's agent");
}

std::string DraDriver::WrongAllocation(const AllocatedDevice& device, const DeviceTarget& target) {
  if (target.placement) return "";  // the claim's whole instance, whatever it asked
  if (device.whole) {
    return "device " + device.device +
           " was allocated without consumedCapacity (the cluster must enable DRAConsumableCapacity)";
  }
  // Hard isolation is a whole MIG instance: the scheduler must have counted it all taken, or it
  // would give the rest to another claim that the agent then cannot place.
  if (device.parameters.isolation != std::optional<std::string>("hard")) return "";
  if (!target.mig_instance) {
    return "device " + device.device + " is not a MIG instance: hard isolation takes a MIG instance whole";
  }
  if (device.compute_percent < 100) {
    return "hard isolation takes the whole MIG instance: its claim must consume all of its compute (ask none, or 100)";
  }
  return "";
}

SliceOrder DraDriver::OrderFor(const AllocatedDevice& device, const DeviceTarget& target) {
  SliceOrder order;
  order.gpu_uuid = target.gpu_uuid;
  order.memory_bytes = device.memory_bytes;
  order.compute_percent = device.compute_percent;
  order.isolation = device.parameters.isolation;
  if (target.placement) {
    // The instance at the placement the scheduler chose, made by the agent, whole.
    order.isolation = "hard";
    order.mig_profile = target.placement->profile;
    order.mig_start = target.placement->start;
    order.memory_bytes = 1;  // any: the instance is all the slice's
  }
  order.tier = device.parameters.tier;
  order.compute_mode = device.parameters.compute_mode;
  return order;
}

Result<int64_t> DraDriver::OwnerOf(const ClaimAllocation& claim, const SliceParameters& parameters) {
  if (parameters.owner_uid) return *parameters.owner_uid;
  for (const PodRef& pod : claim.reserved_for) {
    Result<json> object = cluster_->GetPod(claim.ref.namespace_name, pod.name);
    if (!object.ok() && object.status().code() == StatusCode::kNotFound) continue;
    if (!object.ok()) {
      return Status::WithCode(object.status().code(), "cannot read pod " + claim.ref.namespace_name + "/" + pod.name +
                                                          " for its runAsUser: " + object.status().message());
    }
    if (std::optional<int64_t> uid = RunAsUserOf(*object)) return *uid;
  }
  return options_.default_owner_uid;
}

int DraDriver::IndexOfGpu(const std::string& gpu_uuid) const {
  std::lock_guard lock(mutex_);
  const auto gpu = gpus_.find(gpu_uuid);
  if (gpu == gpus_.end()) return -1;
  return gpu->second.minor >= 0 ? gpu->second.minor : gpu->second.index;
}

Result<std::vector<PreparedDevice>> DraDriver::PrepareLocked(const ClaimRef& ref) {
  Result<json> object = cluster_->GetClaim(ref.namespace_name, ref.name);
  if (!object.ok()) {
    return Status::WithCode(object.status().code(), "cannot read ResourceClaim " + ref.namespace_name + "/" + ref.name + ": " +
                                              object.status().message());
  }
  Result<ClaimAllocation> claim = ParseClaimAllocation(*object, ref, options_.driver, options_.node, options_.claims);
  if (!claim.ok()) return claim.status();

  // Every device must be one of ours before any slice is made, so a bad claim changes nothing.
  std::vector<DeviceTarget> targets;
  for (const AllocatedDevice& device : claim->devices) {
    Result<DeviceTarget> target = TargetOfDevice(device.device);
    if (!target.ok()) return Status::InvalidArgument("ResourceClaim " + ref.namespace_name + "/" + ref.name + ": " +
                                                     target.status().message());
    if (const std::string wrong = WrongAllocation(device, *target); !wrong.empty()) {
      return Status::InvalidArgument("ResourceClaim " + ref.namespace_name + "/" + ref.name + ": " + wrong);
    }
    targets.push_back(std::move(*target));
  }

  std::vector<PreparedDevice> prepared;
  std::vector<CdiDevice> cdi_devices;
  for (std::size_t i = 0; i < claim->devices.size(); ++i) {
    const AllocatedDevice& device = claim->devices[i];
    SliceOrder order = OrderFor(device, targets[i]);
    order.key = SliceKeyOf(ref.uid, device);
    order.tenant = device.parameters.tenant.value_or(ref.namespace_name);
    Result<int64_t> owner = OwnerOf(*claim, device.parameters);
    if (!owner.ok()) {
      return Status::WithCode(owner.status().code(),
                              "ResourceClaim " + ref.namespace_name + "/" + ref.name + ": " + owner.status().message());
    }
    order.owner_uid = *owner;
    order.namespace_name = ref.namespace_name;
    order.pod = claim->reserved_for.empty() ? std::string() : claim->reserved_for.front().name;
    order.pod_uid = claim->reserved_for.empty() ? std::string() : claim->reserved_for.front().uid;
    order.claim = ref.name;
    // Slices made before a failure stay: the kubelet retries with the same claim and gets them
    // back by their keys, and Reconcile releases them if the claim goes away instead.
    Result<GrantedSlice> slice = agent_->Create(order);
    if (!slice.ok()) {
      return Status::WithCode(slice.status().code(), "ResourceClaim " + ref.namespace_name + "/" + ref.name + ": device " +
                                               device.device + ": " + slice.status().message());
    }
    const std::string cdi_name = ref.uid + "-" + device.device + (device.share_id.empty() ? "" : "-" + device.share_id);
    Result<CdiDevice> edits = ContainerEditsFor(cdi_name, *slice, IndexOfGpu(targets[i].gpu_uuid), options_.edits);
    if (!edits.ok()) {
      return Status::WithCode(edits.status().code(),
                              "ResourceClaim " + ref.namespace_name + "/" + ref.name + ": " + edits.status().message());
    }
    cdi_devices.push_back(std::move(*edits));
    prepared.push_back({device.request, device.pool, device.device, CdiIdOf(cdi_name), slice->id});
  }
  if (Status written = WriteCdiSpec(CdiSpecPath(options_.cdi_dir, ref.uid), BuildCdiSpec(cdi_devices)); !written.ok()) {
    return written;
  }
  return prepared;
}

Status DraDriver::ReleaseClaim(const std::string& uid) {
  Result<std::vector<GrantedSlice>> slices = agent_->List(KeyPrefixOf(uid));
  if (!slices.ok()) return slices.status();
  for (const GrantedSlice& slice : *slices) {
    if (Status deleted = agent_->Delete(slice.id); !deleted.ok()) return deleted;
  }
  return RemoveCdiSpec(CdiSpecPath(options_.cdi_dir, uid));
}

Status DraDriver::Unprepare(const ClaimRef& claim) {
  const std::shared_ptr<std::mutex> claim_lock = ClaimLock(claim.uid);
  std::lock_guard serialized(*claim_lock);
  const Status released = ReleaseClaim(claim.uid);
  std::lock_guard lock(mutex_);
  ++counters_.unprepares;
  if (!released.ok()) ++counters_.unprepare_errors;
  return released;
}

ReconcileReport DraDriver::Reconcile() {
  ReconcileReport report;
  // Slices first, then claims: a slice made after the first list belongs to a claim the second
  // list sees, so no live claim's slice is taken for a leak.
  Result<std::vector<GrantedSlice>> slices = agent_->List("k8s/");
  if (!slices.ok()) {
    report.errors.push_back("cannot list the agent's slices: " + slices.status().message());
    return report;
  }
  Result<std::vector<json>> claims = cluster_->ListClaims();
  if (!claims.ok()) {
    report.errors.push_back("cannot list ResourceClaims: " + claims.status().message());
    return report;
  }
  std::set<std::string> allocated_here;
  for (const json& claim : *claims) {
    const json* metadata = Member(claim, "metadata");
    if (metadata == nullptr) continue;
    const ClaimRef ref{StringMember(*metadata, "namespace"), StringMember(*metadata, "name"),
                       StringMember(*metadata, "uid")};
    // Allocated here, whatever its parameters: a claim a stricter policy would now refuse still
    // holds its slice until it is unprepared.
    ClaimPolicy lenient;
    lenient.claim_may_set = {"tier", "computeMode", "tenant", "runAsUser"};
    if (ParseClaimAllocation(claim, ref, options_.driver, options_.node, lenient).ok()) allocated_here.insert(ref.uid);
  }
  std::set<std::string> with_slices;
  for (const GrantedSlice& slice : *slices) {
    const std::string uid = ClaimUidOfKey(slice.key);
    if (uid.empty()) continue;
    with_slices.insert(uid);
    if (allocated_here.count(uid) != 0) {
      ++report.slices_kept;
      continue;
    }
    const std::shared_ptr<std::mutex> claim_lock = ClaimLock(uid);
    std::lock_guard serialized(*claim_lock);
    if (Status deleted = agent_->Delete(slice.id); !deleted.ok()) {
      report.errors.push_back("cannot release slice " + slice.id + ": " + deleted.message());
      continue;
    }
    ++report.slices_released;
    if (Status removed = RemoveCdiSpec(CdiSpecPath(options_.cdi_dir, uid)); !removed.ok()) {
      report.errors.push_back(removed.message());
    }
  }
  for (const std::string& uid : ListCdiSpecClaims(options_.cdi_dir)) {
    if (with_slices.count(uid) == 0 && allocated_here.count(uid) == 0) {
      if (RemoveCdiSpec(CdiSpecPath(options_.cdi_dir, uid)).ok()) ++report.specs_removed;
    }
  }
  std::lock_guard lock(mutex_);
  counters_.reconcile_released += static_cast<uint64_t>(report.slices_released);
  return report;
}

DriverCounters DraDriver::Counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

}  // namespace fgpu::k8s
