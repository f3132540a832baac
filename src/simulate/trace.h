// Reading a trace: the node list and the pod list in the Alibaba cluster-trace-gpu-v2023
// format (docs/placement.md "Trace format").
//
// Nodes: sn (or name), cpu_milli, memory_mib, gpu, model. A node with GPUs needs a model.
// Pods: name, cpu_milli, memory_mib, num_gpu, gpu_milli and optionally gpu_spec (accepted
// models, "A|B"), qos (LS, Burstable, Guaranteed, BE) and creation_time / deletion_time
// (seconds). The FGD protocol ignores qos and times; the time-driven replay (timeline.h) reads
// them, and needs both times on every pod.
//
// Malformed rows (missing columns, non-numbers, negative or zero capacities, out-of-range
// values) are errors naming file:line. Pods that no node could ever host — larger than every
// node, or accepting only models no node has — are kept (they arrive and fail, as in the FGD
// protocol) and counted, with the first few named by file:line in `warnings`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "sched/cluster.h"
#include "sched/model_table.h"
#include "sched/request.h"

namespace fgpu::simulate {

struct NodeList {
  std::string path;
  sched::ModelTable models;
  std::vector<sched::NodeSpec> nodes;
};

struct Pod {
  std::string name;
  int line = 0;  // in the pod file
  sched::Request request;
  std::string qos{};                     // "" when the file has no qos column
  std::optional<int64_t> created{};      // creation_time, seconds
  std::optional<int64_t> deleted{};      // deletion_time, seconds (≥ created)
};

struct PodList {
  std::string path;
  std::vector<Pod> pods;
  bool timed = false;  // every pod has creation and deletion times
  int never_fit = 0;                  // pods no node could host even when empty
  std::vector<std::string> warnings;  // file:line notes about them (the first few)
};

Result<NodeList> LoadNodes(const std::string& path);
// `nodes` supplies the model names; models a pod names but no node has are reported.
Result<PodList> LoadPods(const std::string& path, const NodeList& nodes);

}  // namespace fgpu::simulate
