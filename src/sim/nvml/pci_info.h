// PCI identity of a simulated device: parsing the bus-id strings NVML accepts and
// filling nvmlPciInfo_t (v3 layout).
//
// Pure functions; thread-safe. Parsing never reads past the terminator and rejects
// anything that is not exactly one of the accepted forms.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/abi/nvml_types.h"
#include "sim/state/shared_devices.h"

namespace fgpu::sim::nvml {

struct PciAddress {
  uint32_t domain = 0;
  uint32_t bus = 0;
  uint32_t device = 0;
  uint32_t function = 0;
  bool operator==(const PciAddress&) const = default;
};

// The forms nvmlDeviceGetHandleByPciBusId_v2 accepts, all numbers hexadecimal:
// "domain:bus:device.function", "domain:bus:device" and "bus:device.function".
// Ranges: bus <= 0xff, device <= 0x1f, function <= 7. nullopt if malformed.
std::optional<PciAddress> ParsePciBusId(std::string_view text);

// Fills `out` for `spec`, whose pci_bus_id must parse (the config loader derives it).
// pciDeviceId is NVIDIA's vendor id with the device id of known product names, 0 otherwise.
// False if spec.pci_bus_id does not parse.
bool FillPciInfo(const DeviceSpec& spec, nvmlPciInfo_t* out);

}  // namespace fgpu::sim::nvml
