// StatusReport: what `fgpu sim status` shows, gathered from the segment and rendered as a
// table for people or as one JSON document for scripts. Rendering is pure, so its format
// is tested without a segment.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/state/shared_devices.h"

namespace fgpu::cli {

struct DeviceReport {
  int index = 0;
  std::string name;
  std::string uuid;
  sim::MemoryInfo memory;
  uint32_t utilization_percent = 0;           // over the configured NVML sample period
  std::vector<sim::ProcessMemory> processes;  // live processes holding device memory
};

struct StatusReport {
  std::string segment;
  std::string config_path;  // empty = the built-in default configuration
  // False when no process has attached yet: the devices are shown idle, from the config.
  bool segment_exists = false;
  std::vector<DeviceReport> devices;
};

std::string RenderStatusTable(const StatusReport& report);
// {"segment":..,"config":..|null,"segment_exists":..,"devices":[{"index":..,"name":..,"uuid":..,
//  "memory":{"total":..,"used":..,"free":..},"utilization_gpu":..,"processes":[{"pid":..,"used":..}]}]}
nlohmann::ordered_json StatusJson(const StatusReport& report);

}  // namespace fgpu::cli
