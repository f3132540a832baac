// Device enumeration and properties, the links between devices.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>

#include "core/abi/array_format.h"
#include "core/abi/cuda_api.h"
#include "sim/cuda/device_attributes.h"
#include "sim/cuda/runtime.h"

using fgpu::sim::cuda::Runtime;

namespace {

CUresult CheckedDevice(CUdevice dev) {
  Runtime& rt = Runtime::Get();
  if (CUresult rc = rt.RequireInit(); rc != CUDA_SUCCESS) return rc;
  return rt.CheckDevice(dev);
}

// "GPU-01234567-89ab-cdef-0123-456789abcdef" (or "MIG-...", a MIG device's) -> 16 bytes.
// Returns false on malformed input.
bool UuidBytes(const std::string& uuid, CUuuid* out) {
  std::string hex;
  for (char c : uuid.substr(uuid.rfind("GPU-", 0) == 0 || uuid.rfind("MIG-", 0) == 0 ? 4 : 0)) {
    if (c != '-') hex.push_back(c);
  }
  if (hex.size() != 32) return false;
  for (size_t i = 0; i < 16; ++i) {
    const std::string byte = hex.substr(2 * i, 2);
    if (!std::isxdigit(static_cast<unsigned char>(byte[0])) || !std::isxdigit(static_cast<unsigned char>(byte[1]))) {
      return false;
    }
    out->bytes[i] = static_cast<char>(std::stoi(byte, nullptr, 16));
  }
  return true;
}

}  // namespace

extern "C" {

CUresult cuDeviceGetCount(int* count) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = Runtime::Get().device_count();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult rc = Runtime::Get().CheckDevice(ordinal); rc != CUDA_SUCCESS) return rc;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  if (CUresult rc = CheckedDevice(dev); rc != CUDA_SUCCESS) return rc;
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  const std::string& full = Runtime::Get().spec(dev).name;
  const size_t n = std::min(full.size(), static_cast<size_t>(len) - 1);  // the driver truncates
  std::memcpy(name, full.data(), n);
  name[n] = '\0';
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  if (CUresult rc = CheckedDevice(dev); rc != CUDA_SUCCESS) return rc;
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return UuidBytes(Runtime::Get().spec(dev).uuid, uuid) ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
}

CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) { return cuDeviceGetUuid(uuid, dev); }

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  if (CUresult rc = CheckedDevice(dev); rc != CUDA_SUCCESS) return rc;
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *bytes = Runtime::Get().spec(dev).total_bytes;
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(unsigned int* bytes, CUdevice dev) {
  size_t total = 0;
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult rc = cuDeviceTotalMem_v2(&total, dev); rc != CUDA_SUCCESS) return rc;
  *bytes = static_cast<unsigned int>(std::min<size_t>(total, UINT32_MAX));  // the 32-bit ABI saturates
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  if (CUresult rc = CheckedDevice(dev); rc != CUDA_SUCCESS) return rc;
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return fgpu::sim::cuda::DeviceAttribute(Runtime::Get().spec(dev), dev, attrib, pi);
}

CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice dev) {
  if (CUresult rc = CheckedDevice(dev); rc != CUDA_SUCCESS) return rc;
  if (major == nullptr || minor == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *major = Runtime::Get().spec(dev).cc_major;
  *minor = Runtime::Get().spec(dev).cc_minor;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  if (CUresult rc = CheckedDevice(dev); rc != CUDA_SUCCESS) return rc;
  if (pciBusId == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  // The driver reports the short "DDDD:BB:DD.F" form (4-digit domain).
  std::string id = Runtime::Get().spec(dev).pci_bus_id;
  if (id.size() == 16) id = id.substr(4);
  const size_t n = std::min(id.size(), static_cast<size_t>(len) - 1);
  std::memcpy(pciBusId, id.data(), n);
  pciBusId[n] = '\0';
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetByPCIBusId(CUdevice* dev, const char* pciBusId) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  if (dev == nullptr || pciBusId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto wanted = fgpu::sim::cuda::ParsePciBusId(std::string(pciBusId).find(':') == 4
                                                         ? "0000" + std::string(pciBusId)
                                                         : std::string(pciBusId));
  Runtime& rt = Runtime::Get();
  for (int i = 0; i < rt.device_count(); ++i) {
    const auto have = fgpu::sim::cuda::ParsePciBusId(rt.spec(i).pci_bus_id);
    if (have.domain == wanted.domain && have.bus == wanted.bus && have.device == wanted.device) {
      *dev = i;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev) {
  if (CUresult rc = CheckedDevice(dev); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = Runtime::Get().CheckDevice(peerDev); rc != CUDA_SUCCESS) return rc;
  if (canAccessPeer == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *canAccessPeer = dev != peerDev ? 1 : 0;  // NVLink-connected peers, as on an HGX board
  return CUDA_SUCCESS;
}

// The link cuDeviceCanAccessPeer describes: two distinct devices are NVLink peers (as on an HGX
// board), with native atomics and array access over the link; a device has no link to itself.
CUresult cuDeviceGetP2PAttribute(int* value, CUdevice_P2PAttribute attrib, CUdevice srcDevice, CUdevice dstDevice) {
  if (CUresult rc = CheckedDevice(srcDevice); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = Runtime::Get().CheckDevice(dstDevice); rc != CUDA_SUCCESS) return rc;
  if (srcDevice == dstDevice) return CUDA_ERROR_INVALID_DEVICE;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int id = 0;  // a C caller may pass any int: read it as one, not as the enum
  std::memcpy(&id, &attrib, sizeof id);
  switch (id) {
    case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK: *value = 0; return CUDA_SUCCESS;  // one NVLink tier
    case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
    case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
    case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED: *value = 1; return CUDA_SUCCESS;
    case CU_DEVICE_P2P_ATTRIBUTE_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED: *value = 0; return CUDA_SUCCESS;  // all are
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

// Compute capability 9.0 binds up to 2^28 texels of linear memory to a 1D texture, whatever the
// texel size (CUDA C Programming Guide, technical specifications); any texel format is accepted.
CUresult cuDeviceGetTexture1DLinearMaxWidth(size_t* maxWidthInElements, CUarray_format format,
                                            unsigned numChannels, CUdevice dev) {
  if (CUresult rc = CheckedDevice(dev); rc != CUDA_SUCCESS) return rc;
  if (maxWidthInElements == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (fgpu::LayoutOfArrayFormat(format, numChannels).kind != fgpu::ArrayFormatKind::kTexel) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *maxWidthInElements = size_t{1} << 28;
  return CUDA_SUCCESS;
}

// A LUID identifies an adapter to Windows graphics APIs; Linux has none. The real Linux driver
// answers a well-formed call with CUDA_ERROR_NOT_SUPPORTED (cuda.h lists no code for this case).
CUresult cuDeviceGetLuid(char* luid, unsigned int* deviceNodeMask, CUdevice dev) {
  if (CUresult rc = CheckedDevice(dev); rc != CUDA_SUCCESS) return rc;
  if (luid == nullptr || deviceNodeMask == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuDeviceGetProperties(CUdevprop* prop, CUdevice dev) {
  if (CUresult rc = CheckedDevice(dev); rc != CUDA_SUCCESS) return rc;
  if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *prop = CUdevprop{};
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = 1024;
  prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 2147483647;
  prop->maxGridSize[1] = 65535;
  prop->maxGridSize[2] = 65535;
  prop->sharedMemPerBlock = 48 * 1024;
  prop->totalConstantMemory = 64 * 1024;
  prop->SIMDWidth = 32;
  prop->memPitch = 2147483647;
  prop->regsPerBlock = 65536;
  prop->clockRate = 1'980'000;
  prop->textureAlign = 512;
  return CUDA_SUCCESS;
}

}  // extern "C"
