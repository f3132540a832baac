// DefaultSimConfig, ValidateSimConfig and ConfigFingerprint (the JSON reader is in
// config_json.cc).
#include "sim/state/config_rules.h"
#include "sim/state/shared_devices.h"

namespace fgpu::sim {
namespace {

// FNV-1a: stable across builds, compilers and hosts, unlike std::hash.
class Fnv1a {
 public:
  void Add(const void* data, size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) {
      hash_ ^= bytes[i];
      hash_ *= 0x100000001b3ull;
    }
  }
  void AddU64(uint64_t v) {
    unsigned char bytes[8];
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(v >> (8 * i));  // fixed byte order
    Add(bytes, sizeof(bytes));
  }
  void AddString(const std::string& s) {
    AddU64(s.size());  // length prefix: ("ab","c") and ("a","bc") differ
    Add(s.data(), s.size());
  }
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ull;
};

}  // namespace

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
