// `attributes`: every device attribute fgpu declares, as this driver answers it — the
// simulated device's model set beside a real GPU's (scripts/gpu-check "side by side").
#include "probe/commands.h"
#include "probe/json_line.h"

namespace fgpu::probe {

namespace {

struct Attribute {
  const char* name;
  CUdevice_attribute id;
};

constexpr Attribute kAttributes[] = {
#define FGPU_PROBE_ATTRIBUTE_(name, value) {#name, name},
    FGPU_CUDA_DEVICE_ATTRIBUTE_LIST(FGPU_PROBE_ATTRIBUTE_)
#undef FGPU_PROBE_ATTRIBUTE_
};

}  // namespace

int RunAttributes(const Session& session) {
  const DriverTable& cu = session.cu();
  for (const Attribute& attribute : kAttributes) {
    int value = 0;
    // Asked directly, not through Check: an attribute this driver does not know is an answer
    // (CUDA_ERROR_INVALID_VALUE), not a failed run.
    const CUresult rc = cu.cuDeviceGetAttribute(&value, attribute.id, session.device());
    JsonLine line("attribute");
    line.Str("name", attribute.name).Int("id", attribute.id).Int("code", rc);
    if (rc == CUDA_SUCCESS) {
      line.Int("value", value);
    } else {
      line.Null("value");
    }
    line.Emit();
  }
  return kExitOk;
}

}  // namespace fgpu::probe
