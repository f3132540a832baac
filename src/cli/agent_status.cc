#include "cli/agent_status.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

#include "api/codec.h"
#include "core/units.h"

namespace fgpu::cli {
namespace {

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

// What a reader should notice about a slice: starved (below its share while it waits in the
// compute gate), or a ledger the agent cannot read (its usage is unknown).
std::string SliceNote(const api::Slice& slice) {
  std::vector<std::string> notes;
  if (slice.starved) notes.push_back("STARVED");
  if (slice.usage && !slice.usage->ledger_readable) notes.push_back("ledger unreadable");
  std::string text;
  for (const std::string& note : notes) text += (text.empty() ? "" : ", ") + note;
  return text;
}

// A Kubernetes slice's pod: "namespace/pod" and its claim in brackets; "" for any other slice.
std::string PodOf(const api::Slice& slice) {
  const api::Labels& labels = slice.labels;
  if (labels.pod.empty()) return "";
  return labels.kube_namespace + "/" + labels.pod + (labels.claim.empty() ? "" : " (" + labels.claim + ")");
}

// Below the table: which slices are starved and what that means.
std::string StarvedLine(const std::vector<api::Slice>& slices) {
  std::string ids;
  for (const api::Slice& slice : slices) {
    if (slice.starved) ids += (ids.empty() ? "" : ", ") + slice.id;
  }
  if (ids.empty()) return "";
  return "\nSTARVED: " + ids + " waited in the compute gate yet got less than its share (docs/agent.md, stop-loss)\n";
}

// A size field as the API names it (memory_bytes, memory_used_bytes): shown also in GiB.
bool IsSize(const std::string& key) {
  static constexpr std::string_view kSuffix = "_bytes";
  return key.size() > kSuffix.size() && key.compare(key.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0;
}

std::string Text(const nlohmann::json& value) { return value.is_string() ? value.get<std::string>() : value.dump(); }

}  // namespace

std::string RenderSliceTable(const std::vector<api::Slice>& slices, const std::map<std::string, double>* achieved) {
  if (slices.empty()) return "no slices\n";
  // Fields an older agent does not send get no column, rather than a column of zeros.
  const bool throttled = std::any_of(slices.begin(), slices.end(), [](const api::Slice& slice) {
    return slice.compute_throttled_seconds.has_value();
  });
  // Only where a slice serves a Kubernetes pod: Slurm and fgpu run slices keep their table.
  const bool pods =
      std::any_of(slices.begin(), slices.end(), [](const api::Slice& slice) { return !PodOf(slice).empty(); });
  std::vector<std::string> header = {"SLICE", "GPU", "TENANT", "TIER", "MEMORY USED / CAP", "COMPUTE", "PROCS"};
  if (pods) header.insert(header.begin() + 3, "POD");
  if (achieved != nullptr) header.push_back("ACHIEVED");
  if (throttled) header.push_back("THROTTLED");
  header.push_back("NOTE");
  std::vector<std::vector<std::string>> rows = {header};
  bool any_note = false;
  for (const api::Slice& slice : slices) {
    // Read without ?usage=1 (or from an agent that cannot say): what it uses is unknown.
    const std::optional<api::SliceUsage>& usage = slice.usage;
    std::vector<std::string> row = {
        slice.id,
        Short(slice.gpu),
        slice.tenant,
        slice.tier,
        (usage ? FormatByteSize(usage->memory_used_bytes) : "-") + " / " + FormatByteSize(slice.memory_bytes),
        Percent(slice.compute) + " " + slice.compute_mode,
        usage ? std::to_string(usage->processes) : "-"};
    if (pods) row.insert(row.begin() + 3, PodOf(slice));
    if (achieved != nullptr) {
      const auto it = achieved->find(slice.id);
      row.push_back(it == achieved->end() ? "-" : Percent(it->second));
    }
    if (throttled) row.push_back(Seconds(slice.compute_throttled_seconds.value_or(0.0)));
    row.push_back(SliceNote(slice));
    any_note = any_note || !row.back().empty();
    rows.push_back(row);
  }
  if (!any_note) {
    for (auto& row : rows) row.pop_back();
  }
  return Table(rows);
}

std::string RenderQueueAndQuotas(const std::vector<api::QueueItem>& queue, const std::vector<api::Quota>& quotas) {
  std::string out;
  if (!queue.empty()) {
    std::vector<std::vector<std::string>> rows = {{"#", "TICKET", "UID", "MEMORY", "COMPUTE", "TIER", "TENANT", "WAITED", "WHY"}};
    for (const api::QueueItem& item : queue) {
      rows.push_back({std::to_string(item.position), item.ticket.empty() ? "-" : item.ticket, std::to_string(item.owner_uid),
                      FormatByteSize(item.memory_bytes), item.compute ? Percent(*item.compute) : "auto", item.tier,
                      item.tenant, std::to_string(item.waited_ms / 1000) + " s", item.reason});
    }
    out += "\nQUEUE\n" + Table(rows);
  }
  if (!quotas.empty()) {
    // An unlimited quota (no borrowing limit) is sent as a huge number: shown as "-".
    const auto limit = [](uint64_t value, bool bytes) {
      if (bytes ? value >= (uint64_t{1} << 60) : value >= UINT32_MAX / 2) return std::string("-");
      return bytes ? FormatByteSize(value) : Percent(static_cast<double>(value));
    };
    std::vector<std::vector<std::string>> rows = {{"QUOTA", "PARENT", "MEMORY USED", "NOMINAL", "LIMIT", "COMPUTE USED", "NOMINAL", "LIMIT"}};
    for (const api::Quota& quota : quotas) {
      rows.push_back({quota.name, quota.parent.empty() ? "-" : quota.parent, FormatByteSize(quota.memory_used),
                      FormatByteSize(quota.memory_nominal), limit(quota.memory_limit, true), Percent(quota.compute_used),
                      Percent(quota.compute_nominal), limit(quota.compute_limit, false)});
    }
    out += "\nQUOTAS\n" + Table(rows);
  }
  return out;
}

namespace {

// "shared", "exclusive", "mig" (a GPU in MIG mode), "mig dynamic" (one whose instances are made
// per request), "mig 3g.40gb@0" (one of its instances).
std::string ClassOf(const api::Gpu& gpu) {
  if (!gpu.parent_uuid.empty()) return "mig " + gpu.mig_profile + "@" + std::to_string(gpu.mig_start);
  if (gpu.mig_dynamic) return "mig dynamic";
  return gpu.isolation.empty() ? std::string("shared") : gpu.isolation;
}

}  // namespace

std::string RenderAgentStatus(const std::vector<api::Gpu>& gpus, const std::vector<api::Slice>& slices,
                              const std::map<std::string, double>* achieved) {
  // The class column only where some GPU is not shared: a plain node's table stays as it was.
  const bool classes = std::any_of(gpus.begin(), gpus.end(), [](const api::Gpu& gpu) { return ClassOf(gpu) != "shared"; });
  std::vector<std::vector<std::string>> gpu_rows = {{"GPU", "NAME", "UUID", "MEMORY", "RESERVED", "COMPUTE", "SLICES"}};
  if (classes) gpu_rows[0].insert(gpu_rows[0].begin() + 1, "CLASS");
  std::string notes;
  for (const api::Gpu& gpu : gpus) {
    const bool mig_gpu = gpu.isolation == "mig" && gpu.parent_uuid.empty();
    std::vector<std::string> row = {std::to_string(gpu.index), gpu.name, Short(gpu.uuid), FormatByteSize(gpu.memory_total),
                                    mig_gpu ? "-" : FormatByteSize(gpu.memory_reserved),
                                    mig_gpu ? "in its instances" : Percent(gpu.compute_reserved) + " reserved",
                                    std::to_string(gpu.slices)};
    if (classes) row.insert(row.begin() + 1, ClassOf(gpu));
    gpu_rows.push_back(std::move(row));
    if (!gpu.mig_note.empty()) notes += "GPU " + std::to_string(gpu.index) + ": " + gpu.mig_note + "\n";
  }
  std::string out = Table(gpu_rows) + notes + "\n" + RenderSliceTable(slices, achieved);
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

std::string RenderSliceDetails(const api::Slice& slice) {
  // The slice as the codec writes it: the agent's own field names, in the order it writes them.
  const nlohmann::json fields = api::ToJson(slice);
  std::ostringstream out;
  for (auto field = fields.begin(); field != fields.end(); ++field) {
    const std::string& key = field.key();
    const nlohmann::json& value = *field;
    if (value.is_object()) {  // the workloads' environment: one line per variable
      for (auto entry = value.begin(); entry != value.end(); ++entry) {
        out << key << "." << entry.key() << ": " << Text(*entry) << "\n";
      }
    } else if (IsSize(key) && value.is_number_unsigned()) {
      out << key << ": " << FormatByteSize(value.get<uint64_t>()) << " (" << value.dump() << ")\n";
    } else {
      out << key << ": " << Text(value) << "\n";
    }
  }
  return out.str();
}

std::string DescribeFreeRoom(const std::vector<api::Gpu>& gpus) {
  std::string text;
  for (const api::Gpu& gpu : gpus) {
    if (!text.empty()) text += "; ";
    text += "GPU " + std::to_string(gpu.index) + (gpu.parent_uuid.empty() ? "" : " " + gpu.mig_profile) + ": ";
    if (gpu.isolation == "mig" && gpu.parent_uuid.empty()) {
      text += "in MIG mode (see its instances)";
    } else if (gpu.isolation == "exclusive" && gpu.slices > 0) {
      text += "taken whole";
    } else if (gpu.exclusive) {
      text += "exclusive";
    } else if (!gpu.fenced.empty()) {
      text += "takes no new slices for now (" + gpu.fenced + ")";
    } else {
      const uint64_t reserved = std::min(gpu.memory_total, gpu.memory_reserved);
      text += FormatByteSize(gpu.memory_total - reserved) + " and " +
              std::to_string(100 - static_cast<int64_t>(gpu.compute_reserved)) + " % compute free";
    }
  }
  return text.empty() ? "no GPU" : text;
}

bool LargerThanEveryGpu(const std::vector<api::Gpu>& gpus, uint64_t memory, const std::string& device) {
  for (const api::Gpu& gpu : gpus) {
    const bool named = device.empty() || device == gpu.uuid || device == std::to_string(gpu.index);
    if (named && memory <= gpu.memory_total) return false;
  }
  return true;
}

}  // namespace fgpu::cli
