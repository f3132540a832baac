#include "agent/mig_setup.h"

#include <algorithm>
#include <set>

#include "agent/log.h"
#include "sched/mig/catalog.h"

namespace fgpu::agent {
namespace {

std::string ProfileNames(const mig::ModelInfo& model) {
  std::string text;
  for (const mig::Profile& profile : model.profiles)
    text += (text.empty() ? "" : ", ") + std::string(profile.name);
  return text;
}

std::string_view NameOf(const mig::ModelInfo& model, uint32_t profile_id) {
  const mig::Profile* profile = mig::FindProfile(model, profile_id);
  return profile != nullptr ? profile->name : std::string_view("an unknown profile");
}

Result<size_t> Resolve(std::span<const GpuState> gpus, const std::string& selector) {
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i].uuid == selector || std::to_string(gpus[i].index) == selector) return i;
  }
  return Status::InvalidArgument("gpus: no GPU '" + selector + "' on this machine");
}

GpuState TargetOf(const GpuState& gpu, const mig::ModelInfo& model, const MigInstance& instance) {
  GpuState target;
  target.index = gpu.index;
  target.uuid = instance.uuid;
  target.name = instance.name;
  target.memory_total = instance.memory_total;
  target.memory_used = instance.memory_used;
  target.compute_capability = gpu.compute_capability;
  target.driver_version = gpu.driver_version;
  target.minor = gpu.minor;
  target.isolation = IsolationClass::kMig;
  target.parent_uuid = gpu.uuid;
  target.mig_profile = std::string(NameOf(model, instance.profile_id));
  target.mig_start = instance.start;
  return target;
}

// A MIG GPU: the mode on (or why not), its instances as targets.
Result<std::vector<GpuState>> SetUpMigGpu(const NvmlClient& nvml, GpuState& gpu) {
  if (mig::ModelOfProduct(gpu.name, gpu.memory_total) == nullptr) {
    return Status::InvalidArgument("gpus: GPU " + gpu.uuid + " (" + gpu.name + ") has no MIG; it cannot be of the mig class");
  }
  Result<MigMode> mode = nvml.GetMigMode(gpu.uuid);
  if (!mode.ok()) return Status::InvalidArgument("gpus: GPU " + gpu.uuid + ": " + mode.status().message());
  if (!mode->current) {
    Result<bool> enabled = nvml.EnableMig(gpu.uuid);
    if (!enabled.ok()) {
      gpu.mig_note = enabled.status().message();
      return std::vector<GpuState>();
    }
    if (!*enabled) {
      gpu.mig_note = "MIG mode is pending until the GPU is idle (or reset); restart the agent then";
      return std::vector<GpuState>();
    }
    Log(LogLevel::kInfo, "mig", {{"gpu", gpu.uuid}, {"step", "MIG mode on"}});
  }
  Result<std::vector<GpuState>> instances = InstancesOf(nvml, gpu);
  if (!instances.ok()) {
    gpu.mig_note = instances.status().message();
    return std::vector<GpuState>();
  }
  return instances;
}

}  // namespace

Result<TargetChoice> ChooseTarget(const mig::ModelInfo& model, std::span<const std::string> profiles,
                                  std::span<const mig::Placed> current, const BusyReason& busy) {
  const sched::mig::Catalog& catalog = sched::mig::Catalog::Of(model);
  std::array<uint8_t, sched::mig::kProfilesPerModel> wanted{};
  for (const std::string& name : profiles) {
    const mig::Profile* profile = mig::FindProfileByName(model, name);
    if (profile == nullptr) {
      return Status::InvalidArgument("no MIG profile '" + name + "' on the " + std::string(model.name) + " (it has " +
                                     ProfileNames(model) + ")");
    }
    ++wanted[static_cast<size_t>(catalog.IndexOf(profile->id))];
  }
  std::vector<bool> busy_at;
  for (size_t i = 0; i < current.size(); ++i) busy_at.push_back(busy && !busy(i).empty());
  const sched::mig::Geometry* best = nullptr;
  std::pair<int, int> best_kept{-1, -1};  // busy instances kept, then all kept
  for (const sched::mig::Geometry& geometry : catalog.geometries()) {
    if (geometry.count != wanted) continue;
    std::pair<int, int> kept{0, 0};
    for (size_t i = 0; i < current.size(); ++i) {
      if (std::find(geometry.instances.begin(), geometry.instances.end(), current[i]) == geometry.instances.end()) continue;
      kept.first += busy_at[i] ? 1 : 0;
      ++kept.second;
    }
    if (best == nullptr || kept > best_kept) {
      best = &geometry;
      best_kept = kept;
    }
  }
  if (best == nullptr) {
    return Status::InvalidArgument(JoinProfiles(profiles) + " cannot share one " + std::string(model.name) +
                                   " (no valid placement holds them together)");
  }
  TargetChoice choice{best->instances, {}};
  for (size_t i = 0; i < current.size(); ++i) {
    const bool kept = std::find(best->instances.begin(), best->instances.end(), current[i]) != best->instances.end();
    if (busy_at[i] && !kept) choice.displaced.push_back(i);
  }
  return choice;
}

Result<std::vector<GpuState>> InstancesOf(const NvmlClient& nvml, const GpuState& gpu) {
  const mig::ModelInfo* model = mig::ModelOfProduct(gpu.name, gpu.memory_total);
  if (model == nullptr) return Status::InvalidArgument("GPU " + gpu.uuid + " (" + gpu.name + ") has no MIG");
  Result<std::vector<MigInstance>> instances = nvml.MigInstances(gpu.uuid);
  if (!instances.ok()) return instances.status();
  std::vector<GpuState> targets;
  for (const MigInstance& instance : *instances) {
    if (!instance.uuid.empty()) targets.push_back(TargetOf(gpu, *model, instance));
  }
  return targets;
}

namespace {

// The room a GPU keeps for what comes later: every placement still open, weighted by its size.
int OpenRoom(const mig::ModelInfo& model, uint8_t occupied, bool media_used) {
  int room = 0;
  for (const mig::Profile& profile : model.profiles) {
    for (int start = 0; start < mig::kMemorySlices; ++start) {
      if (mig::Fits(profile, start, occupied, media_used, 0)) room += profile.memory_slices;
    }
  }
  return room;
}

}  // namespace

Occupancy OccupancyOf(const mig::ModelInfo& model, std::span<const mig::Placed> current, const mig::Profile& profile) {
  Occupancy taken;
  for (const mig::Placed& placed : current) {
    const mig::Profile* other = mig::FindProfile(model, placed.profile_id);
    if (other == nullptr) continue;
    taken.occupied |= other->Occupies(placed.start);
    taken.media_used = taken.media_used || other->media;
    taken.count += other->id == profile.id ? 1 : 0;
  }
  return taken;
}

std::optional<int> ChoosePlacement(const mig::ModelInfo& model, const mig::Profile& profile,
                                   std::span<const mig::Placed> current) {
  const Occupancy taken = OccupancyOf(model, current, profile);
  std::optional<int> best;
  int best_room = -1;
  for (int start = mig::kMemorySlices - 1; start >= 0; --start) {  // a tie: the highest start
    if (!taken.Admits(profile, start)) continue;
    const int room = OpenRoom(model, static_cast<uint8_t>(taken.occupied | profile.Occupies(start)),
                              taken.media_used || profile.media);
    if (room > best_room) {
      best = start;
      best_room = room;
    }
  }
  return best;
}

std::string JoinProfiles(std::span<const std::string> profiles) {
  std::string text;
  for (const std::string& name : profiles) text += (text.empty() ? "" : " + ") + name;
  return text;
}

Result<std::vector<GpuState>> SetUpGpus(const NvmlClient& nvml, std::vector<GpuState> gpus,
                                        std::span<const GpuClassConfig> classes) {
  std::set<size_t> named;
  for (const GpuClassConfig& config : classes) {
    Result<size_t> at = Resolve(gpus, config.gpu);
    if (!at.ok()) return at.status();
    if (!named.insert(*at).second) {
      return Status::InvalidArgument("gpus: GPU " + gpus[*at].uuid + " is listed twice (by index and by UUID)");
    }
    gpus[*at].isolation = config.isolation;
    gpus[*at].mig_dynamic = config.dynamic;
    // A geometry that cannot be stops the start before anything on the GPU changes.
    const mig::ModelInfo* model = mig::ModelOfProduct(gpus[*at].name, gpus[*at].memory_total);
    if (model == nullptr || config.mig.empty()) continue;
    if (Result<TargetChoice> valid = ChooseTarget(*model, config.mig, {}, nullptr); !valid.ok()) {
      return Status::InvalidArgument("gpus: GPU " + gpus[*at].uuid + ": " + valid.status().message());
    }
  }
  // A GPU the configuration does not name but an admin put in MIG mode can only be used through
  // its instances: it is of the mig class, its instances kept as they are.
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (named.count(i) != 0 || !gpus[i].mig_capable) continue;
    if (Result<MigMode> mode = nvml.GetMigMode(gpus[i].uuid); mode.ok() && mode->current) {
      gpus[i].isolation = IsolationClass::kMig;
    }
  }
  std::vector<GpuState> targets;
  for (GpuState& gpu : gpus) {
    std::vector<GpuState> instances;
    if (gpu.isolation == IsolationClass::kMig) {
      Result<std::vector<GpuState>> made = SetUpMigGpu(nvml, gpu);
      if (!made.ok()) return made.status();
      instances = std::move(*made);
    }
    targets.push_back(gpu);
    for (GpuState& instance : instances) targets.push_back(std::move(instance));
  }
  return targets;
}

}  // namespace fgpu::agent
