#include "simulate/trace.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <tuple>

#include "simulate/csv.h"

namespace fgpu::simulate {

namespace {

constexpr int64_t kMaxQuantity = std::numeric_limits<int64_t>::max() / 4;
constexpr size_t kWarningsShown = 5;

struct Columns {
  std::vector<size_t> index;
  Status status;
};

// The indices of `names` in the header; the first alternative present wins ("sn|name").
Columns FindColumns(const CsvTable& table, std::initializer_list<std::string_view> names) {
  Columns found;
  for (std::string_view alternatives : names) {
    std::optional<size_t> column;
    size_t start = 0;
    while (!column && start <= alternatives.size()) {
      size_t end = alternatives.find('|', start);
      if (end == std::string_view::npos) end = alternatives.size();
      column = table.Column(alternatives.substr(start, end - start));
      start = end + 1;
    }
    if (!column) {
      found.status =
          Status::InvalidArgument(table.path + ":1: missing column '" + std::string(alternatives) + "'");
      return found;
    }
    found.index.push_back(*column);
  }
  return found;
}

Result<sched::NodeSpec> ParseNode(const CsvTable& table, const CsvRow& row, const Columns& columns,
                                  sched::ModelTable& models) {
  const auto field = [&](size_t which) -> const std::string& { return row.fields[columns.index[which]]; };
  sched::NodeSpec node;
  node.name = field(0);
  if (node.name.empty()) return Status::InvalidArgument(table.Where(row) + "the node name is empty");
  Result<int64_t> cpu = ParseIntField(field(1), "cpu_milli", 1, kMaxQuantity);
  Result<int64_t> memory = ParseIntField(field(2), "memory_mib", 1, kMaxQuantity);
  Result<int64_t> gpus = ParseIntField(field(3), "gpu", 0, sched::kMaxGpusPerNode);
  for (const Status& status : {cpu.status(), memory.status(), gpus.status()}) {
    if (!status.ok()) return Status::InvalidArgument(table.Where(row) + status.message());
  }
  node.cpu_milli = *cpu;
  node.memory_mib = *memory;
  node.gpu_count = static_cast<int>(*gpus);
  const std::string& model = field(4);
  if (node.gpu_count > 0) {
    if (model.empty()) return Status::InvalidArgument(table.Where(row) + "a node with GPUs needs a model");
    Result<int> id = models.Intern(model);
    if (!id.ok()) return Status::InvalidArgument(table.Where(row) + id.status().message());
    node.model = *id;
  }
  return node;
}

Result<sched::Request> ParsePod(const CsvTable& table, const CsvRow& row, const Columns& columns,
                                std::optional<size_t> spec_column, const sched::ModelTable& models,
                                std::vector<std::string>& unknown_models) {
  const auto field = [&](size_t which) -> const std::string& { return row.fields[columns.index[which]]; };
  Result<int64_t> cpu = ParseIntField(field(1), "cpu_milli", 0, kMaxQuantity);
  Result<int64_t> memory = ParseIntField(field(2), "memory_mib", 0, kMaxQuantity);
  Result<int64_t> gpus = ParseIntField(field(3), "num_gpu", 0, sched::kMaxGpusPerNode);
  Result<int64_t> milli = ParseIntField(field(4), "gpu_milli", 0, sched::kMilliPerGpu);
  for (const Status& status : {cpu.status(), memory.status(), gpus.status(), milli.status()}) {
    if (!status.ok()) return Status::InvalidArgument(table.Where(row) + status.message());
  }
  sched::Request request;
  request.cpu_milli = *cpu;
  request.memory_mib = *memory;
  request.gpu_count = static_cast<int>(*gpus);
  request.gpu_milli = static_cast<int32_t>(*milli);
  if (spec_column && request.gpu_count > 0) {
    sched::ModelTable::ParsedSet accepted = models.ParseSet(row.fields[*spec_column]);
    request.models = accepted.set;
    unknown_models = std::move(accepted.unknown);
  }
  Status valid = sched::Validate(request);
  if (!valid.ok()) return Status::InvalidArgument(table.Where(row) + valid.message());
  return request;
}

// creation_time and deletion_time when the file has them (an empty field: not known).
Status ParseTimes(const CsvTable& table, const CsvRow& row, std::optional<size_t> created_column,
                  std::optional<size_t> deleted_column, Pod& pod) {
  for (auto [column, name, out] : {std::tuple{created_column, "creation_time", &pod.created},
                                   std::tuple{deleted_column, "deletion_time", &pod.deleted}}) {
    if (!column || row.fields[*column].empty()) continue;
    Result<int64_t> value = ParseIntField(row.fields[*column], name, 0, kMaxQuantity);
    if (!value.ok()) return Status::InvalidArgument(table.Where(row) + value.status().message());
    *out = *value;
  }
  if (pod.created && pod.deleted && *pod.deleted < *pod.created) {
    return Status::InvalidArgument(table.Where(row) + "deletion_time " + std::to_string(*pod.deleted) +
                                   " is before creation_time " + std::to_string(*pod.created));
  }
  return Status::Ok();
}

// Why no node could ever host `request`, or nullopt if some node could.
std::optional<std::string> NeverFits(const sched::Request& request, const NodeList& nodes,
                                     const std::vector<std::string>& unknown_models) {
  for (const sched::NodeSpec& node : nodes.nodes) {
    if (node.cpu_milli < request.cpu_milli || node.memory_mib < request.memory_mib) continue;
    if (request.gpu_count == 0) return std::nullopt;
    if (node.gpu_count >= request.gpu_count && sched::Accepts(request.models, node.model) &&
        node.gpu_memory_bytes >= request.gpu_memory_bytes) {
      return std::nullopt;
    }
  }
  if (request.gpu_count > 0 && request.models == 0) {
    std::string names;
    for (const std::string& name : unknown_models) names += (names.empty() ? "" : "|") + name;
    return "accepts only GPU models no node has (" + names + ")";
  }
  return std::string("is larger than every node");
}

}  // namespace

Result<NodeList> LoadNodes(const std::string& path) {
  Result<CsvTable> table = ReadCsv(path);
  if (!table.ok()) return table.status();
  Columns columns = FindColumns(*table, {"sn|name", "cpu_milli", "memory_mib", "gpu", "model"});
  if (!columns.status.ok()) return columns.status;
  NodeList list;
  list.path = path;
  std::set<std::string> names;
  for (const CsvRow& row : table->rows) {
    Result<sched::NodeSpec> node = ParseNode(*table, row, columns, list.models);
    if (!node.ok()) return node.status();
    if (!names.insert(node->name).second) {
      return Status::InvalidArgument(table->Where(row) + "node '" + node->name + "' is listed twice");
    }
    list.nodes.push_back(std::move(*node));
  }
  if (list.nodes.empty()) return Status::InvalidArgument(path + ": no nodes");
  return list;
}

Result<PodList> LoadPods(const std::string& path, const NodeList& nodes) {
  Result<CsvTable> table = ReadCsv(path);
  if (!table.ok()) return table.status();
  Columns columns = FindColumns(*table, {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"});
  if (!columns.status.ok()) return columns.status;
  const std::optional<size_t> spec_column = table->Column("gpu_spec");
  const std::optional<size_t> qos_column = table->Column("qos");
  const std::optional<size_t> created_column = table->Column("creation_time");
  const std::optional<size_t> deleted_column = table->Column("deletion_time");
  PodList list;
  list.path = path;
  list.timed = created_column && deleted_column;
  for (const CsvRow& row : table->rows) {
    std::vector<std::string> unknown_models;
    Result<sched::Request> request =
        ParsePod(*table, row, columns, spec_column, nodes.models, unknown_models);
    if (!request.ok()) return request.status();
    if (std::optional<std::string> why = NeverFits(*request, nodes, unknown_models)) {
      if (list.warnings.size() < kWarningsShown) {
        list.warnings.push_back(table->Where(row) + "pod '" + row.fields[columns.index[0]] + "' " + *why);
      }
      ++list.never_fit;
    }
    Pod pod{row.fields[columns.index[0]], row.line, std::move(*request)};
    if (qos_column) pod.qos = row.fields[*qos_column];
    Status times = ParseTimes(*table, row, created_column, deleted_column, pod);
    if (!times.ok()) return times;
    if (!pod.created || !pod.deleted) list.timed = false;
    list.pods.push_back(std::move(pod));
  }
  if (list.pods.empty()) return Status::InvalidArgument(path + ": no pods");
  return list;
}

}  // namespace fgpu::simulate
