// SlicePublisher: keeps the node's ResourceSlices — its pool, one object or several (KEP-4815: the
// counter sets of dynamic MIG GPUs and their placements in objects of their own) — equal to what
// the agent can place on: GPUs appearing or going, turning unhealthy, exclusive or fenced. Every
// object of the pool is written with one new generation each time the pool changes, so the
// scheduler never allocates from a stale or half-written view, and objects of this driver and node
// the pool no longer has (a larger pool's, an older plugin's) are deleted after. Polled (the agent
// is a local call, about 0.1 ms), so a change is published within one period.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "k8s/dra/ports.h"
#include "k8s/dra/resource_slice.h"

namespace fgpu::k8s {

struct PublisherCounters {
  uint64_t publishes = 0;  // times the pool was written
  uint64_t errors = 0;
  int64_t generation = 0;
  int64_t devices = 0;  // devices in the last published pool, over all its objects
};

class SlicePublisher {
 public:
  SlicePublisher(std::string node, CapacityPolicy policy, SliceAgent* agent, SliceStore* store);

  // Reads the agent's GPUs and, if the published pool differs (or is missing), writes it with the
  // next generation. True when it wrote. Thread-safe.
  Result<bool> PublishOnce();

  PublisherCounters Counters() const;

 private:
  // Lists the pool on the server and, unless it already is `pool`, writes it; once more from the
  // list on a conflict.
  Result<bool> Write(const std::vector<nlohmann::json>& pool, const nlohmann::json& content);
  // Creates or updates (over `existing`'s resourceVersion) every object of `pool` at `generation`.
  Status WriteObjects(std::vector<nlohmann::json> pool, const std::vector<nlohmann::json>& existing,
                      int64_t generation);
  // Deletes the objects of `existing` whose names `content` does not have.
  Status DeleteStale(const nlohmann::json& content, const std::vector<nlohmann::json>& existing);
  void Record(const nlohmann::json& content, int64_t generation, int64_t devices, bool wrote);

  const std::string node_;
  const CapacityPolicy policy_;
  SliceAgent* const agent_;
  SliceStore* const store_;
  mutable std::mutex mutex_;
  PublisherCounters counters_;
  // What the server holds, as far as we know (null: unknown): name → spec, generation left out.
  nlohmann::json last_content_;
};

}  // namespace fgpu::k8s
