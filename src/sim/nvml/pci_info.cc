#include "sim/nvml/pci_info.h"

#include <cstdio>
#include <cstring>
#include <vector>

namespace fgpu::sim::nvml {
namespace {

constexpr uint32_t kNvidiaVendorId = 0x10DE;

// PCI device ids of the products a configuration is likely to name (public PCI ID
// database). Unknown names report device id 0: the simulator does not invent one.
struct KnownProduct {
  const char* name;
  uint32_t device_id;
};
constexpr KnownProduct kKnownProducts[] = {
    {"NVIDIA H100 80GB HBM3", 0x2330},
    {"NVIDIA A100-SXM4-40GB", 0x20B0},
    {"NVIDIA A100-SXM4-80GB", 0x20B2},
    {"NVIDIA L4", 0x27B8},
};

// Parses 1..max_digits hex digits as a whole field.
std::optional<uint32_t> ParseHexField(std::string_view field, size_t max_digits) {
  if (field.empty() || field.size() > max_digits) return std::nullopt;
  uint32_t value = 0;
  for (char c : field) {
    uint32_t digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<uint32_t>(c - 'A' + 10);
    } else {
      return std::nullopt;
    }
    value = value * 16 + digit;
  }
  return value;
}

std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == separator) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

}  // namespace

std::optional<PciAddress> ParsePciBusId(std::string_view text) {
  const std::vector<std::string_view> colon_parts = Split(text, ':');
  if (colon_parts.size() != 2 && colon_parts.size() != 3) return std::nullopt;
  const std::vector<std::string_view> dot_parts = Split(colon_parts.back(), '.');
  if (dot_parts.size() > 2) return std::nullopt;
  const bool has_domain = colon_parts.size() == 3;
  const bool has_function = dot_parts.size() == 2;
  if (!has_domain && !has_function) return std::nullopt;  // "bus:device" is not accepted

  PciAddress address;
  if (has_domain) {
    auto domain = ParseHexField(colon_parts[0], 8);
    if (!domain) return std::nullopt;
    address.domain = *domain;
  }
  auto bus = ParseHexField(colon_parts[colon_parts.size() - 2], 2);
  auto device = ParseHexField(dot_parts[0], 2);
  if (!bus || !device || *device > 0x1F) return std::nullopt;
  address.bus = *bus;
  address.device = *device;
  if (has_function) {
    auto function = ParseHexField(dot_parts[1], 1);
    if (!function || *function > 7) return std::nullopt;
    address.function = *function;
  }
  return address;
}

bool FillPciInfo(const DeviceSpec& spec, nvmlPciInfo_t* out) {
  const std::optional<PciAddress> address = ParsePciBusId(spec.pci_bus_id);
  if (!address) return false;
  std::memset(out, 0, sizeof(*out));
  // The legacy field holds a 16-bit domain: 12 characters and the terminator.
  std::snprintf(out->busIdLegacy, sizeof(out->busIdLegacy), "%04X:%02X:%02X.%X", address->domain & 0xFFFFu,
                address->bus, address->device, address->function);
  std::snprintf(out->busId, sizeof(out->busId), "%08X:%02X:%02X.%X", address->domain, address->bus,
                address->device, address->function);
  out->domain = address->domain;
  out->bus = address->bus;
  out->device = address->device;
  uint32_t device_id = 0;
  for (const KnownProduct& product : kKnownProducts) {
    if (spec.name == product.name) device_id = product.device_id;
  }
  out->pciDeviceId = (device_id << 16) | kNvidiaVendorId;
  out->pciSubSystemId = 0;  // not modelled
  return true;
}

}  // namespace fgpu::sim::nvml
