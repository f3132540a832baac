// Test helpers: small hand-built clusters and requests (tests only).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sched/cluster.h"
#include "sched/request.h"

namespace fgpu::sched::testing {

struct NodeShape {
  std::string model;  // "" for a node without GPUs
  int gpus = 0;
  int64_t cpu_milli = 96'000;
  int64_t memory_mib = 393'216;
};

// A cluster of nodes named n0, n1, ... with models interned in order of appearance.
inline Cluster MakeCluster(const std::vector<NodeShape>& shapes) {
  ModelTable models;
  std::vector<NodeSpec> nodes;
  for (size_t index = 0; index < shapes.size(); ++index) {
    NodeSpec node;
    node.name = "n" + std::to_string(index);
    node.cpu_milli = shapes[index].cpu_milli;
    node.memory_mib = shapes[index].memory_mib;
    node.gpu_count = shapes[index].gpus;
    if (!shapes[index].model.empty()) node.model = *models.Intern(shapes[index].model);
    nodes.push_back(node);
  }
  Result<Cluster> cluster = Cluster::Create(std::move(models), std::move(nodes));
  EXPECT_TRUE(cluster.ok()) << cluster.status().message();
  return std::move(cluster).value();
}

inline Request Gpus(int count, int32_t milli, int64_t cpu_milli = 4'000) {
  Request request;
  request.cpu_milli = cpu_milli;
  request.memory_mib = 1'024;
  request.gpu_count = count;
  request.gpu_milli = milli;
  return request;
}

inline Request CpuOnly(int64_t cpu_milli) {
  Request request;
  request.cpu_milli = cpu_milli;
  request.memory_mib = 1'024;
  return request;
}

// Takes `milli` of GPU `gpu` (and `cpu_milli`) on `node` directly, to build a state.
inline void Use(Cluster& cluster, NodeId node, int gpu, int32_t milli, int64_t cpu_milli = 0) {
  Placement placement{.node = node, .gpus = GpuBit(gpu), .cpu_milli = cpu_milli, .gpu_milli = milli};
  ASSERT_TRUE(cluster.Apply(placement).ok());
}

}  // namespace fgpu::sched::testing
