#include "cli/status_report.h"

#include <algorithm>
#include <sstream>

#include "core/units.h"

namespace fgpu::cli {

namespace {

// Left-aligned columns sized to their widest cell; two spaces between columns.
std::string RenderColumns(const std::vector<std::vector<std::string>>& rows, const std::string& indent) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t column = 0; column < row.size(); ++column) {
      widths[column] = std::max(widths[column], row[column].size());
    }
  }
  std::ostringstream out;
  for (const auto& row : rows) {
    std::string line = indent;
    for (size_t column = 0; column < row.size(); ++column) {
      line += row[column];
      if (column + 1 < row.size()) line += std::string(widths[column] - row[column].size() + 2, ' ');
    }
    out << line << "\n";
  }
  return out.str();
}

}  // namespace

std::string RenderStatusTable(const StatusReport& report) {
  std::ostringstream out;
  out << "segment " << report.segment << " ("
      << (report.config_path.empty() ? "default configuration" : "config " + report.config_path) << ")\n";
  if (!report.segment_exists) {
    out << "the segment does not exist yet: no program has used the simulated GPU, every device is idle\n";
  }
  for (const DeviceReport& device : report.devices) {
    std::vector<std::vector<std::string>> rows = {
        {"GPU", "NAME", "UUID", "MEMORY USED", "TOTAL", "FREE", "UTIL"},
        {std::to_string(device.index), device.name, device.uuid, FormatByteSize(device.memory.used),
         FormatByteSize(device.memory.total), FormatByteSize(device.memory.free),
         std::to_string(device.utilization_percent) + "%"}};
    out << RenderColumns(rows, "");
    if (device.processes.empty()) {
      out << "    no processes hold memory\n";
      continue;
    }
    std::vector<std::vector<std::string>> process_rows = {{"PID", "USED"}};
    for (const sim::ProcessMemory& process : device.processes) {
      process_rows.push_back({std::to_string(process.pid), FormatByteSize(process.used_bytes)});
    }
    out << RenderColumns(process_rows, "    ");
  }
  return out.str();
}

nlohmann::ordered_json StatusJson(const StatusReport& report) {
  nlohmann::ordered_json devices = nlohmann::ordered_json::array();
  for (const DeviceReport& device : report.devices) {
    nlohmann::ordered_json processes = nlohmann::ordered_json::array();
    for (const sim::ProcessMemory& process : device.processes) {
      processes.push_back({{"pid", process.pid}, {"used", process.used_bytes}});
    }
    devices.push_back(
        {{"index", device.index},
         {"name", device.name},
         {"uuid", device.uuid},
         {"memory",
          {{"total", device.memory.total}, {"used", device.memory.used}, {"free", device.memory.free}}},
         {"utilization_gpu", device.utilization_percent},
         {"processes", processes}});
  }
  return {{"segment", report.segment},
          {"config", report.config_path.empty() ? nlohmann::ordered_json(nullptr)
                                                : nlohmann::ordered_json(report.config_path)},
          {"segment_exists", report.segment_exists},
          {"devices", devices}};
}

}  // namespace fgpu::cli
