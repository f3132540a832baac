// A node agent for the Kubernetes plugins' unit tests: slices by idempotency key in memory, the
// GPUs' memory as their room, and a switch that makes every call fail as an agent that is down.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "k8s/dra/ports.h"

namespace fgpu::k8s::testing {

inline PublishedGpu TestGpu(const std::string& uuid, int index = 0, uint64_t memory_bytes = uint64_t{80} << 30) {
  PublishedGpu gpu;
  gpu.uuid = uuid;
  gpu.index = index;
  gpu.memory_bytes = memory_bytes;
  return gpu;
}

class FakeAgent : public SliceAgent {
 public:
  Result<GrantedSlice> Create(const SliceOrder& order) override {
    std::lock_guard lock(mutex);
    orders.push_back(order);
    if (down) return Status::Unavailable("agent down");
    for (const auto& [id, slice] : slices) {
      if (slice.key == order.key) return slice;
    }
    uint64_t used = 0;
    for (const auto& [id, memory] : memory_of) used += memory;
    if (used + order.memory_bytes > room) return Status::ResourceExhausted("GPU-aaaa has 4 GiB free");
    const std::string id = "s" + std::to_string(++next);
    const std::string dir = "/run/fgpu/slices/" + id;
    GrantedSlice slice{id, order.key, order.gpu_uuid, dir,
                       {{"FGPU_SLICE", dir}, {"CUDA_VISIBLE_DEVICES", order.gpu_uuid}, {"LD_PRELOAD", preload}}};
    slices[id] = slice;
    memory_of[id] = order.memory_bytes;
    return slice;
  }
  Result<std::vector<GrantedSlice>> List(const std::string& prefix) override {
    std::lock_guard lock(mutex);
    if (down) return Status::Unavailable("agent down");
    std::vector<GrantedSlice> out;
    for (const auto& [id, slice] : slices) {
      if (slice.key.rfind(prefix, 0) == 0) out.push_back(slice);
    }
    return out;
  }
  Status Delete(const std::string& id) override {
    std::lock_guard lock(mutex);
    if (down) return Status::Unavailable("agent down");
    slices.erase(id);
    memory_of.erase(id);
    return Status::Ok();
  }
  Result<std::vector<PublishedGpu>> Gpus() override {
    std::lock_guard lock(mutex);
    if (down) return Status::Unavailable("agent down");
    return gpus;
  }

  std::mutex mutex;  // the plugin calls from several gRPC threads at once
  bool down = false;
  std::string preload = "/bin/true";  // any file the plugin can see stands in for libfgpu.so
  uint64_t room = uint64_t{80} << 30;
  std::vector<PublishedGpu> gpus = {TestGpu("GPU-aaaa")};
  int next = 0;
  std::map<std::string, GrantedSlice> slices;
  std::map<std::string, uint64_t> memory_of;
  std::vector<SliceOrder> orders;
};

}  // namespace fgpu::k8s::testing
