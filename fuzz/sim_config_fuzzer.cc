// Fuzzes sim::ParseSimConfig, the simulator's JSON device configuration (docs/sim-config.md),
// which runs inside every process that loads the simulated libcuda.so.1 or libnvidia-ml.so.1 and
// whose result feeds C ABIs: it must refuse with a Status, never throw or crash.
//
// Input: the configuration text, as FGPU_SIM_CONFIG's file would hold it.
//
// Checked on every input:
// - A refusal is InvalidArgument with a message (Internal only for std::bad_alloc).
// - An accepted config has 1..kMaxSimDevices devices and passes ValidateSimConfig (shared_devices.h:
//   "A config from ParseSimConfig always passes").
// - Written back as JSON with every field explicit (the derived UUIDs and PCI bus ids included), it
//   parses to the same config with the same fingerprint: the parser accepts what it produces.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/state/shared_devices.h"

namespace {

using fgpu::StatusCode;
using fgpu::sim::DeviceSpec;
using fgpu::sim::SimConfig;

[[noreturn]] void Fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "sim_config_fuzzer: %s %s\n", what, detail.c_str());
  std::abort();
}

void Expect(bool condition, const char* what, const std::string& detail = "") {
  if (!condition) Fail(what, detail);
}

// Nanoseconds as the microseconds the format takes (fractional where needed: 1 ns is 0.001 us).
nlohmann::json Micros(uint64_t ns) {
  if (ns % 1000 == 0) return ns / 1000;
  return static_cast<double>(ns) / 1000.0;
}

std::string Explicit(const SimConfig& config) {
  nlohmann::json devices = nlohmann::json::array();
  for (const DeviceSpec& device : config.devices) {
    devices.push_back(
        {{"name", device.name},
         {"uuid", device.uuid},
         {"pci_bus_id", device.pci_bus_id},
         {"memory", device.total_bytes},
         {"sm_count", device.sm_count},
         {"compute_capability", std::to_string(device.cc_major) + "." + std::to_string(device.cc_minor)},
         {"granularity", device.granularity},
         {"context_overhead", device.context_overhead},
         {"mig", device.mig}});
  }
  nlohmann::json kernels = nlohmann::json::object();
  for (const auto& [name, ns] : config.kernel_wave_ns) kernels[name] = {{"wave_us", Micros(ns)}};
  const nlohmann::json root = {{"devices", devices},
                               {"kernels", kernels},
                               {"default_kernel_wave_us", Micros(config.default_kernel_wave_ns)},
                               {"utilization_period_ms", config.utilization_period_ns / 1'000'000}};
  return root.dump();
}

void ExpectSame(const SimConfig& a, const SimConfig& b, const std::string& text) {
  Expect(a.devices.size() == b.devices.size(), "device count changed", text);
  for (size_t index = 0; index < a.devices.size(); ++index) {
    const DeviceSpec& x = a.devices[index];
    const DeviceSpec& y = b.devices[index];
    Expect(x.name == y.name && x.uuid == y.uuid && x.pci_bus_id == y.pci_bus_id &&
               x.total_bytes == y.total_bytes && x.sm_count == y.sm_count && x.cc_major == y.cc_major &&
               x.cc_minor == y.cc_minor && x.granularity == y.granularity &&
               x.context_overhead == y.context_overhead && x.mig == y.mig,
           "a device changed", "devices[" + std::to_string(index) + "] in " + text);
  }
  Expect(a.kernel_wave_ns == b.kernel_wave_ns, "kernels changed", text);
  Expect(a.default_kernel_wave_ns == b.default_kernel_wave_ns, "default_kernel_wave_us changed", text);
  Expect(a.utilization_period_ns == b.utilization_period_ns, "utilization_period_ms changed", text);
  Expect(fgpu::sim::ConfigFingerprint(a) == fgpu::sim::ConfigFingerprint(b), "fingerprint changed", text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const fgpu::Result<SimConfig> config = fgpu::sim::ParseSimConfig(text);
  if (!config.ok()) {
    const StatusCode code = config.status().code();
    Expect(code == StatusCode::kInvalidArgument || code == StatusCode::kInternal, "unexpected status",
           config.status().message());
    Expect(!config.status().message().empty(), "a refusal without a message");
    return 0;
  }
  Expect(!config->devices.empty() && config->devices.size() <= static_cast<size_t>(fgpu::sim::kMaxSimDevices),
         "device count out of range", std::to_string(config->devices.size()));
  const fgpu::Status valid = fgpu::sim::ValidateSimConfig(*config);
  Expect(valid.ok(), "ParseSimConfig accepted what ValidateSimConfig refuses:", valid.message());

  const std::string written = Explicit(*config);
  const fgpu::Result<SimConfig> again = fgpu::sim::ParseSimConfig(written);
  Expect(again.ok(),
         "the explicit form of an accepted config is refused:", again.status().message() + " in " + written);
  ExpectSame(*config, *again, written);
  return 0;
}
