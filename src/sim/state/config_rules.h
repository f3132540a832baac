// Rules a simulated device configuration must satisfy, shared by the JSON parser
// (config_json.cc) and ValidateSimConfig (for configs built in code).
//
// Every function is pure and thread-safe; errors are InvalidArgument messages that start
// with the field's path ("devices[2].granularity: ...").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sim/state/shared_devices.h"

namespace fgpu::sim::internal {

inline constexpr size_t kMaxDeviceNameBytes = 95;  // NVML's v2 name buffer is 96 with the NUL
inline constexpr uint64_t kMinGranularity = 4096;
inline constexpr int kMaxSmCount = 1024;
inline constexpr uint64_t kMaxKernelWaveNs = 3'600'000'000'000ull;      // one hour
inline constexpr uint64_t kMinUtilizationPeriodNs = 1'000'000ull;       // 1 ms
inline constexpr uint64_t kMaxUtilizationPeriodNs = 10'000'000'000ull;  // inside the 12.8 s ring

Status FieldError(const std::string& path, std::string_view problem);

// "GPU-" followed by 8-4-4-4-12 hex digits, in either case. Returns the lowercase form.
Result<std::string> NormalizeUuid(std::string_view text, const std::string& path);
// "DDDDDDDD:BB:DD.F" (or the 4-digit-domain form CUDA prints). Returns NVML's form: an
// 8-digit domain, uppercase hex.
Result<std::string> NormalizePciBusId(std::string_view text, const std::string& path);

// Checks one device's own fields (not identity uniqueness). `path` is "devices[i]".
Status ValidateDeviceFields(const DeviceSpec& spec, const std::string& path);

// Normalises given UUIDs / PCI ids, derives the missing ones (deterministic per index,
// never equal to a given one), checks the device count and that no two devices share
// an identity. `paths[i]` names where device i came from, for messages.
Status CompleteDeviceIdentities(std::vector<DeviceSpec>* devices, const std::vector<std::string>& paths);

// Limits of the non-device fields.
Status ValidateTimings(const SimConfig& config);

}  // namespace fgpu::sim::internal
