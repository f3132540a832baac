// Exported NVML entry points: Multi-Instance GPU (mode, GPU and compute instances, MIG device
// handles). The rules live in the shared state (sim/state/mig_state.h); here are the NVML
// shapes: profile indices vs ids, struct versions, the count protocols and the privilege check.
//
// Privilege: the real NVML requires root for the mode change and for creating or destroying
// instances (NVML_ERROR_NO_PERMISSION otherwise). The simulator checks geteuid() == 0;
// FGPU_SIM_MIG_PRIVILEGED=1/0 overrides it (tests, unprivileged demos; docs/sim.md).
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/abi/nvml_api.h"
#include "sim/nvml/library.h"
#include "sim/nvml/mig_view.h"

namespace fgpu::sim::nvml {

nvmlReturn_t ViewMigDevice(Session& session, nvmlDevice_t handle, MigDeviceView* view) {
  MigRef ref;
  if (nvmlReturn_t rc = session.ResolveMigDevice(handle, &ref); rc != NVML_SUCCESS) return rc;
  const MigSnapshot snapshot = session.shared().Mig(ref.device);
  const GpuInstanceState* gi = snapshot.FindGpu(ref.gi);
  const ComputeInstanceState* ci = gi == nullptr ? nullptr : gi->FindCompute(ref.ci);
  const mig::Profile* profile = gi == nullptr ? nullptr : mig::FindProfile(*snapshot.model, gi->profile_id);
  if (!snapshot.enabled || ci == nullptr || profile == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  const DeviceSpec& parent = session.shared().spec(ref.device);
  view->ref = ref;
  view->gi_profile = profile;
  view->gi = *gi;
  view->ci = *ci;
  view->name = MigDeviceName(parent.name, *profile, ci->size);
  view->uuid = MigUuid(parent.uuid, ref.gi, ref.ci);
  return NVML_SUCCESS;
}

bool MigEnabled(Session& session, int device) { return session.shared().Mig(device).enabled; }

}  // namespace fgpu::sim::nvml

namespace {

using fgpu::sim::ComputeInstanceCanStartAt;
using fgpu::sim::ComputeInstanceSms;
using fgpu::sim::ComputeInstanceState;
using fgpu::sim::ComputeProfileSlices;
using fgpu::sim::GpuInstanceState;
using fgpu::sim::MigResult;
using fgpu::sim::MigSnapshot;
using fgpu::sim::nvml::CopyOut;
using fgpu::sim::nvml::MigDeviceView;
using fgpu::sim::nvml::MigRef;
using fgpu::sim::nvml::Session;
using fgpu::sim::nvml::ViewMigDevice;
using fgpu::sim::nvml::WithDevice;
using fgpu::sim::nvml::WithSession;
namespace mig = fgpu::mig;

bool CallerIsPrivileged() {
  const char* forced = std::getenv("FGPU_SIM_MIG_PRIVILEGED");
  if (forced != nullptr && *forced != '\0') return std::strcmp(forced, "0") != 0;
  return ::geteuid() == 0;
}

nvmlReturn_t ToNvml(MigResult result) {
  switch (result) {
    case MigResult::kOk: return NVML_SUCCESS;
    case MigResult::kNotSupported: return NVML_ERROR_NOT_SUPPORTED;
    case MigResult::kInvalidArgument: return NVML_ERROR_INVALID_ARGUMENT;
    case MigResult::kInsufficientResources: return NVML_ERROR_INSUFFICIENT_RESOURCES;
    case MigResult::kInUse: return NVML_ERROR_IN_USE;
    case MigResult::kNotFound: return NVML_ERROR_INVALID_ARGUMENT;  // the handle names nothing any more
    case MigResult::kUnavailable: break;
  }
  return NVML_ERROR_UNKNOWN;
}

// A GPU instance handle resolved against the current state: the snapshot, the instance and its
// profile. INVALID_ARGUMENT for a foreign handle or an instance that no longer exists.
struct GpuInstanceView {
  MigRef ref;
  MigSnapshot snapshot;
  const GpuInstanceState* gi = nullptr;
  const mig::Profile* profile = nullptr;
};

nvmlReturn_t ViewGpuInstance(Session& session, nvmlGpuInstance_t handle, GpuInstanceView* view) {
  if (nvmlReturn_t rc = session.ResolveGpuInstance(handle, &view->ref); rc != NVML_SUCCESS) return rc;
  view->snapshot = session.shared().Mig(view->ref.device);
  view->gi = view->snapshot.FindGpu(view->ref.gi);
  if (view->gi == nullptr || view->snapshot.model == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  view->profile = mig::FindProfile(*view->snapshot.model, view->gi->profile_id);
  return view->profile == nullptr ? NVML_ERROR_INVALID_ARGUMENT : NVML_SUCCESS;
}

// The device's MIG model once MIG is enabled: NOT_SUPPORTED for a GPU without MIG or with MIG
// disabled (what the instance APIs answer then).
nvmlReturn_t RequireMigEnabled(const MigSnapshot& snapshot) {
  return snapshot.model != nullptr && snapshot.enabled ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

uint8_t OccupiedMemorySlices(const MigSnapshot& snapshot, bool* media_used, uint32_t profile_id, int* count) {
  uint8_t occupied = 0;
  for (const GpuInstanceState& gi : snapshot.gpu_instances) {
    const mig::Profile* other = mig::FindProfile(*snapshot.model, gi.profile_id);
    if (other == nullptr) continue;
    occupied |= other->Occupies(gi.start);
    *media_used = *media_used || other->media;
    if (gi.profile_id == profile_id) ++*count;
  }
  return occupied;
}

uint32_t ComputeSlicesUsed(const GpuInstanceState& gi) {
  uint32_t occupied = 0;
  for (const ComputeInstanceState& ci : gi.compute) occupied |= ((1U << ci.size) - 1U) << ci.start;
  return occupied;
}

template <typename Info>
void FillGpuProfile(const mig::Profile& profile, Info* info) {
  info->id = profile.id;
  info->sliceCount = static_cast<unsigned>(profile.compute_slices);
  info->instanceCount = static_cast<unsigned>(profile.max_instances);
  info->multiprocessorCount = static_cast<unsigned>(profile.sms);
  info->copyEngineCount = static_cast<unsigned>(profile.copy_engines);
  // Video engines are not in the profile table; +me and the full GPU get the one OFA.
  info->decoderCount = info->encoderCount = info->jpegCount = 0;
  info->ofaCount = profile.media || profile.compute_slices == mig::kComputeSlices ? 1 : 0;
  info->memorySizeMB = profile.memory_bytes >> 20;
}

std::string ComputeProfileName(const mig::Profile& gi, int slices) {
  if (slices >= gi.compute_slices) return "MIG " + std::string(gi.name);
  return "MIG " + std::to_string(slices) + "c." + std::string(gi.name);
}

template <typename Info>
nvmlReturn_t FillComputeProfile(const GpuInstanceView& view, unsigned profile, unsigned eng_profile, Info* info) {
  if (eng_profile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED || profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  const int slices = ComputeProfileSlices(profile);
  if (slices == 0 || slices > view.profile->compute_slices) return NVML_ERROR_NOT_SUPPORTED;
  info->id = profile;
  info->sliceCount = static_cast<unsigned>(slices);
  info->instanceCount = static_cast<unsigned>(view.profile->compute_slices / slices);
  info->multiprocessorCount = static_cast<unsigned>(ComputeInstanceSms(*view.snapshot.model, *view.profile, slices));
  info->sharedCopyEngineCount = static_cast<unsigned>(view.profile->copy_engines);
  info->sharedDecoderCount = info->sharedEncoderCount = info->sharedJpegCount = 0;
  info->sharedOfaCount = view.profile->media || view.profile->compute_slices == mig::kComputeSlices ? 1 : 0;
  return NVML_SUCCESS;
}

}  // namespace

extern "C" {

// ---- mode ----------------------------------------------------------------------------------

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode, unsigned int* pendingMode) {
  return WithDevice(device, [&](Session& session, int index) {
    if (currentMode == nullptr || pendingMode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const MigSnapshot snapshot = session.shared().Mig(index);
    if (snapshot.model == nullptr) return NVML_ERROR_NOT_SUPPORTED;
    *currentMode = snapshot.enabled ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    *pendingMode = snapshot.pending_enabled ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
  });
}

// Hopper semantics: the change applies at once when no process uses the GPU; otherwise the call
// succeeds with activationStatus NVML_ERROR_IN_USE and the mode stays pending. Disabling while
// GPU instances exist fails with NVML_ERROR_IN_USE.
nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode, nvmlReturn_t* activationStatus) {
  return WithDevice(device, [&](Session& session, int index) {
    if (activationStatus == nullptr || (mode != NVML_DEVICE_MIG_DISABLE && mode != NVML_DEVICE_MIG_ENABLE)) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    const MigSnapshot snapshot = session.shared().Mig(index);
    if (snapshot.model == nullptr) return NVML_ERROR_NOT_SUPPORTED;
    if (!CallerIsPrivileged()) return NVML_ERROR_NO_PERMISSION;
    if (mode == NVML_DEVICE_MIG_DISABLE && !snapshot.gpu_instances.empty()) return NVML_ERROR_IN_USE;
    const MigResult result = session.shared().SetMigMode(index, mode == NVML_DEVICE_MIG_ENABLE);
    if (result == MigResult::kUnavailable) return NVML_ERROR_UNKNOWN;
    *activationStatus = ToNvml(result);
    return NVML_SUCCESS;
  });
}

// ---- GPU instance profiles and placements -------------------------------------------------

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile,
                                                 nvmlGpuInstanceProfileInfo_t* info) {
  return WithDevice(device, [&](Session& session, int index) {
    if (info == nullptr || profile >= NVML_GPU_INSTANCE_PROFILE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
    const MigSnapshot snapshot = session.shared().Mig(index);
    if (nvmlReturn_t rc = RequireMigEnabled(snapshot); rc != NVML_SUCCESS) return rc;
    const mig::Profile* found = mig::FindProfileByNvmlIndex(*snapshot.model, profile);
    if (found == nullptr) return NVML_ERROR_NOT_SUPPORTED;
    nvmlGpuInstanceProfileInfo_t out{};
    FillGpuProfile(*found, &out);
    out.isP2pSupported = 0;  // `-lgip` says P2P: No for MIG profiles on A100/H100
    *info = out;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int profile,
                                                  nvmlGpuInstanceProfileInfo_v2_t* info) {
  return WithDevice(device, [&](Session& session, int index) {
    if (info == nullptr || profile >= NVML_GPU_INSTANCE_PROFILE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
    const unsigned version = info->version;
    if (version != nvmlGpuInstanceProfileInfo_v2 && version != nvmlGpuInstanceProfileInfo_v3) {
      return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    }
    const MigSnapshot snapshot = session.shared().Mig(index);
    if (nvmlReturn_t rc = RequireMigEnabled(snapshot); rc != NVML_SUCCESS) return rc;
    const mig::Profile* found = mig::FindProfileByNvmlIndex(*snapshot.model, profile);
    if (found == nullptr) return NVML_ERROR_NOT_SUPPORTED;
    const std::string name = "MIG " + std::string(found->name);
    if (version == nvmlGpuInstanceProfileInfo_v2) {
      nvmlGpuInstanceProfileInfo_v2_t out{};
      out.version = version;
      FillGpuProfile(*found, &out);
      (void)CopyOut(name, out.name, sizeof(out.name));
      *info = out;
    } else {
      nvmlGpuInstanceProfileInfo_v3_t out{};
      out.version = version;
      FillGpuProfile(*found, &out);
      (void)CopyOut(name, out.name, sizeof(out.name));
      out.capabilities = 0;
      std::memcpy(static_cast<void*>(info), &out, sizeof(out));  // the caller passed a v3 struct
    }
    return NVML_SUCCESS;
  });
}

// Every placement of the profile, MIG enabled or not (cuda.md §4.3). `count` is output only, as
// in NVML (callers such as go-nvml pass 0): a non-NULL `placements` must hold every start.
nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device, unsigned int profileId,
                                                           nvmlGpuInstancePlacement_t* placements,
                                                           unsigned int* count) {
  return WithDevice(device, [&](Session& session, int index) {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const mig::ModelInfo* model = session.shared().MigModel(index);
    if (model == nullptr) return NVML_ERROR_NOT_SUPPORTED;
    const mig::Profile* profile = mig::FindProfile(*model, profileId);
    if (profile == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned written = 0;
    for (int start = 0; start < mig::kMemorySlices; ++start) {
      if (!profile->CanStartAt(start)) continue;
      if (placements != nullptr) {
        placements[written] = {static_cast<unsigned>(start), static_cast<unsigned>(profile->memory_slices)};
      }
      ++written;
    }
    *count = written;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device, unsigned int profileId,
                                                       unsigned int* count) {
  return WithDevice(device, [&](Session& session, int index) {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const MigSnapshot snapshot = session.shared().Mig(index);
    if (nvmlReturn_t rc = RequireMigEnabled(snapshot); rc != NVML_SUCCESS) return rc;
    const mig::Profile* profile = mig::FindProfile(*snapshot.model, profileId);
    if (profile == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    bool media_used = false;
    int existing = 0;
    uint8_t occupied = OccupiedMemorySlices(snapshot, &media_used, profileId, &existing);
    // Placements are aligned to the profile's size, so filling from the lowest start is optimal.
    unsigned more = 0;
    for (int start = 0; start < mig::kMemorySlices; ++start) {
      if (!mig::Fits(*profile, start, occupied, media_used, existing)) continue;
      occupied |= profile->Occupies(start);
      media_used = media_used || profile->media;
      ++existing;
      ++more;
    }
    *count = more;
    return NVML_SUCCESS;
  });
}

// ---- GPU instances --------------------------------------------------------------------------

// start < 0: the driver places. placement_size: the caller's placement size (checked against
// the profile's), or -1 without a placement.
static nvmlReturn_t CreateGpuInstance(nvmlDevice_t device, unsigned int profileId, int start, int placement_size,
                                      nvmlGpuInstance_t* gpuInstance) {
  return WithDevice(device, [&](Session& session, int index) {
    if (gpuInstance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const MigSnapshot snapshot = session.shared().Mig(index);
    if (nvmlReturn_t rc = RequireMigEnabled(snapshot); rc != NVML_SUCCESS) return rc;
    const mig::Profile* profile = mig::FindProfile(*snapshot.model, profileId);
    if (profile == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    // A placement of another size, or at a start the profile may not use, is invalid rather
    // than merely occupied.
    if (placement_size >= 0 && (placement_size != profile->memory_slices || !profile->CanStartAt(start))) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    if (!CallerIsPrivileged()) return NVML_ERROR_NO_PERMISSION;
    uint32_t id = 0;
    const MigResult result = session.shared().CreateGpuInstance(index, profileId, start, &id);
    if (result != MigResult::kOk) return ToNvml(result);
    *gpuInstance = Session::GpuInstanceHandle({index, id, 0});
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profileId, nvmlGpuInstance_t* gpuInstance) {
  return CreateGpuInstance(device, profileId, -1, -1, gpuInstance);
}

nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profileId,
                                                      const nvmlGpuInstancePlacement_t* placement,
                                                      nvmlGpuInstance_t* gpuInstance) {
  if (placement == nullptr || placement->start >= static_cast<unsigned>(mig::kMemorySlices) ||
      placement->size > static_cast<unsigned>(mig::kMemorySlices)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  return CreateGpuInstance(device, profileId, static_cast<int>(placement->start), static_cast<int>(placement->size),
                           gpuInstance);
}

nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance) {
  return WithSession([&](Session& session) {
    GpuInstanceView view;
    if (nvmlReturn_t rc = ViewGpuInstance(session, gpuInstance, &view); rc != NVML_SUCCESS) return rc;
    if (!CallerIsPrivileged()) return NVML_ERROR_NO_PERMISSION;
    return ToNvml(session.shared().DestroyGpuInstance(view.ref.device, view.ref.gi));
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId, nvmlGpuInstance_t* gpuInstances,
                                       unsigned int* count) {
  return WithDevice(device, [&](Session& session, int index) {
    if (gpuInstances == nullptr || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const MigSnapshot snapshot = session.shared().Mig(index);
    if (nvmlReturn_t rc = RequireMigEnabled(snapshot); rc != NVML_SUCCESS) return rc;
    if (mig::FindProfile(*snapshot.model, profileId) == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned written = 0;
    for (const GpuInstanceState& gi : snapshot.gpu_instances) {
      if (gi.profile_id == profileId) gpuInstances[written++] = Session::GpuInstanceHandle({index, gi.id, 0});
    }
    *count = written;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t* gpuInstance) {
  return WithDevice(device, [&](Session& session, int index) {
    if (gpuInstance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const MigSnapshot snapshot = session.shared().Mig(index);
    if (nvmlReturn_t rc = RequireMigEnabled(snapshot); rc != NVML_SUCCESS) return rc;
    if (snapshot.FindGpu(id) == nullptr) return NVML_ERROR_NOT_FOUND;
    *gpuInstance = Session::GpuInstanceHandle({index, id, 0});
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t* info) {
  return WithSession([&](Session& session) {
    if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    GpuInstanceView view;
    if (nvmlReturn_t rc = ViewGpuInstance(session, gpuInstance, &view); rc != NVML_SUCCESS) return rc;
    info->device = Session::HandleFor(view.ref.device);
    info->id = view.gi->id;
    info->profileId = view.gi->profile_id;
    info->placement = {static_cast<unsigned>(view.gi->start), static_cast<unsigned>(view.gi->size)};
    return NVML_SUCCESS;
  });
}

// ---- compute instances ------------------------------------------------------------------------

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gpuInstance, unsigned int profile,
                                                          unsigned int engProfile,
                                                          nvmlComputeInstanceProfileInfo_t* info) {
  return WithSession([&](Session& session) {
    if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    GpuInstanceView view;
    if (nvmlReturn_t rc = ViewGpuInstance(session, gpuInstance, &view); rc != NVML_SUCCESS) return rc;
    nvmlComputeInstanceProfileInfo_t out{};
    if (nvmlReturn_t rc = FillComputeProfile(view, profile, engProfile, &out); rc != NVML_SUCCESS) return rc;
    *info = out;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfoV(nvmlGpuInstance_t gpuInstance, unsigned int profile,
                                                           unsigned int engProfile,
                                                           nvmlComputeInstanceProfileInfo_v2_t* info) {
  return WithSession([&](Session& session) {
    if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const unsigned version = info->version;
    if (version != nvmlComputeInstanceProfileInfo_v2 && version != nvmlComputeInstanceProfileInfo_v3) {
      return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    }
    GpuInstanceView view;
    if (nvmlReturn_t rc = ViewGpuInstance(session, gpuInstance, &view); rc != NVML_SUCCESS) return rc;
    const std::string name = ComputeProfileName(*view.profile, ComputeProfileSlices(profile));
    if (version == nvmlComputeInstanceProfileInfo_v2) {
      nvmlComputeInstanceProfileInfo_v2_t out{};
      if (nvmlReturn_t rc = FillComputeProfile(view, profile, engProfile, &out); rc != NVML_SUCCESS) return rc;
      out.version = version;
      (void)CopyOut(name, out.name, sizeof(out.name));
      *info = out;
    } else {
      nvmlComputeInstanceProfileInfo_v3_t out{};
      if (nvmlReturn_t rc = FillComputeProfile(view, profile, engProfile, &out); rc != NVML_SUCCESS) return rc;
      out.version = version;
      (void)CopyOut(name, out.name, sizeof(out.name));
      std::memcpy(static_cast<void*>(info), &out, sizeof(out));  // the caller passed a v3 struct
    }
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceRemainingCapacity(nvmlGpuInstance_t gpuInstance,
                                                                unsigned int profileId, unsigned int* count) {
  return WithSession([&](Session& session) {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    GpuInstanceView view;
    if (nvmlReturn_t rc = ViewGpuInstance(session, gpuInstance, &view); rc != NVML_SUCCESS) return rc;
    const int slices = ComputeProfileSlices(profileId);
    if (slices == 0) return NVML_ERROR_INVALID_ARGUMENT;
    uint32_t occupied = ComputeSlicesUsed(*view.gi);
    unsigned more = 0;
    for (int start = 0; start < view.profile->compute_slices; ++start) {
      const uint32_t mask = ((1U << slices) - 1U) << start;
      if (!ComputeInstanceCanStartAt(slices, start, view.profile->compute_slices) || (mask & occupied) != 0) continue;
      occupied |= mask;
      ++more;
    }
    *count = more;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstancePossiblePlacements(nvmlGpuInstance_t gpuInstance,
                                                                 unsigned int profileId,
                                                                 nvmlComputeInstancePlacement_t* placements,
                                                                 unsigned int* count) {
  return WithSession([&](Session& session) {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    GpuInstanceView view;
    if (nvmlReturn_t rc = ViewGpuInstance(session, gpuInstance, &view); rc != NVML_SUCCESS) return rc;
    const int slices = ComputeProfileSlices(profileId);
    if (slices == 0) return NVML_ERROR_INVALID_ARGUMENT;
    if (slices > view.profile->compute_slices) return NVML_ERROR_NOT_SUPPORTED;
    unsigned written = 0;
    for (int start = 0; start < view.profile->compute_slices; ++start) {
      if (!ComputeInstanceCanStartAt(slices, start, view.profile->compute_slices)) continue;
      if (placements != nullptr) placements[written] = {static_cast<unsigned>(start), static_cast<unsigned>(slices)};
      ++written;
    }
    *count = written;
    return NVML_SUCCESS;
  });
}

static nvmlReturn_t CreateComputeInstance(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                          const nvmlComputeInstancePlacement_t* placement,
                                          nvmlComputeInstance_t* computeInstance) {
  return WithSession([&](Session& session) {
    if (computeInstance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    GpuInstanceView view;
    if (nvmlReturn_t rc = ViewGpuInstance(session, gpuInstance, &view); rc != NVML_SUCCESS) return rc;
    int start = -1;
    if (placement != nullptr) {
      if (placement->size != static_cast<unsigned>(ComputeProfileSlices(profileId)) ||
          placement->start >= static_cast<unsigned>(mig::kComputeSlices)) {
        return NVML_ERROR_INVALID_ARGUMENT;
      }
      start = static_cast<int>(placement->start);
    }
    if (!CallerIsPrivileged()) return NVML_ERROR_NO_PERMISSION;
    uint32_t id = 0;
    const MigResult result = session.shared().CreateComputeInstance(view.ref.device, view.ref.gi, profileId, start, &id);
    if (result != MigResult::kOk) return ToNvml(result);
    *computeInstance = Session::ComputeInstanceHandle({view.ref.device, view.ref.gi, id});
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                  nvmlComputeInstance_t* computeInstance) {
  return CreateComputeInstance(gpuInstance, profileId, nullptr, computeInstance);
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstanceWithPlacement(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                               const nvmlComputeInstancePlacement_t* placement,
                                                               nvmlComputeInstance_t* computeInstance) {
  if (placement == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  return CreateComputeInstance(gpuInstance, profileId, placement, computeInstance);
}

nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance) {
  return WithSession([&](Session& session) {
    MigRef ref;
    if (nvmlReturn_t rc = session.ResolveComputeInstance(computeInstance, &ref); rc != NVML_SUCCESS) return rc;
    if (!CallerIsPrivileged()) return NVML_ERROR_NO_PERMISSION;
    return ToNvml(session.shared().DestroyComputeInstance(ref.device, ref.gi, ref.ci));
  });
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                nvmlComputeInstance_t* computeInstances, unsigned int* count) {
  return WithSession([&](Session& session) {
    if (computeInstances == nullptr || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    GpuInstanceView view;
    if (nvmlReturn_t rc = ViewGpuInstance(session, gpuInstance, &view); rc != NVML_SUCCESS) return rc;
    if (ComputeProfileSlices(profileId) == 0) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned written = 0;
    for (const ComputeInstanceState& ci : view.gi->compute) {
      if (ci.profile == profileId) {
        computeInstances[written++] = Session::ComputeInstanceHandle({view.ref.device, view.ref.gi, ci.id});
      }
    }
    *count = written;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t gpuInstance, unsigned int id,
                                                   nvmlComputeInstance_t* computeInstance) {
  return WithSession([&](Session& session) {
    if (computeInstance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    GpuInstanceView view;
    if (nvmlReturn_t rc = ViewGpuInstance(session, gpuInstance, &view); rc != NVML_SUCCESS) return rc;
    if (view.gi->FindCompute(id) == nullptr) return NVML_ERROR_NOT_FOUND;
    *computeInstance = Session::ComputeInstanceHandle({view.ref.device, view.ref.gi, id});
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t* info) {
  return WithSession([&](Session& session) {
    if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    MigRef ref;
    if (nvmlReturn_t rc = session.ResolveComputeInstance(computeInstance, &ref); rc != NVML_SUCCESS) return rc;
    const MigSnapshot snapshot = session.shared().Mig(ref.device);
    const GpuInstanceState* gi = snapshot.FindGpu(ref.gi);
    const ComputeInstanceState* ci = gi == nullptr ? nullptr : gi->FindCompute(ref.ci);
    if (ci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    info->device = Session::HandleFor(ref.device);
    info->gpuInstance = Session::GpuInstanceHandle({ref.device, ref.gi, 0});
    info->id = ci->id;
    info->profileId = ci->profile;
    info->placement = {static_cast<unsigned>(ci->start), static_cast<unsigned>(ci->size)};
    return NVML_SUCCESS;
  });
}

// v1 has the same struct; it predates the placement field being filled, which costs nothing to fill.
nvmlReturn_t nvmlComputeInstanceGetInfo(nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t* info) {
  return nvmlComputeInstanceGetInfo_v2(computeInstance, info);
}

// ---- MIG device handles -------------------------------------------------------------------------

nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int* isMigDevice) {
  return WithSession([&](Session& session) {
    if (isMigDevice == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    int index = 0;
    if (session.Resolve(device, &index) == NVML_SUCCESS) {
      *isMigDevice = 0;
      return NVML_SUCCESS;
    }
    MigDeviceView view;
    if (nvmlReturn_t rc = ViewMigDevice(session, device, &view); rc != NVML_SUCCESS) return rc;
    *isMigDevice = 1;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  return WithSession([&](Session& session) {
    if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    int index = 0;
    if (session.Resolve(device, &index) == NVML_SUCCESS) return NVML_ERROR_NOT_SUPPORTED;  // not a MIG handle
    MigDeviceView view;
    if (nvmlReturn_t rc = ViewMigDevice(session, device, &view); rc != NVML_SUCCESS) return rc;
    *id = view.gi.id;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id) {
  return WithSession([&](Session& session) {
    if (id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    int index = 0;
    if (session.Resolve(device, &index) == NVML_SUCCESS) return NVML_ERROR_NOT_SUPPORTED;
    MigDeviceView view;
    if (nvmlReturn_t rc = ViewMigDevice(session, device, &view); rc != NVML_SUCCESS) return rc;
    *id = view.ci.id;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  return WithDevice(device, [&](Session& session, int index) {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (session.shared().MigModel(index) == nullptr) return NVML_ERROR_NOT_SUPPORTED;
    *count = mig::kComputeSlices;  // one compute instance per compute slice at most
    return NVML_SUCCESS;
  });
}

// The index-th existing compute instance, in (GI id, CI id) order.
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t* migDevice) {
  return WithDevice(device, [&](Session& session, int device_index) {
    if (migDevice == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const MigSnapshot snapshot = session.shared().Mig(device_index);
    if (nvmlReturn_t rc = RequireMigEnabled(snapshot); rc != NVML_SUCCESS) return rc;
    unsigned seen = 0;
    for (const GpuInstanceState& gi : snapshot.gpu_instances) {
      for (const ComputeInstanceState& ci : gi.compute) {
        if (seen++ == index) {
          *migDevice = Session::MigDeviceHandle({device_index, gi.id, ci.id});
          return NVML_SUCCESS;
        }
      }
    }
    return NVML_ERROR_NOT_FOUND;
  });
}

nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice, nvmlDevice_t* device) {
  return WithSession([&](Session& session) {
    if (device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    MigDeviceView view;
    if (nvmlReturn_t rc = ViewMigDevice(session, migDevice, &view); rc != NVML_SUCCESS) return rc;
    *device = Session::HandleFor(view.ref.device);
    return NVML_SUCCESS;
  });
}

}  // extern "C"
