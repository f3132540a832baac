#include "cli/agent_status.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
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

std::string Seconds(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1fs", value);
  return text;
}

bool Starved(const json& slice) {
  const auto it = slice.find("starved");
  return it != slice.end() && it->is_boolean() && it->get<bool>();
}

// What a reader should notice about a slice: starved (below its share while it waits in the
// compute gate), or a ledger the agent cannot read (its usage is unknown).
std::string SliceNote(const json& slice) {
  std::vector<std::string> notes;
  if (Starved(slice)) notes.push_back("STARVED");
  const auto readable = slice.find("ledger_readable");
  if (readable != slice.end() && readable->is_boolean() && !readable->get<bool>()) notes.push_back("ledger unreadable");
  std::string text;
  for (const std::string& note : notes) text += (text.empty() ? "" : ", ") + note;
  return text;
}

// A Kubernetes slice's pod: "namespace/pod" and its claim in brackets; "" for any other slice.
std::string PodOf(const json& slice) {
  const std::string pod = slice.value("pod", "");
  if (pod.empty()) return "";
  const std::string claim = slice.value("claim", "");
  return slice.value("namespace", "") + "/" + pod + (claim.empty() ? "" : " (" + claim + ")");
}

// Below the table: which slices are starved and what that means.
std::string StarvedLine(const json& slices) {
  std::string ids;
  for (const json& slice : slices) {
    if (Starved(slice)) ids += (ids.empty() ? "" : ", ") + slice.value("id", "");
  }
  if (ids.empty()) return "";
  return "\nSTARVED: " + ids + " waited in the compute gate yet got less than its share (docs/agent.md, stop-loss)\n";
}

}  // namespace

std::string RenderSliceTable(const json& slices, const std::map<std::string, double>* achieved) {
  if (slices.empty()) return "no slices\n";
  // Fields an older agent does not send get no column, rather than a column of zeros.
  const bool throttled = std::any_of(slices.begin(), slices.end(), [](const json& slice) {
    return slice.contains("compute_throttled_seconds");
  });
  // Only where a slice serves a Kubernetes pod: Slurm and fgpu run slices keep their table.
  const bool pods = std::any_of(slices.begin(), slices.end(), [](const json& slice) { return !PodOf(slice).empty(); });
  std::vector<std::string> header = {"SLICE", "GPU", "TENANT", "TIER", "MEMORY USED / CAP", "COMPUTE", "PROCS"};
  if (pods) header.insert(header.begin() + 3, "POD");
  if (achieved != nullptr) header.push_back("ACHIEVED");
  if (throttled) header.push_back("THROTTLED");
  header.push_back("NOTE");
  std::vector<std::vector<std::string>> rows = {header};
  bool any_note = false;
  for (const json& slice : slices) {
    const std::string id = slice.value("id", "");
    std::vector<std::string> row = {
        id,
        Short(slice.value("gpu", "")),
        slice.value("tenant", ""),
        slice.value("tier", ""),
        (slice.contains("memory_used_bytes") ? FormatByteSize(slice.value("memory_used_bytes", uint64_t{0})) : "-") +
            " / " + FormatByteSize(slice.value("memory_bytes", uint64_t{0})),
        Percent(slice.value("compute", 0)) + " " + slice.value("compute_mode", ""),
        slice.contains("processes") ? std::to_string(slice.value("processes", 0)) : "-"};
    if (pods) row.insert(row.begin() + 3, PodOf(slice));
    if (achieved != nullptr) {
      const auto it = achieved->find(id);
      row.push_back(it == achieved->end() ? "-" : Percent(it->second));
    }
    if (throttled) row.push_back(Seconds(slice.value("compute_throttled_seconds", 0.0)));
    row.push_back(SliceNote(slice));
    any_note = any_note || !row.back().empty();
    rows.push_back(row);
  }
  if (!any_note) {
    for (auto& row : rows) row.pop_back();
  }
  return Table(rows);
}

std::string RenderAgentStatus(const json& gpus, const json& slices, const std::map<std::string, double>* achieved) {
  std::vector<std::vector<std::string>> gpu_rows = {{"GPU", "NAME", "UUID", "MEMORY", "RESERVED", "COMPUTE", "SLICES"}};
  for (const json& gpu : gpus) {
    gpu_rows.push_back({std::to_string(gpu.value("index", 0)), gpu.value("name", ""), Short(gpu.value("uuid", "")),
                        FormatByteSize(gpu.value("memory_total", uint64_t{0})),
                        FormatByteSize(gpu.value("memory_reserved", uint64_t{0})),
                        Percent(gpu.value("compute_reserved", 0)) + " reserved",
                        std::to_string(gpu.value("slices", 0))});
  }
  std::string out = Table(gpu_rows) + "\n" + RenderSliceTable(slices, achieved);
  const std::string starved = StarvedLine(slices);
  if (!starved.empty()) out += starved;
  return out;
}

std::string TopHeading(std::time_t now, double interval_s) {
  char stamp[64];
  std::tm local{};
  localtime_r(&now, &local);
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S %z", &local);
  char every[32];
  std::snprintf(every, sizeof(every), "%g", interval_s);
  return std::string("fgpu top  ") + stamp + "  (every " + every + " s; ACHIEVED over the last interval)\n\n";
}

std::string RenderSliceDetails(const json& slice) {
  std::ostringstream out;
  for (const auto& [key, value] : slice.items()) {
    if (key == "env" && value.is_object()) {
      for (const auto& [name, setting] : value.items()) {
        out << "env." << name << ": " << (setting.is_string() ? setting.get<std::string>() : setting.dump()) << "\n";
      }
    } else if ((key == "memory_bytes" || key == "memory_used_bytes") && value.is_number_unsigned()) {
      out << key << ": " << FormatByteSize(value.get<uint64_t>()) << " (" << value.dump() << ")\n";
    } else {
      out << key << ": " << (value.is_string() ? value.get<std::string>() : value.dump()) << "\n";
    }
  }
  return out.str();
}

std::string DescribeFreeRoom(const json& gpus) {
  std::string text;
  for (const json& gpu : gpus) {
    if (!text.empty()) text += "; ";
    text += "GPU " + std::to_string(gpu.value("index", 0)) + ": ";
    const std::string fenced = gpu.value("fenced", "");
    if (gpu.value("exclusive", false)) {
      text += "exclusive";
    } else if (!fenced.empty()) {
      text += "takes no new slices for now (" + fenced + ")";
    } else {
      const uint64_t total = gpu.value("memory_total", uint64_t{0});
      const uint64_t reserved = std::min(total, gpu.value("memory_reserved", uint64_t{0}));
      text += FormatByteSize(total - reserved) + " and " + std::to_string(100 - gpu.value("compute_reserved", 0)) +
              " % compute free";
    }
  }
  return text.empty() ? "no GPU" : text;
}

bool LargerThanEveryGpu(const json& gpus, uint64_t memory, const std::string& device) {
  for (const json& gpu : gpus) {
    const bool named = device.empty() || device == gpu.value("uuid", "") || device == std::to_string(gpu.value("index", -1));
    if (named && memory <= gpu.value("memory_total", uint64_t{0})) return false;
  }
  return true;
}

}  // namespace fgpu::cli
