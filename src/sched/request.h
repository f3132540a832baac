// What a workload asks of the cluster: host CPU and RAM, and GPUs — how many, and on each a
// compute share (milli-GPU) and memory — on the GPU models it accepts.
//
// A whole-GPU request asks kMilliPerGpu on each of its GPUs; a sharing request asks less,
// and the GPUs it lands on stay open to others. Tier and tenant ride along for governance
// (quotas, preemption); placement scores ignore them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"
#include "sched/gpu_set.h"
#include "sched/model_table.h"

namespace fgpu::sched {

enum class Tier : uint8_t { kBatch = 0, kStandard = 1, kLatency = 2 };  // as slice::Tier
inline constexpr int kTierCount = 3;

// Request::node when any node will do.
inline constexpr int32_t kAnyNode = -1;

struct Request {
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int gpu_count = 0;
  int32_t gpu_milli = 0;         // per GPU, 1..kMilliPerGpu when gpu_count > 0
  int64_t gpu_memory_bytes = 0;  // per GPU
  ModelSet models = kAnyModel;
  // Only this node (a GPU named by the user, a nominated node); kAnyNode: wherever fits.
  int32_t node = kAnyNode;
  Tier tier = Tier::kStandard;
  std::string tenant;

  int64_t TotalGpuMilli() const { return int64_t{gpu_count} * gpu_milli; }
  // A share of one GPU that leaves room for others (FGD's "share-GPU" task).
  bool IsSharing() const { return gpu_count == 1 && gpu_milli < kMilliPerGpu; }
};

// InvalidArgument, naming the field, for negative quantities, more GPUs than a node can
// have, a GPU count without a share (or a share without GPUs), a share above one GPU, or a
// node below kAnyNode.
Status Validate(const Request& request);

// Everything in a request that placement depends on. Requests of equal shape get equal
// scores on equal nodes, which is what lets the scheduler cache scores per shape.
struct Shape {
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int64_t gpu_memory_bytes = 0;
  ModelSet models = kAnyModel;
  int32_t gpu_milli = 0;
  int32_t gpu_count = 0;
  int32_t node = kAnyNode;
  Tier tier = Tier::kStandard;  // score plugins may weigh it (policies do not)

  bool operator==(const Shape&) const = default;
};

Shape ShapeOf(const Request& request);

struct ShapeHash {
  size_t operator()(const Shape& shape) const;
};

}  // namespace fgpu::sched
