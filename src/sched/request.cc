#include "sched/request.h"

#include <string>

namespace fgpu::sched {

Status Validate(const Request& request) {
  if (request.cpu_milli < 0) return Status::InvalidArgument("cpu_milli is negative");
  if (request.memory_mib < 0) return Status::InvalidArgument("memory_mib is negative");
  if (request.gpu_memory_bytes < 0) return Status::InvalidArgument("gpu_memory_bytes is negative");
  if (request.node < kAnyNode) return Status::InvalidArgument("node " + std::to_string(request.node) + " is negative");
  if (request.gpu_count < 0 || request.gpu_count > kMaxGpusPerNode) {
    return Status::InvalidArgument("gpu_count " + std::to_string(request.gpu_count) + " is outside 0.." +
                                   std::to_string(kMaxGpusPerNode));
  }
  if (request.gpu_count == 0) {
    if (request.gpu_milli != 0 || request.gpu_memory_bytes != 0) {
      return Status::InvalidArgument("a request without GPUs asks for a GPU share or GPU memory");
    }
    return Status::Ok();
  }
  if (request.gpu_milli < 1 || request.gpu_milli > kMilliPerGpu) {
    return Status::InvalidArgument("gpu_milli " + std::to_string(request.gpu_milli) + " is outside 1.." +
                                   std::to_string(kMilliPerGpu));
  }
  return Status::Ok();
}

Shape ShapeOf(const Request& request) {
  return {.cpu_milli = request.cpu_milli,
          .memory_mib = request.memory_mib,
          .gpu_memory_bytes = request.gpu_memory_bytes,
          .models = request.models,
          .gpu_milli = request.gpu_milli,
          .gpu_count = request.gpu_count,
          .node = request.node,
          .tier = request.tier};
}

size_t ShapeHash::operator()(const Shape& shape) const {
  // FNV-style mixing of the fields; shapes are few (hundreds), collisions only cost a compare.
  uint64_t hash = 1469598103934665603ULL;
  for (uint64_t field : {static_cast<uint64_t>(shape.cpu_milli), static_cast<uint64_t>(shape.memory_mib),
                         static_cast<uint64_t>(shape.gpu_memory_bytes), shape.models,
                         static_cast<uint64_t>(shape.gpu_milli), static_cast<uint64_t>(shape.gpu_count),
                         static_cast<uint64_t>(static_cast<int64_t>(shape.node)), static_cast<uint64_t>(shape.tier)}) {
    hash = (hash ^ field) * 1099511628211ULL;
    hash ^= hash >> 29;
  }
  return static_cast<size_t>(hash);
}

}  // namespace fgpu::sched
