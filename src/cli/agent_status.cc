#include "cli/agent_status.h"

#include <cstdio>
#include <sstream>
#include <vector>

#include "core/units.h"

namespace fgpu::cli {
namespace {

using nlohmann::json;

std::string Percent(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.0f%%", value);
  return text;
}

// Left-aligned columns as wide as their widest cell.
std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::ostringstream out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(widths[c] - row[c].size() + 2, ' ');
    }
    out << line << "\n";
  }
  return out.str();
}

std::string Short(const std::string& uuid) { return uuid.size() > 12 ? uuid.substr(0, 12) + "..." : uuid; }

}  // namespace

std::string RenderAgentStatus(const json& gpus, const json& slices, const std::map<std::string, double>* achieved) {
  std::vector<std::vector<std::string>> gpu_rows = {{"GPU", "NAME", "UUID", "MEMORY", "RESERVED", "COMPUTE", "SLICES"}};
  for (const json& gpu : gpus) {
    gpu_rows.push_back({std::to_string(gpu.value("index", 0)), gpu.value("name", ""), Short(gpu.value("uuid", "")),
                        FormatByteSize(gpu.value("memory_total", uint64_t{0})),
                        FormatByteSize(gpu.value("memory_reserved", uint64_t{0})),
                        Percent(gpu.value("compute_reserved", 0)) + " reserved",
                        std::to_string(gpu.value("slices", 0))});
  }
  std::vector<std::string> header = {"SLICE", "GPU", "TENANT", "TIER", "MEMORY USED / CAP", "COMPUTE", "PROCS"};
  if (achieved != nullptr) header.push_back("ACHIEVED");
  std::vector<std::vector<std::string>> slice_rows = {header};
  for (const json& slice : slices) {
    const std::string id = slice.value("id", "");
    std::vector<std::string> row = {
        id,
        Short(slice.value("gpu", "")),
        slice.value("tenant", ""),
        slice.value("tier", ""),
        FormatByteSize(slice.value("memory_used_bytes", uint64_t{0})) + " / " +
            FormatByteSize(slice.value("memory_bytes", uint64_t{0})),
        Percent(slice.value("compute", 0)) + " " + slice.value("compute_mode", ""),
        std::to_string(slice.value("processes", 0))};
    if (achieved != nullptr) {
      const auto it = achieved->find(id);
      row.push_back(it == achieved->end() ? "-" : Percent(it->second));
    }
    slice_rows.push_back(row);
  }
  std::string out = Table(gpu_rows) + "\n";
  out += slices.empty() ? "no slices\n" : Table(slice_rows);
  return out;
}

}  // namespace fgpu::cli
