// `info`: what a CUDA program learns about its device, and NVML's view of the same
// device, in one line.
#include <cstdio>
#include <string>

#include "probe/commands.h"
#include "probe/json_line.h"
#include "probe/nvml_query.h"

namespace fgpu::probe {

namespace {

constexpr int kNameLength = 256;

// As NVML prints it: "GPU-" and the 16 bytes in lowercase hex, grouped 8-4-4-4-12.
std::string FormatGpuUuid(const CUuuid& uuid) {
  std::string text = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text.push_back('-');
    char hex[3];
    std::snprintf(hex, sizeof(hex), "%02x", static_cast<unsigned char>(uuid.bytes[i]));
    text.append(hex);
  }
  return text;
}

}  // namespace

int RunInfo(const Session& session) {
  const CUdevice device = session.device();
  int driver_version = 0;
  int device_count = 0;
  char name[kNameLength] = {};
  CUuuid uuid{};
  size_t total_mem = 0;
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  int sm_count = 0;
  int cc_major = 0;
  int cc_minor = 0;
  if (!FGPU_PROBE_CALL(session, cuDriverGetVersion, &driver_version) ||
      !FGPU_PROBE_CALL(session, cuDeviceGetCount, &device_count) ||
      !FGPU_PROBE_CALL(session, cuDeviceGetName, name, kNameLength - 1, device) ||
      !FGPU_PROBE_CALL(session, cuDeviceGetUuid_v2, &uuid, device) ||
      !FGPU_PROBE_CALL(session, cuDeviceTotalMem_v2, &total_mem, device) ||
      !FGPU_PROBE_CALL(session, cuMemGetInfo_v2, &free_bytes, &total_bytes) ||
      !FGPU_PROBE_CALL(session, cuDeviceGetAttribute, &sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                       device) ||
      !FGPU_PROBE_CALL(session, cuDeviceGetAttribute, &cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                       device) ||
      !FGPU_PROBE_CALL(session, cuDeviceGetAttribute, &cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                       device)) {
    return kExitCudaError;
  }
  const std::string uuid_text = FormatGpuUuid(uuid);
  JsonLine line("info");
  line.Str("lookup", LookupModeName(session.cu().mode))
      .Int("driver_version", driver_version)
      .Int("device", session.ordinal())
      .Int("device_count", device_count)
      .Str("name", name)
      .Str("uuid", uuid_text)
      .Uint("total_mem", total_mem);
  line.BeginObject("mem_get_info").Uint("free", free_bytes).Uint("total", total_bytes).EndObject();
  line.Int("sm_count", sm_count).Str("cc", std::to_string(cc_major) + "." + std::to_string(cc_minor));
  AppendNvmlFacts(uuid_text, &line);
  line.Emit();
  return kExitOk;
}

}  // namespace fgpu::probe
