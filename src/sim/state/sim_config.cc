// DefaultSimConfig, ValidateSimConfig and ConfigFingerprint (the JSON reader is in
// config_json.cc).
#include "sim/state/config_rules.h"
#include "sim/state/fnv1a.h"
#include "sim/state/shared_devices.h"

namespace fgpu::sim {

SimConfig DefaultSimConfig() {
  SimConfig config;
  config.devices.emplace_back();
  // Cannot fail for the defaults; fills the derived UUID and PCI id.
  (void)internal::CompleteDeviceIdentities(&config.devices, {});
  return config;
}

Status ValidateSimConfig(const SimConfig& config) {
  if (config.devices.empty()) return internal::FieldError("devices", "at least one device is required");
  for (size_t i = 0; i < config.devices.size(); ++i) {
    Status s = internal::ValidateDeviceFields(config.devices[i], "devices[" + std::to_string(i) + "]");
    if (!s.ok()) return s;
  }
  std::vector<DeviceSpec> devices = config.devices;
  Status s = internal::CompleteDeviceIdentities(&devices, {});
  if (!s.ok()) return s;
  return internal::ValidateTimings(config);
}

uint64_t ConfigFingerprint(const SimConfig& config) {
  // Hash identities as the segment will see them: derived ones filled in, given ones
  // normalised. An invalid config is hashed as given (it never reaches a segment).
  std::vector<DeviceSpec> devices = config.devices;
  if (!internal::CompleteDeviceIdentities(&devices, {}).ok()) devices = config.devices;
  Fnv1a h;
  h.AddString("fgpu-sim-config");
  h.AddU64(devices.size());
  for (const DeviceSpec& d : devices) {
    h.AddString(d.name);
    h.AddString(d.uuid);
    h.AddString(d.pci_bus_id);
    h.AddU64(d.total_bytes);
    h.AddU64(static_cast<uint64_t>(d.sm_count));
    h.AddU64(static_cast<uint64_t>(d.cc_major));
    h.AddU64(static_cast<uint64_t>(d.cc_minor));
    h.AddU64(d.granularity);
    h.AddU64(d.context_overhead);
    h.AddU64(d.mig.size());
    for (const std::string& profile : d.mig) h.AddString(profile);
  }
  // Kernel durations and the NVML period are per-process behaviour, not device state:
  // processes that disagree on them still share one device.
  return h.value();
}

}  // namespace fgpu::sim
