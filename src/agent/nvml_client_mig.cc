// NvmlClient's MIG calls: the mode, the GPU instances with their compute instances, create and
// destroy with placement (docs/mig.md "The agent's MIG GPUs").
#include <algorithm>
#include <array>

#include "agent/nvml_api.h"
#include "agent/nvml_client.h"

namespace fgpu::agent {
namespace {

// NVML_COMPUTE_INSTANCE_PROFILE_* by compute slices: a compute instance over a whole GPU instance.
constexpr std::array<std::pair<int, unsigned>, 7> kComputeProfileOfSlices = {{
    {1, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE},
    {2, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE},
    {3, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE},
    {4, NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE},
    {6, NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE},
    {7, NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE},
    {8, NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE},
}};

Status NvmlError(nvmlReturn_t rc, const std::string& what) {
  switch (rc) {
    case NVML_ERROR_NO_PERMISSION:
      return Status::PermissionDenied(what + ": NVML says no permission (MIG changes need root)");
    case NVML_ERROR_IN_USE:
      return Status::ResourceExhausted(what + ": in use");
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return Status::ResourceExhausted(what + ": not enough free slices there");
    case NVML_ERROR_NOT_SUPPORTED:
      return Status::Unavailable(what + ": not supported on this GPU");
    case NVML_ERROR_INVALID_ARGUMENT:
      return Status::InvalidArgument(what + ": NVML refused the arguments");
    case NVML_ERROR_NOT_FOUND:
      return Status::NotFound(what + ": not found");
    default:
      return Status::Unavailable(what + ": NVML error " + std::to_string(static_cast<int>(rc)));
  }
}

}  // namespace

void NvmlClient::Api::ResolveMig() {
  Resolve(&set_mig_mode, "nvmlDeviceSetMigMode", false);
  Resolve(&gi_profile_info, "nvmlDeviceGetGpuInstanceProfileInfo", false);
  Resolve(&gpu_instances, "nvmlDeviceGetGpuInstances", false);
  Resolve(&gpu_instance_by_id, "nvmlDeviceGetGpuInstanceById", false);
  Resolve(&gpu_instance_info, "nvmlGpuInstanceGetInfo", false);
  Resolve(&create_gpu_instance, "nvmlDeviceCreateGpuInstanceWithPlacement", false);
  Resolve(&destroy_gpu_instance, "nvmlGpuInstanceDestroy", false);
  Resolve(&ci_profile_info, "nvmlGpuInstanceGetComputeInstanceProfileInfo", false);
  Resolve(&create_compute_instance, "nvmlGpuInstanceCreateComputeInstance", false);
  Resolve(&compute_instances, "nvmlGpuInstanceGetComputeInstances", false);
  Resolve(&destroy_compute_instance, "nvmlComputeInstanceDestroy", false);
  Resolve(&max_mig_devices, "nvmlDeviceGetMaxMigDeviceCount", false);
  Resolve(&mig_device_by_index, "nvmlDeviceGetMigDeviceHandleByIndex", false);
  Resolve(&mig_gpu_instance_id, "nvmlDeviceGetGpuInstanceId", false);
}

bool NvmlClient::Api::HasMig() const {
  return mig_mode != nullptr && set_mig_mode != nullptr && gi_profile_info != nullptr &&
         gpu_instances != nullptr && gpu_instance_by_id != nullptr && gpu_instance_info != nullptr &&
         create_gpu_instance != nullptr && destroy_gpu_instance != nullptr && ci_profile_info != nullptr &&
         create_compute_instance != nullptr && compute_instances != nullptr &&
         destroy_compute_instance != nullptr && max_mig_devices != nullptr &&
         mig_device_by_index != nullptr && mig_gpu_instance_id != nullptr;
}

namespace {

Result<nvmlDevice_t> MigDevice(const NvmlClient::Api& api, const std::string& uuid) {
  if (!api.HasMig()) return Status::Unavailable("this NVML has no MIG entry points");
  nvmlDevice_t device = nullptr;
  if (api.by_uuid(uuid.c_str(), &device) != NVML_SUCCESS)
    return Status::NotFound("NVML does not know " + uuid);
  return device;
}

}  // namespace

Result<MigMode> NvmlClient::GetMigMode(const std::string& uuid) const {
  Result<nvmlDevice_t> device = MigDevice(*api_, uuid);
  if (!device.ok()) return device.status();
  unsigned current = 0, pending = 0;
  if (nvmlReturn_t rc = api_->mig_mode(*device, &current, &pending); rc != NVML_SUCCESS) {
    return NvmlError(rc, "the MIG mode of " + uuid);
  }
  return MigMode{current == NVML_DEVICE_MIG_ENABLE, pending == NVML_DEVICE_MIG_ENABLE};
}

Result<bool> NvmlClient::EnableMig(const std::string& uuid) const {
  Result<nvmlDevice_t> device = MigDevice(*api_, uuid);
  if (!device.ok()) return device.status();
  nvmlReturn_t activation = NVML_SUCCESS;
  if (nvmlReturn_t rc = api_->set_mig_mode(*device, NVML_DEVICE_MIG_ENABLE, &activation);
      rc != NVML_SUCCESS) {
    return NvmlError(rc, "turning MIG mode on for " + uuid);
  }
  return activation == NVML_SUCCESS;
}

Result<std::vector<MigInstance>> NvmlClient::MigInstances(const std::string& uuid) const {
  Result<nvmlDevice_t> device = MigDevice(*api_, uuid);
  if (!device.ok()) return device.status();
  std::vector<MigInstance> instances;
  for (unsigned index = 0; index < NVML_GPU_INSTANCE_PROFILE_COUNT; ++index) {
    nvmlGpuInstanceProfileInfo_t profile{};
    if (api_->gi_profile_info(*device, index, &profile) != NVML_SUCCESS) continue;  // not on this model
    std::array<nvmlGpuInstance_t, 8> handles{};
    unsigned count = static_cast<unsigned>(handles.size());
    if (nvmlReturn_t rc = api_->gpu_instances(*device, profile.id, handles.data(), &count);
        rc != NVML_SUCCESS) {
      return NvmlError(rc, "the GPU instances of " + uuid);
    }
    for (unsigned i = 0; i < std::min<unsigned>(count, handles.size()); ++i) {
      nvmlGpuInstanceInfo_t info{};
      if (api_->gpu_instance_info(handles[i], &info) != NVML_SUCCESS) continue;
      MigInstance instance;
      instance.gpu_instance_id = info.id;
      instance.profile_id = info.profileId;
      instance.start = static_cast<int>(info.placement.start);
      instance.size = static_cast<int>(info.placement.size);
      instances.push_back(instance);
    }
  }
  // The MIG devices (one per compute instance): the first of each GPU instance names it.
  unsigned most = 0;
  if (api_->max_mig_devices(*device, &most) != NVML_SUCCESS) most = 0;
  for (unsigned i = 0; i < most; ++i) {
    nvmlDevice_t mig = nullptr;
    unsigned gpu_instance = 0;
    if (api_->mig_device_by_index(*device, i, &mig) != NVML_SUCCESS) continue;
    if (api_->mig_gpu_instance_id(mig, &gpu_instance) != NVML_SUCCESS) continue;
    const auto owner = std::find_if(instances.begin(), instances.end(), [&](const MigInstance& gi) {
      return gi.gpu_instance_id == gpu_instance;
    });
    if (owner == instances.end() || !owner->uuid.empty()) continue;
    char text[96] = {};
    if (api_->uuid(mig, text, sizeof(text)) == NVML_SUCCESS) owner->uuid = text;
    if (api_->name(mig, text, sizeof(text)) == NVML_SUCCESS) owner->name = text;
    nvmlMemory_t memory{};
    if (api_->memory(mig, &memory) == NVML_SUCCESS) {
      owner->memory_total = memory.total;
      owner->memory_used = memory.used;
    }
  }
  std::sort(instances.begin(), instances.end(),
            [](const MigInstance& a, const MigInstance& b) { return a.start < b.start; });
  return instances;
}

Status NvmlClient::CreateMigInstance(const std::string& uuid, const mig::Profile& wanted, int start) const {
  Result<nvmlDevice_t> device = MigDevice(*api_, uuid);
  if (!device.ok()) return device.status();
  const std::string what =
      "a " + std::string(wanted.name) + " instance at memory slice " + std::to_string(start) + " of " + uuid;
  nvmlGpuInstanceProfileInfo_t profile{};
  if (nvmlReturn_t rc = api_->gi_profile_info(*device, wanted.nvml_index, &profile); rc != NVML_SUCCESS) {
    return NvmlError(rc, what);
  }
  const nvmlGpuInstancePlacement_t placement{static_cast<unsigned>(start),
                                             static_cast<unsigned>(wanted.memory_slices)};
  nvmlGpuInstance_t gpu_instance = nullptr;
  if (nvmlReturn_t rc = api_->create_gpu_instance(*device, profile.id, &placement, &gpu_instance);
      rc != NVML_SUCCESS) {
    return NvmlError(rc, what);
  }
  const auto full = std::find_if(kComputeProfileOfSlices.begin(), kComputeProfileOfSlices.end(),
                                 [&](const auto& entry) { return entry.first == wanted.compute_slices; });
  nvmlComputeInstanceProfileInfo_t compute{};
  nvmlComputeInstance_t compute_instance = nullptr;
  nvmlReturn_t rc = full == kComputeProfileOfSlices.end()
                        ? NVML_ERROR_NOT_SUPPORTED
                        : api_->ci_profile_info(gpu_instance, full->second, 0, &compute);
  if (rc == NVML_SUCCESS) rc = api_->create_compute_instance(gpu_instance, compute.id, &compute_instance);
  if (rc != NVML_SUCCESS) {
    (void)api_->destroy_gpu_instance(gpu_instance);  // nothing half-made
    return NvmlError(rc, "the compute instance of " + what);
  }
  return Status::Ok();
}

Status NvmlClient::DestroyMigInstance(const std::string& uuid, uint32_t gpu_instance_id) const {
  Result<nvmlDevice_t> device = MigDevice(*api_, uuid);
  if (!device.ok()) return device.status();
  const std::string what = "GPU instance " + std::to_string(gpu_instance_id) + " of " + uuid;
  nvmlGpuInstance_t gpu_instance = nullptr;
  if (nvmlReturn_t rc = api_->gpu_instance_by_id(*device, gpu_instance_id, &gpu_instance);
      rc != NVML_SUCCESS) {
    return NvmlError(rc, what);
  }
  for (unsigned index = 0; index < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ++index) {
    nvmlComputeInstanceProfileInfo_t profile{};
    if (api_->ci_profile_info(gpu_instance, index, 0, &profile) != NVML_SUCCESS) continue;
    std::array<nvmlComputeInstance_t, 8> handles{};
    unsigned count = static_cast<unsigned>(handles.size());
    if (api_->compute_instances(gpu_instance, profile.id, handles.data(), &count) != NVML_SUCCESS) continue;
    for (unsigned i = 0; i < std::min<unsigned>(count, handles.size()); ++i) {
      if (nvmlReturn_t rc = api_->destroy_compute_instance(handles[i]); rc != NVML_SUCCESS) {
        return NvmlError(rc, "a compute instance of " + what);
      }
    }
  }
  if (nvmlReturn_t rc = api_->destroy_gpu_instance(gpu_instance); rc != NVML_SUCCESS)
    return NvmlError(rc, what);
  return Status::Ok();
}

}  // namespace fgpu::agent
