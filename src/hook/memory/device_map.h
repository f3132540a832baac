// DeviceMap: which slice device a CUDA device or an NVML handle is, and the CUDA device's
// allocation granularity, resolved once and cached.
//
// Contract
// - Identity is the UUID, never an ordinal: a CUDA device's comes from the real
//   cuDeviceGetUuid_v2 (formatted as NVML prints it, "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"),
//   an NVML handle's from the real nvmlDeviceGetUUID, and the slice's FindDevice maps it to a
//   slice device index. A reordered or UUID-form CUDA_VISIBLE_DEVICES therefore cannot make the
//   hook charge or report the wrong device.
// - kNotInSlice for a device the slice does not have: its cap is 0 (fail closed).
// - The granularity is the real cuMemGetAllocationGranularity (minimum, pinned device memory);
//   kFallbackGranularity if the driver cannot say (no VMM support).
// - After a device's first resolution a lookup is one acquire load in a fixed array: no lock, no
//   syscall, no allocation. CUDA devices with ordinals >= kCachedCudaDevices and NVML handles
//   beyond the first kCachedNvmlHandles are resolved on every call (correct, only slower).
// - A failing query is not cached and reported as false: the device is invalid now, and the
//   caller forwards to the driver, which says so.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/abi/cuda_types.h"
#include "core/abi/nvml_types.h"

namespace fgpu::slice {
class Ledger;
}

namespace fgpu::hook {

inline constexpr int kNotInSlice = -1;
inline constexpr uint64_t kFallbackGranularity = uint64_t{2} << 20;
inline constexpr size_t kUuidTextBytes = 48;  // "GPU-" + 36 + NUL, padded

// Formats a CUDA UUID as NVML prints it: lowercase, 8-4-4-4-12. `out` holds kUuidTextBytes.
void FormatUuid(const CUuuid& uuid, char* out);

struct CudaDeviceFacts {
  int slice_device = kNotInSlice;
  uint64_t granularity = kFallbackGranularity;
  char uuid[kUuidTextBytes] = {};
};

// The real functions DeviceMap queries, and the slice it maps into.
struct DeviceMapSources {
  const slice::Ledger* ledger = nullptr;
  CUresult (*device_get_uuid)(CUuuid*, CUdevice) = nullptr;
  CUresult (*allocation_granularity)(size_t*, const CUmemAllocationProp*,
                                     CUmemAllocationGranularity_flags) = nullptr;
  nvmlReturn_t (*nvml_device_get_uuid)(nvmlDevice_t, char*, unsigned int) = nullptr;
};

class DeviceMap {
 public:
  static constexpr int kCachedCudaDevices = 64;
  static constexpr int kCachedNvmlHandles = 64;

  explicit DeviceMap(const DeviceMapSources& sources) : sources_(sources) {}
  DeviceMap(const DeviceMap&) = delete;
  DeviceMap& operator=(const DeviceMap&) = delete;

  // False when the UUID cannot be read (invalid device).
  bool Cuda(CUdevice device, CudaDeviceFacts* facts);
  bool Nvml(nvmlDevice_t device, int* slice_device);

 private:
  bool ResolveCuda(CUdevice device, CudaDeviceFacts* facts) const;
  bool ResolveNvml(nvmlDevice_t device, int* slice_device) const;

  // state: 0 unresolved, 1 being filled by one thread, 2 ready (facts immutable from then on).
  struct CudaSlot {
    std::atomic<uint32_t> state{0};
    CudaDeviceFacts facts;
  };
  // handle: 0 free, 1 being filled, else the published handle (slice_device written before).
  struct NvmlSlot {
    std::atomic<uintptr_t> handle{0};
    int slice_device = kNotInSlice;
  };

  DeviceMapSources sources_;
  CudaSlot cuda_[kCachedCudaDevices];
  NvmlSlot nvml_[kCachedNvmlHandles];
};

}  // namespace fgpu::hook
