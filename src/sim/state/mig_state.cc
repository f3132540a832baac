// MIG: the pure rules of mig_state.h and SharedDevices' MIG methods over the segment's
// MigDevice blocks. Every change happens under the segment mutex and becomes visible through
// one store of a slot's state word (written last when creating, first when destroying), so a
// process killed mid-change leaves either the old or the new configuration.
#include "sim/state/mig_state.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "sim/state/fnv1a.h"
#include "sim/state/shared_devices.h"
#include "sim/state/shared_devices_impl.h"

namespace fgpu::sim {

using layout::kMigFree;
using layout::kMigLive;
using layout::kMigSlots;
using layout::MigComputeSlot;
using layout::MigDevice;
using layout::MigGpuSlot;

// ---- pure rules ------------------------------------------------------------------------

const ComputeInstanceState* GpuInstanceState::FindCompute(uint32_t ci_id) const {
  for (const ComputeInstanceState& ci : compute) {
    if (ci.id == ci_id) return &ci;
  }
  return nullptr;
}

const GpuInstanceState* MigSnapshot::FindGpu(uint32_t gi_id) const {
  for (const GpuInstanceState& gi : gpu_instances) {
    if (gi.id == gi_id) return &gi;
  }
  return nullptr;
}

int ComputeProfileSlices(uint32_t profile) {
  // NVML_COMPUTE_INSTANCE_PROFILE_1/2/3/4/7/8/6_SLICE are 0..6; 1_SLICE_REV1 (7, a 1c with
  // the GI's media engines) is not modelled.
  constexpr std::array<int, kComputeProfileCount> kSlices{1, 2, 3, 4, 7, 8, 6, 0};
  return profile < kSlices.size() ? kSlices[profile] : 0;
}

int DriverStart(const mig::Profile& profile, uint8_t occupied, bool media_used, int count) {
  for (int start = mig::kMemorySlices - 1; start >= 0; --start) {
    if (mig::Fits(profile, start, occupied, media_used, count)) return start;
  }
  return -1;
}

int ComputeProfileOfSlices(int slices) {
  for (uint32_t profile = 0; profile < kComputeProfileCount; ++profile) {
    if (ComputeProfileSlices(profile) == slices) return static_cast<int>(profile);
  }
  return -1;
}

Result<std::vector<std::pair<const mig::Profile*, int>>> PlaceMigList(const mig::ModelInfo& model,
                                                                      const std::vector<std::string>& names) {
  if (names.size() > static_cast<size_t>(mig::kComputeSlices)) {
    return Status::InvalidArgument("at most 7 GPU instances fit on a GPU, not " + std::to_string(names.size()));
  }
  std::vector<std::pair<const mig::Profile*, int>> placed;
  uint8_t occupied = 0;
  bool media = false;
  for (const std::string& name : names) {
    const mig::Profile* profile = mig::FindProfileByName(model, name);
    if (profile == nullptr) {
      return Status::InvalidArgument("'" + name + "' is not a MIG profile of the " + std::string(model.name));
    }
    const auto count = static_cast<int>(
        std::count_if(placed.begin(), placed.end(), [&](const auto& p) { return p.first == profile; }));
    const int chosen = DriverStart(*profile, occupied, media, count);
    if (chosen < 0) return Status::InvalidArgument("'" + name + "' does not fit beside the instances before it");
    occupied |= profile->Occupies(chosen);
    media = media || profile->media;
    placed.emplace_back(profile, chosen);
  }
  return placed;
}

bool ComputeInstanceCanStartAt(int slices, int start, int gi_slices) {
  if (slices <= 0 || start < 0 || start + slices > gi_slices) return false;
  int alignment = 1;
  while (alignment < slices) alignment *= 2;
  return start % alignment == 0;
}

int ComputeInstanceSms(const mig::ModelInfo& model, const mig::Profile& gi, int slices) {
  if (slices >= gi.compute_slices) return gi.sms;
  for (const mig::Profile& profile : model.profiles) {
    if (profile.compute_slices == slices && !profile.media) return std::min(profile.sms, gi.sms);
  }
  return gi.sms * slices / gi.compute_slices;
}

namespace {

uint64_t Digest(std::string_view text, uint64_t seed) {
  Fnv1a hash(seed);
  hash.Add(text.data(), text.size());
  return hash.value();
}

}  // namespace

std::string MigUuid(std::string_view parent_uuid, uint32_t gi_id, uint32_t ci_id) {
  const std::string key = std::string(parent_uuid) + "/" + std::to_string(gi_id) + "/" + std::to_string(ci_id);
  const uint64_t high = Digest(key, Fnv1a::kOffsetBasis);
  const uint64_t low = Digest(key, high ^ 0x9e3779b97f4a7c15ull);
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "MIG-%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(high >> 32),
                static_cast<unsigned>((high >> 16) & 0xffff), static_cast<unsigned>(high & 0xffff),
                static_cast<unsigned>(low >> 48), static_cast<unsigned long long>(low & 0xffffffffffffull));
  return buffer;
}

std::string MigDeviceName(std::string_view parent_name, const mig::Profile& gi, int ci_slices) {
  std::string name = std::string(parent_name) + " MIG ";
  if (ci_slices < gi.compute_slices) name += std::to_string(ci_slices) + "c.";
  return name + std::string(gi.name);
}

// ---- segment helpers -------------------------------------------------------------------

namespace {

const mig::Profile* ProfileOf(const mig::ModelInfo* model, const MigGpuSlot& slot) {
  return model == nullptr ? nullptr : mig::FindProfile(*model, slot.profile_id);
}

MigGpuSlot* FindGpuSlot(MigDevice& mig, uint32_t gi_id) {
  for (MigGpuSlot& slot : mig.gpu) {
    if (slot.state == kMigLive && slot.id == gi_id) return &slot;
  }
  return nullptr;
}

// The lowest id no live slot of `slots` uses, from `first`.
template <typename Slot, size_t N>
uint32_t FreeId(const Slot (&slots)[N], uint32_t first) {
  for (uint32_t id = first;; ++id) {
    const bool taken = std::any_of(std::begin(slots), std::end(slots),
                                   [&](const Slot& s) { return s.state == kMigLive && s.id == id; });
    if (!taken) return id;
  }
}

template <typename Slot, size_t N>
Slot* FreeSlot(Slot (&slots)[N]) {
  for (Slot& slot : slots) {
    if (slot.state != kMigLive) return &slot;
  }
  return nullptr;
}

}  // namespace

// ---- Impl (lock held) --------------------------------------------------------------------

void SharedDevices::Impl::RepairMig() {
  for (size_t d = 0; d < config.devices.size(); ++d) {
    MigDevice& mig = mapping.device(static_cast<int>(d)).mig;
    const mig::ModelInfo* model = mig::ModelOfProduct(config.devices[d].name, config.devices[d].total_bytes);
    for (MigGpuSlot& gi : mig.gpu) {
      if (gi.state != kMigLive || ProfileOf(model, gi) == nullptr) {
        gi.state = kMigFree;
        continue;
      }
      for (MigComputeSlot& ci : gi.compute) {
        if (ci.state != kMigLive) ci.state = kMigFree;
      }
    }
  }
}

int SharedDevices::Impl::BoundProcesses(int device, uint32_t gi_id, uint32_t ci_id) const {
  int count = 0;
  for (int i = 0; i < layout::kSlotCount; ++i) {
    const layout::ProcessSlot& slot = mapping.slot(i);
    if (slot.state != layout::kSlotLive || slot.mig_device_plus1 != static_cast<uint32_t>(device) + 1) continue;
    if (gi_id != kAnyInstance && slot.mig_gpu_instance != gi_id) continue;
    if (ci_id != kAnyInstance && slot.mig_compute_instance != ci_id) continue;
    ++count;
  }
  return count;
}

bool SharedDevices::Impl::FitsInBoundInstance(int device, uint64_t bytes) {
  const layout::ProcessSlot& own = mapping.slot(own_slot);
  if (own.mig_device_plus1 != static_cast<uint32_t>(device) + 1) return true;
  const mig::ModelInfo* model = mig::ModelOfProduct(config.devices[device].name, config.devices[device].total_bytes);
  MigGpuSlot* gi = FindGpuSlot(mapping.device(device).mig, own.mig_gpu_instance);
  const mig::Profile* profile = gi == nullptr ? nullptr : ProfileOf(model, *gi);
  if (profile == nullptr) return false;  // the instance is gone: nothing can be allocated on it
  uint64_t used = 0;
  for (int i = 0; i < layout::kSlotCount; ++i) {
    const layout::ProcessSlot& slot = mapping.slot(i);
    if (slot.state == layout::kSlotLive && slot.mig_device_plus1 == own.mig_device_plus1 &&
        slot.mig_gpu_instance == own.mig_gpu_instance) {
      used += slot.charged[device];
    }
  }
  return used <= profile->memory_bytes && profile->memory_bytes - used >= bytes;
}

// ---- SharedDevices -----------------------------------------------------------------------

const mig::ModelInfo* SharedDevices::MigModel(int device) const {
  if (!impl_->ValidDevice(device)) return nullptr;
  const DeviceSpec& spec = impl_->config.devices[device];
  return mig::ModelOfProduct(spec.name, spec.total_bytes);
}

MigSnapshot SharedDevices::Mig(int device) {
  MigSnapshot snapshot;
  snapshot.model = MigModel(device);
  if (snapshot.model == nullptr) return snapshot;
  Impl::Guard guard(*impl_);
  if (!guard.held()) return snapshot;
  const MigDevice& mig = impl_->mapping.device(device).mig;
  snapshot.enabled = mig.current_mode != 0;
  snapshot.pending_enabled = mig.pending_mode != 0;
  for (const MigGpuSlot& slot : mig.gpu) {
    const mig::Profile* profile = ProfileOf(snapshot.model, slot);
    if (slot.state != kMigLive || profile == nullptr) continue;
    GpuInstanceState gi;
    gi.id = slot.id;
    gi.profile_id = slot.profile_id;
    gi.start = static_cast<int>(slot.start);
    gi.size = profile->memory_slices;
    for (const MigComputeSlot& ci : slot.compute) {
      if (ci.state != kMigLive) continue;
      gi.compute.push_back({ci.id, ci.profile, static_cast<int>(ci.start), static_cast<int>(ci.size)});
    }
    std::sort(gi.compute.begin(), gi.compute.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
    snapshot.gpu_instances.push_back(std::move(gi));
  }
  std::sort(snapshot.gpu_instances.begin(), snapshot.gpu_instances.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  return snapshot;
}

MigResult SharedDevices::SetMigMode(int device, bool enable) {
  if (MigModel(device) == nullptr) return MigResult::kNotSupported;
  Impl::Guard guard(*impl_);
  if (!guard.held()) return MigResult::kUnavailable;
  MigDevice& mig = impl_->mapping.device(device).mig;
  const uint32_t wanted = enable ? 1 : 0;
  if (!enable && std::any_of(std::begin(mig.gpu), std::end(mig.gpu),
                             [](const MigGpuSlot& gi) { return gi.state == kMigLive; })) {
    return MigResult::kInUse;  // the instances must be destroyed first
  }
  mig.pending_mode = wanted;
  if (mig.current_mode == wanted) return MigResult::kOk;
  impl_->Reap();
  for (int i = 0; i < layout::kSlotCount; ++i) {
    const layout::ProcessSlot& slot = impl_->mapping.slot(i);
    if (slot.state == layout::kSlotLive && slot.charged[device] > 0) return MigResult::kInUse;
  }
  if (impl_->BoundProcesses(device, Impl::kAnyInstance, Impl::kAnyInstance) > 0) return MigResult::kInUse;
  mig.current_mode = wanted;
  return MigResult::kOk;
}

MigResult SharedDevices::CreateGpuInstance(int device, uint32_t profile_id, int start, uint32_t* gi_id) {
  const mig::ModelInfo* model = MigModel(device);
  if (model == nullptr) return MigResult::kNotSupported;
  const mig::Profile* profile = mig::FindProfile(*model, profile_id);
  if (profile == nullptr) return MigResult::kInvalidArgument;
  if (start >= 0 && !profile->CanStartAt(start)) return MigResult::kInvalidArgument;
  Impl::Guard guard(*impl_);
  if (!guard.held()) return MigResult::kUnavailable;
  MigDevice& mig = impl_->mapping.device(device).mig;
  if (mig.current_mode == 0) return MigResult::kNotSupported;
  uint8_t occupied = 0;
  bool media_used = false;
  int count = 0;
  for (const MigGpuSlot& slot : mig.gpu) {
    const mig::Profile* other = ProfileOf(model, slot);
    if (slot.state != kMigLive || other == nullptr) continue;
    occupied |= other->Occupies(static_cast<int>(slot.start));
    media_used = media_used || other->media;
    if (other->id == profile_id) ++count;
  }
  const int chosen = start >= 0 ? (mig::Fits(*profile, start, occupied, media_used, count) ? start : -1)
                                 : DriverStart(*profile, occupied, media_used, count);
  MigGpuSlot* slot = FreeSlot(mig.gpu);
  if (chosen < 0 || slot == nullptr) return MigResult::kInsufficientResources;
  slot->id = FreeId(mig.gpu, 1);
  slot->profile_id = profile_id;
  slot->start = static_cast<uint32_t>(chosen);
  for (MigComputeSlot& ci : slot->compute) ci.state = kMigFree;
  OrderStores();  // the instance exists only once it is fully written
  slot->state = kMigLive;
  *gi_id = slot->id;
  return MigResult::kOk;
}

MigResult SharedDevices::DestroyGpuInstance(int device, uint32_t gi_id) {
  if (MigModel(device) == nullptr) return MigResult::kNotSupported;
  Impl::Guard guard(*impl_);
  if (!guard.held()) return MigResult::kUnavailable;
  MigGpuSlot* slot = FindGpuSlot(impl_->mapping.device(device).mig, gi_id);
  if (slot == nullptr) return MigResult::kNotFound;
  if (std::any_of(std::begin(slot->compute), std::end(slot->compute),
                  [](const MigComputeSlot& ci) { return ci.state == kMigLive; })) {
    return MigResult::kInUse;
  }
  impl_->Reap();
  if (impl_->BoundProcesses(device, gi_id, Impl::kAnyInstance) > 0) return MigResult::kInUse;
  slot->state = kMigFree;
  return MigResult::kOk;
}

MigResult SharedDevices::CreateComputeInstance(int device, uint32_t gi_id, uint32_t profile, int start,
                                               uint32_t* ci_id) {
  const mig::ModelInfo* model = MigModel(device);
  if (model == nullptr) return MigResult::kNotSupported;
  const int slices = ComputeProfileSlices(profile);
  if (slices == 0) return MigResult::kInvalidArgument;
  Impl::Guard guard(*impl_);
  if (!guard.held()) return MigResult::kUnavailable;
  MigGpuSlot* gi = FindGpuSlot(impl_->mapping.device(device).mig, gi_id);
  const mig::Profile* gi_profile = gi == nullptr ? nullptr : ProfileOf(model, *gi);
  if (gi_profile == nullptr) return MigResult::kNotFound;
  if (slices > gi_profile->compute_slices) return MigResult::kNotSupported;  // the profile does not exist here
  if (start >= 0 && !ComputeInstanceCanStartAt(slices, start, gi_profile->compute_slices)) {
    return MigResult::kInvalidArgument;
  }
  uint32_t occupied = 0;
  for (const MigComputeSlot& ci : gi->compute) {
    if (ci.state == kMigLive) occupied |= ((1U << ci.size) - 1U) << ci.start;
  }
  int chosen = -1;
  for (int s = start >= 0 ? start : 0; s < (start >= 0 ? start + 1 : gi_profile->compute_slices); ++s) {
    const uint32_t mask = ((1U << slices) - 1U) << s;
    if (ComputeInstanceCanStartAt(slices, s, gi_profile->compute_slices) && (mask & occupied) == 0) {
      chosen = s;
      break;
    }
  }
  MigComputeSlot* slot = FreeSlot(gi->compute);
  if (chosen < 0 || slot == nullptr) return MigResult::kInsufficientResources;
  slot->id = FreeId(gi->compute, 0);
  slot->profile = profile;
  slot->start = static_cast<uint32_t>(chosen);
  slot->size = static_cast<uint32_t>(slices);
  OrderStores();  // the instance exists only once it is fully written
  slot->state = kMigLive;
  *ci_id = slot->id;
  return MigResult::kOk;
}

MigResult SharedDevices::DestroyComputeInstance(int device, uint32_t gi_id, uint32_t ci_id) {
  if (MigModel(device) == nullptr) return MigResult::kNotSupported;
  Impl::Guard guard(*impl_);
  if (!guard.held()) return MigResult::kUnavailable;
  MigGpuSlot* gi = FindGpuSlot(impl_->mapping.device(device).mig, gi_id);
  if (gi == nullptr) return MigResult::kNotFound;
  for (MigComputeSlot& ci : gi->compute) {
    if (ci.state != kMigLive || ci.id != ci_id) continue;
    impl_->Reap();
    if (impl_->BoundProcesses(device, gi_id, ci_id) > 0) return MigResult::kInUse;
    ci.state = kMigFree;
    return MigResult::kOk;
  }
  return MigResult::kNotFound;
}

bool SharedDevices::BindMigInstance(int device, uint32_t gi_id, uint32_t ci_id) {
  if (MigModel(device) == nullptr) return false;
  Impl::Guard guard(*impl_);
  if (!guard.held() || !impl_->EnsureOwnSlot()) return false;
  MigGpuSlot* gi = FindGpuSlot(impl_->mapping.device(device).mig, gi_id);
  if (gi == nullptr || std::none_of(std::begin(gi->compute), std::end(gi->compute), [&](const MigComputeSlot& ci) {
        return ci.state == kMigLive && ci.id == ci_id;
      })) {
    return false;
  }
  layout::ProcessSlot& own = impl_->mapping.slot(impl_->own_slot);
  own.mig_gpu_instance = gi_id;
  own.mig_compute_instance = ci_id;
  OrderStores();  // the binding counts only once it names the instance
  own.mig_device_plus1 = static_cast<uint32_t>(device) + 1;
  return true;
}

MemoryInfo SharedDevices::GpuInstanceMemory(int device, uint32_t gi_id) {
  MemoryInfo info;
  const mig::ModelInfo* model = MigModel(device);
  if (model == nullptr) return info;
  Impl::Guard guard(*impl_);
  if (!guard.held()) return info;
  MigGpuSlot* gi = FindGpuSlot(impl_->mapping.device(device).mig, gi_id);
  const mig::Profile* profile = gi == nullptr ? nullptr : ProfileOf(model, *gi);
  if (profile == nullptr) return info;
  impl_->Reap();
  info.total = profile->memory_bytes;
  for (int i = 0; i < layout::kSlotCount; ++i) {
    const layout::ProcessSlot& slot = impl_->mapping.slot(i);
    if (slot.state == layout::kSlotLive && slot.mig_device_plus1 == static_cast<uint32_t>(device) + 1 &&
        slot.mig_gpu_instance == gi_id) {
      info.used += slot.charged[device];
    }
  }
  info.used = std::min(info.used, info.total);
  info.free = info.total - info.used;
  return info;
}

}  // namespace fgpu::sim
