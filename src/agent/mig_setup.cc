#include "agent/mig_setup.h"

#include <algorithm>
#include <map>

#include "agent/log.h"
#include "sched/mig/catalog.h"

namespace fgpu::agent {
namespace {

std::string Joined(std::span<const std::string> names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : " + ") + name;
  return text;
}

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

// Why the slices on `uuid` keep its instance: "holds slice s1" ("" when none is on it).
std::string SlicesOn(std::span<const SliceRecord> slices, const std::string& uuid) {
  std::vector<std::string> ids;
  for (const SliceRecord& slice : slices) {
    if (!uuid.empty() && slice.gpu_uuid == uuid) ids.push_back(slice.id);
  }
  if (ids.empty()) return "";
  std::string text = "holds slice";
  if (ids.size() > 1) text += "s";
  for (size_t i = 0; i < ids.size(); ++i) text += (i == 0 ? " " : ", ") + ids[i];
  return text;
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

// Takes the GPU from `instances` to `target`, destroys first; the first failure is returned.
Status Apply(const NvmlClient& nvml, const GpuState& gpu, const mig::ModelInfo& model,
             std::span<const MigInstance> instances, std::span<const mig::Placed> target) {
  std::vector<sched::mig::Instance> current;
  for (const MigInstance& instance : instances)
    current.push_back({{instance.profile_id, instance.start}, false});
  for (const sched::mig::Step& step : sched::mig::StepsBetween(gpu.index, current, target)) {
    Status done = Status::Ok();
    if (step.kind == sched::mig::Step::Kind::kDestroy) {
      const auto at = std::find_if(instances.begin(), instances.end(), [&](const MigInstance& instance) {
        return instance.start == step.instance.start && instance.profile_id == step.instance.profile_id;
      });
      if (at != instances.end()) done = nvml.DestroyMigInstance(gpu.uuid, at->gpu_instance_id);
    } else if (step.kind == sched::mig::Step::Kind::kCreate) {
      done = nvml.CreateMigInstance(gpu.uuid, *mig::FindProfile(model, step.instance.profile_id),
                                    step.instance.start);
    }
    if (!done.ok()) return done;
    Log(LogLevel::kInfo, "mig", {{"gpu", gpu.uuid}, {"step", step.ToString(model)}});
  }
  return Status::Ok();
}

// A MIG GPU: the mode on, its geometry applied where it may be, its instances as targets.
Result<std::vector<GpuState>> SetUpMigGpu(const NvmlClient& nvml, GpuState& gpu, const GpuClassConfig& config,
                                          std::span<const SliceRecord> slices) {
  const mig::ModelInfo* model = mig::ModelOfProduct(gpu.name, gpu.memory_total);
  if (model == nullptr) {
    return Status::InvalidArgument("gpus: GPU " + gpu.uuid + " (" + gpu.name +
                                   ") has no MIG; it cannot be of the mig class");
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
  Result<std::vector<MigInstance>> instances = nvml.MigInstances(gpu.uuid);
  if (!instances.ok()) {
    gpu.mig_note = instances.status().message();
    return std::vector<GpuState>();
  }
  if (!config.mig.empty()) {
    std::vector<mig::Placed> current;
    std::vector<std::string> reasons;
    for (const MigInstance& instance : *instances) {
      current.push_back({instance.profile_id, instance.start});
      reasons.push_back(SlicesOn(slices, instance.uuid));
    }
    Result<std::vector<mig::Placed>> target =
        ChooseTarget(*model, config.mig, current, [&](size_t i) { return reasons[i]; });
    if (!target.ok() && target.status().code() == StatusCode::kInvalidArgument) {
      return Status::InvalidArgument("gpus: GPU " + gpu.uuid + ": " + target.status().message());
    }
    const Status applied = target.ok() ? Apply(nvml, gpu, *model, *instances, *target)
                                       : Status::ResourceExhausted(target.status().message());
    if (!applied.ok()) {
      gpu.mig_note =
          "the configured geometry (" + Joined(config.mig) + ") is not applied: " + applied.message();
      Log(LogLevel::kWarn, "mig", {{"gpu", gpu.uuid}, {"reason", gpu.mig_note}});
    }
    instances = nvml.MigInstances(gpu.uuid);
    if (!instances.ok()) {
      gpu.mig_note = instances.status().message();
      return std::vector<GpuState>();
    }
  }
  std::vector<GpuState> targets;
  for (const MigInstance& instance : *instances) {
    if (!instance.uuid.empty()) targets.push_back(TargetOf(gpu, *model, instance));
  }
  return targets;
}

}  // namespace

Result<std::vector<mig::Placed>> ChooseTarget(const mig::ModelInfo& model,
                                              std::span<const std::string> profiles,
                                              std::span<const mig::Placed> current, const BusyReason& busy) {
  const sched::mig::Catalog& catalog = sched::mig::Catalog::Of(model);
  std::array<uint8_t, sched::mig::kProfilesPerModel> wanted{};
  for (const std::string& name : profiles) {
    const mig::Profile* profile = mig::FindProfileByName(model, name);
    if (profile == nullptr) {
      return Status::InvalidArgument("no MIG profile '" + name + "' on the " + std::string(model.name) +
                                     " (it has " + ProfileNames(model) + ")");
    }
    ++wanted[static_cast<size_t>(catalog.IndexOf(profile->id))];
  }
  std::vector<std::string> reasons;
  for (size_t i = 0; i < current.size(); ++i) reasons.push_back(busy ? busy(i) : std::string());
  const sched::mig::Geometry* best = nullptr;
  bool best_keeps_busy = false;
  int best_kept = -1;
  for (const sched::mig::Geometry& geometry : catalog.geometries()) {
    if (geometry.count != wanted) continue;
    bool keeps_busy = true;
    int kept = 0;
    for (size_t i = 0; i < current.size(); ++i) {
      const bool stays = std::find(geometry.instances.begin(), geometry.instances.end(), current[i]) !=
                         geometry.instances.end();
      kept += stays ? 1 : 0;
      if (!stays && !reasons[i].empty()) keeps_busy = false;
    }
    if (best == nullptr || (keeps_busy && !best_keeps_busy) ||
        (keeps_busy == best_keeps_busy && kept > best_kept)) {
      best = &geometry;
      best_keeps_busy = keeps_busy;
      best_kept = kept;
    }
  }
  if (best == nullptr) {
    return Status::InvalidArgument(Joined(profiles) + " cannot share one " + std::string(model.name) +
                                   " (no valid placement holds them together)");
  }
  if (!best_keeps_busy) {
    for (size_t i = 0; i < current.size(); ++i) {
      if (reasons[i].empty() ||
          std::find(best->instances.begin(), best->instances.end(), current[i]) != best->instances.end()) {
        continue;
      }
      return Status::ResourceExhausted("the " + std::string(NameOf(model, current[i].profile_id)) +
                                       " instance at memory slice " + std::to_string(current[i].start) + " " +
                                       reasons[i] + " (delete or drain it first)");
    }
  }
  return best->instances;
}

Result<std::vector<GpuState>> SetUpGpus(const NvmlClient& nvml, std::vector<GpuState> gpus,
                                        std::span<const GpuClassConfig> classes,
                                        std::span<const SliceRecord> slices) {
  std::map<size_t, const GpuClassConfig*> class_of;
  for (const GpuClassConfig& config : classes) {
    Result<size_t> at = Resolve(gpus, config.gpu);
    if (!at.ok()) return at.status();
    if (class_of.count(*at) != 0) {
      return Status::InvalidArgument("gpus: GPU " + gpus[*at].uuid +
                                     " is listed twice (by index and by UUID)");
    }
    class_of[*at] = &config;
    gpus[*at].isolation = config.isolation;
  }
  // A GPU the configuration does not name but an admin put in MIG mode can only be used through
  // its instances: it is of the mig class, its instances kept as they are.
  static const GpuClassConfig kKeepInstances{.gpu = "", .isolation = IsolationClass::kMig, .mig = {}};
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (class_of.count(i) != 0 || !gpus[i].mig_capable) continue;
    if (Result<MigMode> mode = nvml.GetMigMode(gpus[i].uuid); mode.ok() && mode->current) {
      class_of[i] = &kKeepInstances;
      gpus[i].isolation = IsolationClass::kMig;
    }
  }
  std::vector<GpuState> targets;
  for (size_t i = 0; i < gpus.size(); ++i) {
    GpuState& gpu = gpus[i];
    std::vector<GpuState> instances;
    if (gpu.isolation == IsolationClass::kMig) {
      Result<std::vector<GpuState>> made = SetUpMigGpu(nvml, gpu, *class_of.at(i), slices);
      if (!made.ok()) return made.status();
      instances = std::move(*made);
    }
    targets.push_back(gpu);
    for (GpuState& instance : instances) targets.push_back(std::move(instance));
  }
  return targets;
}

}  // namespace fgpu::agent
