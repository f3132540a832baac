#include "hook/memory/device_map.h"

#include <cstring>

#include "slice/slice.h"

namespace fgpu::hook {

void FormatUuid(const CUuuid& uuid, char* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  static constexpr int kGroupEnds[] = {4, 6, 8, 10, 16};  // byte index where each dash-group ends
  char* p = out;
  *p++ = 'G';
  *p++ = 'P';
  *p++ = 'U';
  int group = 0;
  for (int i = 0; i < 16; ++i) {
    if (i == 0 || i == kGroupEnds[group]) {
      if (i != 0) ++group;
      *p++ = '-';
    }
    const auto byte = static_cast<unsigned char>(uuid.bytes[i]);
    *p++ = kHex[byte >> 4];
    *p++ = kHex[byte & 0xF];
  }
  *p = '\0';
}

bool DeviceMap::ResolveCuda(CUdevice device, CudaDeviceFacts* facts) const {
  if (sources_.device_get_uuid == nullptr) return false;
  CUuuid uuid{};
  if (sources_.device_get_uuid(&uuid, device) != CUDA_SUCCESS) return false;
  FormatUuid(uuid, facts->uuid);
  facts->slice_device = sources_.ledger != nullptr ? sources_.ledger->FindDevice(facts->uuid) : kNotInSlice;
  if (facts->slice_device == kNotInSlice && sources_.ledger != nullptr) {
    // A MIG device: cuDeviceGetUuid_v2 gives the instance's UUID, which NVML, the agent and
    // the slice write "MIG-…" (the same 16 bytes).
    std::memcpy(facts->uuid, "MIG", 3);
    facts->slice_device = sources_.ledger->FindDevice(facts->uuid);
    if (facts->slice_device == kNotInSlice) std::memcpy(facts->uuid, "GPU", 3);
  }
  facts->granularity = kFallbackGranularity;
  if (sources_.allocation_granularity != nullptr) {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    size_t granularity = 0;
    if (sources_.allocation_granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) ==
            CUDA_SUCCESS &&
        granularity != 0) {
      facts->granularity = granularity;
    }
  }
  return true;
}

bool DeviceMap::Cuda(CUdevice device, CudaDeviceFacts* facts) {
  if (device < 0 || device >= kCachedCudaDevices) return ResolveCuda(device, facts);
  CudaSlot& slot = cuda_[device];
  if (slot.state.load(std::memory_order_acquire) == 2) {
    *facts = slot.facts;
    return true;
  }
  if (!ResolveCuda(device, facts)) return false;
  // First resolver publishes; the others keep their own (identical) answer.
  uint32_t expected = 0;
  if (slot.state.compare_exchange_strong(expected, 1, std::memory_order_acquire)) {
    slot.facts = *facts;
    slot.state.store(2, std::memory_order_release);
  }
  return true;
}

bool DeviceMap::ResolveNvml(nvmlDevice_t device, int* slice_device) const {
  if (sources_.nvml_device_get_uuid == nullptr) return false;
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  if (sources_.nvml_device_get_uuid(device, uuid, sizeof(uuid)) != NVML_SUCCESS) return false;
  uuid[sizeof(uuid) - 1] = '\0';
  *slice_device = sources_.ledger != nullptr ? sources_.ledger->FindDevice(uuid) : kNotInSlice;
  return true;
}

bool DeviceMap::Nvml(nvmlDevice_t device, int* slice_device) {
  const auto handle = reinterpret_cast<uintptr_t>(device);
  constexpr uintptr_t kFilling = 1;
  if (handle > kFilling) {
    for (NvmlSlot& slot : nvml_) {
      const uintptr_t seen = slot.handle.load(std::memory_order_acquire);
      if (seen == 0) break;  // slots fill in order: no later slot is taken
      if (seen == handle) {
        *slice_device = slot.slice_device;
        return true;
      }
    }
  }
  if (!ResolveNvml(device, slice_device)) return false;
  if (handle <= kFilling) return true;
  for (NvmlSlot& slot : nvml_) {
    uintptr_t expected = 0;
    if (slot.handle.compare_exchange_strong(expected, kFilling, std::memory_order_acquire)) {
      slot.slice_device = *slice_device;
      slot.handle.store(handle, std::memory_order_release);
      break;
    }
    if (expected == handle) break;  // another thread cached it meanwhile
  }
  return true;
}

}  // namespace fgpu::hook
