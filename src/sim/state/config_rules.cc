#include "sim/state/config_rules.h"

#include "sim/state/mig_state.h"

#include <cstdio>
#include <set>

namespace fgpu::sim::internal {
namespace {

bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
char ToLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }
char ToUpper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }

// Matches `text` against `pattern`, where 'h' is a hex digit and anything else is literal.
bool MatchesHexPattern(std::string_view text, std::string_view pattern) {
  if (text.size() != pattern.size()) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (pattern[i] == 'h' ? !IsHex(text[i]) : text[i] != pattern[i]) return false;
  }
  return true;
}

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A fixed 128-bit pattern per index, so a device keeps its UUID across runs and hosts.
std::string DerivedUuid(size_t index) {
  const uint64_t hi = SplitMix64(0x66677075'73696d00ull + index);  // "fgpusim" + index
  const uint64_t lo = SplitMix64(hi ^ 0x5555'aaaa'5555'aaaaull);
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "GPU-%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                static_cast<unsigned>((hi >> 16) & 0xffff), static_cast<unsigned>(hi & 0xffff),
                static_cast<unsigned>(lo >> 48), static_cast<unsigned long long>(lo & 0xffff'ffff'ffffull));
  return buffer;
}

// Bus numbers 0x18, 0x1C, ...: candidate k; at most 32 are ever needed (16 given + 16 derived).
std::string DerivedPciBusId(size_t candidate) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "00000000:%02X:00.0", static_cast<unsigned>(0x18 + 4 * candidate));
  return buffer;
}

std::string IndexPath(size_t index) { return "devices[" + std::to_string(index) + "]"; }

}  // namespace

Status FieldError(const std::string& path, std::string_view problem) {
  std::string msg = "config: ";
  msg += path;
  msg += ": ";
  msg.append(problem);
  return Status::InvalidArgument(std::move(msg));
}

Result<std::string> NormalizeUuid(std::string_view text, const std::string& path) {
  if (!MatchesHexPattern(text, "GPU-hhhhhhhh-hhhh-hhhh-hhhh-hhhhhhhhhhhh")) {
    return FieldError(path, std::string("\"").append(text).append(
                                "\" is not a GPU UUID (expected GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, hex)"));
  }
  std::string out(text);
  for (size_t i = 4; i < out.size(); ++i) out[i] = ToLower(out[i]);
  return out;
}

Result<std::string> NormalizePciBusId(std::string_view text, const std::string& path) {
  std::string out;
  if (MatchesHexPattern(text, "hhhhhhhh:hh:hh.h")) {
    out = std::string(text);
  } else if (MatchesHexPattern(text, "hhhh:hh:hh.h")) {
    out = "0000" + std::string(text);
  } else {
    return FieldError(path,
                      std::string("\"").append(text).append("\" is not a PCI bus id (expected e.g. 00000000:19:00.0)"));
  }
  for (char& c : out) c = ToUpper(c);
  return out;
}

Status ValidateDeviceFields(const DeviceSpec& spec, const std::string& path) {
  if (spec.name.empty()) return FieldError(path + ".name", "must not be empty");
  if (spec.name.size() > kMaxDeviceNameBytes) {
    return FieldError(path + ".name", "longer than " + std::to_string(kMaxDeviceNameBytes) + " bytes");
  }
  for (char c : spec.name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return FieldError(path + ".name", "contains a control character");
  }
  const uint64_t g = spec.granularity;
  if (g < kMinGranularity || (g & (g - 1)) != 0) {
    return FieldError(path + ".granularity", std::to_string(g) + " bytes is not a power of two of at least 4 KiB");
  }
  if (spec.total_bytes < g) {
    return FieldError(path + ".memory", std::to_string(spec.total_bytes) + " bytes is less than the granularity (" +
                                            std::to_string(g) + " bytes)");
  }
  if (spec.total_bytes > kMaxDeviceMemory) return FieldError(path + ".memory", "more than 1 PiB");
  if (spec.context_overhead >= spec.total_bytes) {
    return FieldError(path + ".context_overhead", "must be less than the device memory (" +
                                                      std::to_string(spec.total_bytes) + " bytes)");
  }
  if (spec.sm_count < 1 || spec.sm_count > kMaxSmCount) {
    return FieldError(path + ".sm_count", std::to_string(spec.sm_count) + " is outside 1..1024");
  }
  if (!spec.mig.empty()) {
    const mig::ModelInfo* model = mig::ModelOfProduct(spec.name, spec.total_bytes);
    if (model == nullptr) {
      return FieldError(path + ".mig", "'" + spec.name + "' has no MIG (A100 40/80GB, H100 80GB or H200 141GB do)");
    }
    Result<std::vector<std::pair<const mig::Profile*, int>>> placed = PlaceMigList(*model, spec.mig);
    if (!placed.ok()) return FieldError(path + ".mig", placed.status().message());
  }
  if (spec.cc_major < 1 || spec.cc_major > 99 || spec.cc_minor < 0 || spec.cc_minor > 9) {
    return FieldError(path + ".compute_capability",
                      std::to_string(spec.cc_major) + "." + std::to_string(spec.cc_minor) +
                          " is not a compute capability (major 1..99, minor 0..9)");
  }
  return Status::Ok();
}

Status CompleteDeviceIdentities(std::vector<DeviceSpec>* devices, const std::vector<std::string>& paths) {
  auto path_of = [&](size_t i) { return i < paths.size() ? paths[i] : IndexPath(i); };
  if (devices->empty()) return FieldError("devices", "at least one device is required");
  if (devices->size() > static_cast<size_t>(kMaxSimDevices)) {
    return FieldError("devices", std::to_string(devices->size()) + " devices; at most " +
                                     std::to_string(kMaxSimDevices) + " are supported");
  }
  std::set<std::string> uuids;
  std::set<std::string> pci_ids;
  // Given identities first, so derived ones can avoid them.
  for (size_t i = 0; i < devices->size(); ++i) {
    DeviceSpec& d = (*devices)[i];
    if (!d.uuid.empty()) {
      Result<std::string> uuid = NormalizeUuid(d.uuid, path_of(i) + ".uuid");
      if (!uuid.ok()) return uuid.status();
      if (!uuids.insert(*uuid).second) return FieldError(path_of(i) + ".uuid", "duplicate UUID " + *uuid);
      d.uuid = *uuid;
    }
    if (!d.pci_bus_id.empty()) {
      Result<std::string> pci = NormalizePciBusId(d.pci_bus_id, path_of(i) + ".pci_bus_id");
      if (!pci.ok()) return pci.status();
      if (!pci_ids.insert(*pci).second) return FieldError(path_of(i) + ".pci_bus_id", "duplicate PCI bus id " + *pci);
      d.pci_bus_id = *pci;
    }
  }
  for (size_t i = 0; i < devices->size(); ++i) {
    DeviceSpec& d = (*devices)[i];
    if (d.uuid.empty()) {
      d.uuid = DerivedUuid(i);
      if (!uuids.insert(d.uuid).second) {
        return FieldError(path_of(i) + ".uuid", "the derived UUID " + d.uuid + " is already given to another device");
      }
    }
    if (d.pci_bus_id.empty()) {
      size_t candidate = i;
      while (pci_ids.count(DerivedPciBusId(candidate)) != 0) ++candidate;
      d.pci_bus_id = DerivedPciBusId(candidate);
      pci_ids.insert(d.pci_bus_id);
    }
  }
  return Status::Ok();
}

Status ValidateTimings(const SimConfig& config) {
  for (const auto& [name, ns] : config.kernel_wave_ns) {
    if (name.empty()) return FieldError("kernels", "a kernel name must not be empty");
    if (ns > kMaxKernelWaveNs) return FieldError("kernels." + name + ".wave_us", "longer than one hour");
  }
  if (config.default_kernel_wave_ns > kMaxKernelWaveNs) {
    return FieldError("default_kernel_wave_us", "longer than one hour");
  }
  if (config.utilization_period_ns < kMinUtilizationPeriodNs ||
      config.utilization_period_ns > kMaxUtilizationPeriodNs) {
    return FieldError("utilization_period_ms", "must be between 1 and 10000 ms");
  }
  return Status::Ok();
}

}  // namespace fgpu::sim::internal
