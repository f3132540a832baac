// MigManager's dynamic GPUs: instances made for the hard-isolation requests that need them and
// destroyed when their last slice ends (mig_manager.h, docs/mig.md "Dynamic MIG").
#include <algorithm>

#include "agent/log.h"
#include "agent/mig_manager.h"
#include "agent/mig_setup.h"
#include "core/units.h"

namespace fgpu::agent {
namespace {

bool Names(const GpuState& gpu, const std::string& selector) {
  return gpu.uuid == selector || (gpu.parent_uuid.empty() && std::to_string(gpu.index) == selector);
}

std::string Where(const mig::Profile& profile, int start, const GpuState& gpu) {
  return "a " + std::string(profile.name) + " instance at memory slice " + std::to_string(start) + " of GPU " + gpu.uuid;
}

std::vector<mig::Placed> PlacedOf(const std::vector<MigInstance>& instances) {
  std::vector<mig::Placed> placed;
  for (const MigInstance& instance : instances) placed.push_back({instance.profile_id, instance.start});
  return placed;
}

void ClearPlacement(CreateRequest& request, const std::string& instance_uuid) {
  request.gpu = instance_uuid;
  request.mig_profile.reset();
  request.mig_start.reset();
}

}  // namespace

const GpuState* MigManager::FindMigGpuLocked(const std::string& selector) const {
  for (const GpuRoom& room : slices_->Rooms()) {
    if (room.gpu.parent_uuid.empty() && room.gpu.isolation == IsolationClass::kMig && Names(room.gpu, selector)) {
      for (const GpuState& gpu : dynamic_) {
        if (gpu.uuid == room.gpu.uuid) return &gpu;
      }
    }
  }
  return nullptr;
}

Result<QueueStatus> MigManager::CreateOrQueue(CreateRequest request, const net::Peer& peer) {
  if (request.isolation != Isolation::kHard) return slices_->CreateOrQueue(request, peer);
  std::lock_guard<std::mutex> lock(mutex_);
  // A retry of a create that made its slice: the service answers it from its key, on its instance.
  if (!request.idempotency_key.empty()) {
    for (const SliceRecord& slice : slices_->List()) {
      if (slice.idempotency_key != request.idempotency_key) continue;
      ClearPlacement(request, slice.gpu_uuid);
      return slices_->CreateOrQueue(request, peer);
    }
  }
  if (request.mig_profile) return CreateOnProfileLocked(std::move(request), peer);
  if (dynamic_.empty()) return slices_->CreateOrQueue(request, peer);
  // A dynamic GPU named: an instance on it (its free ones are tried first as anywhere).
  std::vector<const GpuState*> candidates;
  if (request.gpu) {
    const GpuState* named = FindMigGpuLocked(*request.gpu);
    if (named == nullptr) return slices_->CreateOrQueue(request, peer);  // an instance, or a GPU of another class
    candidates.push_back(named);
  } else {
    for (const GpuState& gpu : dynamic_) candidates.push_back(&gpu);
  }
  // A free instance that holds it first: anywhere by the service's smallest-whole-instance rule,
  // or the smallest free one of the dynamic GPU named.
  Status refusal = Status::ResourceExhausted("no MIG instance is free");
  if (!request.gpu) {
    CreateRequest now = request;
    now.wait = false;
    Result<QueueStatus> placed = slices_->CreateOrQueue(now, peer);
    if (placed.ok() || placed.status().code() != StatusCode::kResourceExhausted) return placed;
    refusal = placed.status();
  } else {
    std::optional<GpuRoom> smallest;
    for (const GpuRoom& room : slices_->Rooms()) {
      const bool fits = room.gpu.parent_uuid == candidates.front()->uuid && room.slices == 0 && room.fenced.empty() &&
                        room.gpu.memory_total >= request.memory_bytes;
      if (fits && (!smallest || room.gpu.memory_total < smallest->gpu.memory_total)) smallest = room;
    }
    if (smallest) {
      CreateRequest on_instance = request;
      ClearPlacement(on_instance, smallest->gpu.uuid);
      on_instance.wait = false;
      Result<QueueStatus> placed = slices_->CreateOrQueue(on_instance, peer);
      if (placed.ok() || placed.status().code() != StatusCode::kResourceExhausted) return placed;
      refusal = placed.status();
    }
  }
  const std::optional<NewInstance> where = NewInstanceFor(request, candidates);
  if (!where) {
    if (request.wait) return slices_->CreateOrQueue(request, peer);  // waits for an instance to empty
    return Status::ResourceExhausted(refusal.message() + "; and no dynamic MIG GPU has room for an instance of " +
                                     FormatByteSize(request.memory_bytes));
  }
  return MakeAndCreateLocked(*where, std::move(request), peer);
}

Result<QueueStatus> MigManager::CreateOnProfileLocked(CreateRequest request, const net::Peer& peer) {
  const std::string profile_name = *request.mig_profile;
  std::vector<const GpuState*> gpus;  // the MIG GPUs the request may use
  const std::vector<GpuRoom> rooms = slices_->Rooms();
  for (const GpuRoom& room : rooms) {
    if (!room.gpu.parent_uuid.empty() || room.gpu.isolation != IsolationClass::kMig) continue;
    if (!request.gpu || Names(room.gpu, *request.gpu)) gpus.push_back(&room.gpu);
  }
  if (gpus.empty()) {
    return request.gpu ? Status::NotFound("no GPU in MIG mode named '" + *request.gpu + "' (name the GPU, not an instance)")
                       : Status::NotFound("this machine has no GPU in MIG mode");
  }
  if (request.mig_start && !request.gpu) return Status::InvalidArgument("mig_start names a placement: name its GPU too");
  Status refusal = Status::ResourceExhausted("no free " + profile_name + " instance");
  for (const GpuState* gpu : gpus) {
    const mig::ModelInfo* model = mig::ModelOfProduct(gpu->name, gpu->memory_total);
    const mig::Profile* profile = model != nullptr ? mig::FindProfileByName(*model, profile_name) : nullptr;
    if (profile == nullptr) {
      refusal = Status::InvalidArgument("no MIG profile '" + profile_name + "' on GPU " + gpu->uuid + " (" + gpu->name + ")");
      continue;
    }
    if (request.memory_bytes > profile->memory_bytes) {
      return Status::ResourceExhausted("a " + profile_name + " instance has " + FormatByteSize(profile->memory_bytes) +
                                       "; the request asks " + FormatByteSize(request.memory_bytes));
    }
    // An instance of the profile there already (at the start named, or any free one).
    for (const GpuRoom& room : rooms) {
      const GpuState& instance = room.gpu;
      if (instance.parent_uuid != gpu->uuid || instance.mig_profile != profile_name) continue;
      if (request.mig_start ? instance.mig_start != *request.mig_start : (room.slices > 0 || !room.fenced.empty())) continue;
      CreateRequest on_instance = request;
      ClearPlacement(on_instance, instance.uuid);
      Result<QueueStatus> placed = slices_->CreateOrQueue(on_instance, peer);
      if (placed.ok() || request.mig_start || placed.status().code() != StatusCode::kResourceExhausted) return placed;
      refusal = placed.status();
    }
    const bool dynamic = std::any_of(dynamic_.begin(), dynamic_.end(), [&](const GpuState& d) { return d.uuid == gpu->uuid; });
    if (!dynamic) {
      if (request.mig_start) {
        return Status::ResourceExhausted("GPU " + gpu->uuid + " has no " + profile_name + " instance at memory slice " +
                                         std::to_string(*request.mig_start) + " (its geometry is the configuration's)");
      }
      continue;
    }
    const GpuState* dynamic_gpu = FindMigGpuLocked(gpu->uuid);
    Result<std::vector<MigInstance>> instances = nvml_->MigInstances(gpu->uuid);
    if (!instances.ok()) return instances.status();
    const std::vector<mig::Placed> current = PlacedOf(*instances);
    std::optional<int> start = request.mig_start;
    if (!start) start = ChoosePlacement(*model, *profile, current);
    if (!start) continue;
    if (!OccupancyOf(*model, current, *profile).Admits(*profile, *start)) {
      return Status::ResourceExhausted(Where(*profile, *start, *gpu) + " cannot be made: " +
                                       (profile->CanStartAt(*start) ? "it overlaps an instance the GPU has"
                                                                    : "the profile cannot start there"));
    }
    return MakeAndCreateLocked({dynamic_gpu, profile, *start}, std::move(request), peer);
  }
  if (request.wait) {
    return Status::InvalidArgument("a request naming mig_profile does not wait: no " + profile_name + " instance can be had now");
  }
  return refusal;
}

std::optional<MigManager::NewInstance> MigManager::NewInstanceFor(const CreateRequest& request,
                                                                  const std::vector<const GpuState*>& candidates) const {
  std::optional<NewInstance> best;
  int best_used = -1;
  for (const GpuState* gpu : candidates) {
    const mig::ModelInfo* model = mig::ModelOfProduct(gpu->name, gpu->memory_total);
    Result<std::vector<MigInstance>> instances = nvml_->MigInstances(gpu->uuid);
    if (model == nullptr || !instances.ok()) continue;
    const std::vector<mig::Placed> current = PlacedOf(*instances);
    int used = 0;
    for (const MigInstance& instance : *instances) used += instance.size;
    // The smallest profile (no media extensions: those are asked for by name) that holds it.
    const mig::Profile* chosen = nullptr;
    std::optional<int> start;
    for (const mig::Profile& profile : model->profiles) {
      if (profile.media || profile.memory_bytes < request.memory_bytes) continue;
      if (chosen != nullptr && profile.memory_bytes >= chosen->memory_bytes &&
          !(profile.memory_bytes == chosen->memory_bytes && profile.compute_slices < chosen->compute_slices)) {
        continue;
      }
      if (std::optional<int> at = ChoosePlacement(*model, profile, current)) {
        chosen = &profile;
        start = at;
      }
    }
    if (chosen == nullptr) continue;
    // Smallest instance first, then the fullest GPU (packing keeps whole GPUs free).
    const bool better = !best || chosen->memory_bytes < best->profile->memory_bytes ||
                        (chosen->memory_bytes == best->profile->memory_bytes && used > best_used);
    if (better) {
      best = NewInstance{gpu, chosen, *start};
      best_used = used;
    }
  }
  return best;
}

Result<QueueStatus> MigManager::MakeAndCreateLocked(const NewInstance& where, CreateRequest request,
                                                    const net::Peer& peer) {
  const GpuState& gpu = *where.gpu;
  const std::string what = Where(*where.profile, where.start, gpu);
  if (Status made = nvml_->CreateMigInstance(gpu.uuid, *where.profile, where.start); !made.ok()) {
    return Status::ResourceExhausted(what + " cannot be made: " + made.message());
  }
  Log(LogLevel::kInfo, "mig", {{"gpu", gpu.uuid}, {"step", "made " + what + " for a request"}});
  Result<std::vector<GpuState>> instances = InstancesOf(*nvml_, gpu);
  if (!instances.ok()) return instances.status();
  const auto made = std::find_if(instances->begin(), instances->end(), [&](const GpuState& instance) {
    return instance.mig_profile == where.profile->name && instance.mig_start == where.start;
  });
  if (made == instances->end()) return Status::Internal(what + " was made but NVML does not list it");
  const std::string uuid = made->uuid;
  if (on_instances_) on_instances_(*instances);
  if (Status bound = slices_->SetMigInstances(gpu.uuid, *instances); !bound.ok()) {
    ReapLocked(gpu);
    return bound;
  }
  CreateRequest on_instance = request;
  ClearPlacement(on_instance, uuid);
  on_instance.wait = false;  // the instance is free now: a refusal is the quota's or the queue's
  Result<QueueStatus> placed = slices_->CreateOrQueue(on_instance, peer);
  if (!placed.ok()) {
    ReapLocked(gpu);  // the instance made for it goes with it
    if (request.wait && !request.mig_profile && placed.status().code() == StatusCode::kResourceExhausted) {
      return slices_->CreateOrQueue(request, peer);
    }
  }
  return placed;
}

void MigManager::ReapLocked(const GpuState& gpu) {
  Result<std::vector<MigInstance>> instances = nvml_->MigInstances(gpu.uuid);
  Result<std::vector<GpuState>> targets = InstancesOf(*nvml_, gpu);
  if (!instances.ok() || !targets.ok()) return;
  std::vector<std::string> busy;
  for (const GpuRoom& room : slices_->Rooms()) {
    if (room.gpu.parent_uuid == gpu.uuid && room.slices > 0) busy.push_back(room.gpu.uuid);
  }
  const auto held = [&](const std::string& uuid) {
    return std::find(busy.begin(), busy.end(), uuid) != busy.end();
  };
  std::vector<GpuState> kept;
  for (const GpuState& target : *targets) {
    if (held(target.uuid)) kept.push_back(target);
  }
  if (kept.size() == instances->size()) return;  // every instance holds a slice
  // Out of placement first; refused when a slice was placed on one meanwhile (the next tick sees it).
  if (!slices_->SetMigInstances(gpu.uuid, kept).ok()) return;
  const mig::ModelInfo* model = mig::ModelOfProduct(gpu.name, gpu.memory_total);
  for (const MigInstance& instance : *instances) {
    if (!instance.uuid.empty() && held(instance.uuid)) continue;
    if (Status destroyed = nvml_->DestroyMigInstance(gpu.uuid, instance.gpu_instance_id); !destroyed.ok()) {
      Log(LogLevel::kWarn, "mig", {{"gpu", gpu.uuid}, {"reason", "cannot destroy an empty instance: " + destroyed.message()}});
      continue;
    }
    const mig::Profile* profile = model != nullptr ? mig::FindProfile(*model, instance.profile_id) : nullptr;
    Log(LogLevel::kInfo, "mig",
        {{"gpu", gpu.uuid},
         {"step", "destroyed the empty " + std::string(profile != nullptr ? profile->name : "unknown") +
                      " instance at memory slice " + std::to_string(instance.start)}});
  }
}

}  // namespace fgpu::agent
