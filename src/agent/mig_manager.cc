#include "agent/mig_manager.h"

#include <algorithm>

#include "agent/log.h"
#include "agent/mig_setup.h"
#include "sched/mig/planner.h"

namespace fgpu::agent {
namespace {

// "holds slices s1, s2" for the slices on `uuid` ("" when none).
std::string SlicesOn(const std::vector<SliceRecord>& slices, const std::string& uuid) {
  std::vector<std::string> ids;
  for (const SliceRecord& slice : slices) {
    if (!uuid.empty() && slice.gpu_uuid == uuid) ids.push_back(slice.id);
  }
  if (ids.empty()) return "";
  std::string text = ids.size() == 1 ? "holds slice" : "holds slices";
  for (size_t i = 0; i < ids.size(); ++i) text += (i == 0 ? " " : ", ") + ids[i];
  return text;
}

std::string InstanceName(const mig::ModelInfo& model, const MigInstance& instance) {
  const mig::Profile* profile = mig::FindProfile(model, instance.profile_id);
  return "the " + std::string(profile != nullptr ? profile->name : "unknown") + " instance at memory slice " +
         std::to_string(instance.start);
}

const GpuState* FindMigGpu(const std::vector<GpuRoom>& rooms, const std::string& selector) {
  for (const GpuRoom& room : rooms) {
    const GpuState& gpu = room.gpu;
    if (gpu.parent_uuid.empty() && (gpu.uuid == selector || std::to_string(gpu.index) == selector)) return &gpu;
  }
  return nullptr;
}

}  // namespace

void MigManager::Configure(const std::vector<GpuClassConfig>& classes) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Wanted& wanted : pending_) Unfence(wanted);
  pending_.clear();
  const std::vector<GpuRoom> rooms = slices_->Rooms();
  dynamic_.clear();
  for (const GpuRoom& room : rooms) {
    if (room.gpu.mig_dynamic && room.gpu.isolation == IsolationClass::kMig) dynamic_.push_back(room.gpu);
  }
  for (const GpuClassConfig& config : classes) {
    const GpuState* gpu = FindMigGpu(rooms, config.gpu);
    if (gpu == nullptr) continue;  // not on this machine: the agent refused it at start
    if (gpu->isolation != config.isolation || gpu->mig_dynamic != config.dynamic) {
      Log(LogLevel::kWarn, "mig",
          {{"gpu", gpu->uuid}, {"reason", "a GPU's isolation class (and whether its MIG is dynamic) changes only with a restart"}});
      continue;
    }
    if (config.isolation != IsolationClass::kMig || config.mig.empty()) continue;
    Wanted wanted{*gpu, config, {}, {}};
    if (!Advance(wanted)) pending_.push_back(std::move(wanted));
  }
}

void MigManager::Tick() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(pending_, [this](Wanted& wanted) { return Advance(wanted); });
  for (const GpuState& gpu : dynamic_) ReapLocked(gpu);
}

int MigManager::Draining() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(pending_.size());
}

bool MigManager::Advance(Wanted& wanted) {
  const GpuState& gpu = wanted.gpu;
  const mig::ModelInfo* model = mig::ModelOfProduct(gpu.name, gpu.memory_total);
  Result<MigMode> mode = nvml_->GetMigMode(gpu.uuid);
  if (model == nullptr || !mode.ok() || !mode->current) return true;  // its note says why (mig_setup)
  Result<std::vector<MigInstance>> instances = nvml_->MigInstances(gpu.uuid);
  if (!instances.ok()) {
    Note(wanted, instances.status().message(), true);
    return true;
  }
  const std::vector<SliceRecord> slices = slices_->List();
  std::vector<mig::Placed> current;
  std::vector<std::string> reasons;
  for (const MigInstance& instance : *instances) {
    current.push_back({instance.profile_id, instance.start});
    reasons.push_back(SlicesOn(slices, instance.uuid));
  }
  Result<TargetChoice> choice =
      ChooseTarget(*model, wanted.config.mig, current, [&](size_t i) { return reasons[i]; });
  const std::string geometry = JoinProfiles(wanted.config.mig);
  if (!choice.ok()) {
    Note(wanted, "the configured geometry (" + geometry + ") cannot be: " + choice.status().message(), true);
    return true;
  }
  if (!choice->displaced.empty()) {
    std::string in_the_way;
    for (size_t i : choice->displaced) {
      in_the_way += (in_the_way.empty() ? "" : "; ") + InstanceName(*model, (*instances)[i]) + " " + reasons[i];
    }
    if (!wanted.config.drain) {
      Unfence(wanted);
      Note(wanted, "the configured geometry (" + geometry + ") is not applied: " + in_the_way +
                       " (delete or drain it first, or set drain)", true);
      return true;
    }
    // Drain: every instance that goes takes no new slice; the busy ones empty as their work ends.
    for (const MigInstance& instance : *instances) {
      const bool stays = std::find(choice->geometry.begin(), choice->geometry.end(),
                                   mig::Placed{instance.profile_id, instance.start}) != choice->geometry.end();
      if (stays || instance.uuid.empty() ||
          std::find(wanted.fenced.begin(), wanted.fenced.end(), instance.uuid) != wanted.fenced.end()) {
        continue;
      }
      if (slices_->SetFenced(instance.uuid, std::string(kMigDrainFence)).ok()) wanted.fenced.push_back(instance.uuid);
    }
    Note(wanted, "draining for the configured geometry (" + geometry + "): " + in_the_way +
                     "; the instances that go take no new slice, and it is applied once they are empty",
         false);
    return false;
  }
  if (Status applied = Apply(wanted, *model, *instances, choice->geometry); !applied.ok()) {
    // A slice placed between the check and the unbinding: try again at the next tick.
    if (applied.code() == StatusCode::kResourceExhausted && wanted.config.drain) return false;
    Note(wanted, "the configured geometry (" + geometry + ") is not applied: " + applied.message(), true);
    return true;
  }
  wanted.fenced.clear();  // their instances are gone, and their fences with them
  Note(wanted, "", false);
  return true;
}

Status MigManager::Apply(const Wanted& wanted, const mig::ModelInfo& model, const std::vector<MigInstance>& current,
                         const std::vector<mig::Placed>& target) {
  const GpuState& gpu = wanted.gpu;
  std::vector<sched::mig::Instance> now;
  for (const MigInstance& instance : current) now.push_back({{instance.profile_id, instance.start}, false});
  const std::vector<sched::mig::Step> steps = sched::mig::StepsBetween(gpu.index, now, target);
  if (steps.empty()) return Status::Ok();
  // First out of placement: nothing is placed on an instance while it is destroyed.
  Result<std::vector<GpuState>> listed = InstancesOf(*nvml_, gpu);
  if (!listed.ok()) return listed.status();
  std::vector<GpuState> kept;
  for (const GpuState& instance : *listed) {
    const mig::Profile* profile = mig::FindProfileByName(model, instance.mig_profile);
    if (profile != nullptr &&
        std::find(target.begin(), target.end(), mig::Placed{profile->id, instance.mig_start}) != target.end()) {
      kept.push_back(instance);
    }
  }
  if (Status unbound = slices_->SetMigInstances(gpu.uuid, kept); !unbound.ok()) return unbound;
  Status result = Status::Ok();
  for (const sched::mig::Step& step : steps) {
    if (step.kind == sched::mig::Step::Kind::kDestroy) {
      const auto at = std::find_if(current.begin(), current.end(), [&](const MigInstance& instance) {
        return instance.start == step.instance.start && instance.profile_id == step.instance.profile_id;
      });
      if (at != current.end()) result = nvml_->DestroyMigInstance(gpu.uuid, at->gpu_instance_id);
    } else if (step.kind == sched::mig::Step::Kind::kCreate) {
      result = nvml_->CreateMigInstance(gpu.uuid, *mig::FindProfile(model, step.instance.profile_id), step.instance.start);
    }
    if (!result.ok()) break;
    Log(LogLevel::kInfo, "mig", {{"gpu", gpu.uuid}, {"step", step.ToString(model)}});
  }
  // Whatever the GPU has now is placed on, even after a failed step.
  Result<std::vector<GpuState>> after = InstancesOf(*nvml_, gpu);
  if (!after.ok()) return after.status();
  if (on_instances_) on_instances_(*after);
  if (Status bound = slices_->SetMigInstances(gpu.uuid, *after); !bound.ok() && result.ok()) result = bound;
  return result;
}

void MigManager::Unfence(Wanted& wanted) {
  for (const std::string& uuid : wanted.fenced) (void)slices_->SetFenced(uuid, "");
  wanted.fenced.clear();
}

void MigManager::Note(Wanted& wanted, const std::string& note, bool warn) {
  (void)slices_->SetMigNote(wanted.gpu.uuid, note);
  if (note == wanted.noted) return;
  wanted.noted = note;
  if (note.empty()) return;
  Log(warn ? LogLevel::kWarn : LogLevel::kInfo, "mig", {{"gpu", wanted.gpu.uuid}, {"reason", note}});
}

}  // namespace fgpu::agent
