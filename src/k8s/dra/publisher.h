// SlicePublisher: keeps the node's ResourceSlice equal to what the agent can place on — GPUs
// appearing or going, turning unhealthy, exclusive or fenced — with a new pool generation each
// time it changes, so the scheduler never allocates from a stale view. Polled (the agent is a
// local call, about 0.1 ms), so a change is published within one period.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"
#include "k8s/dra/ports.h"
#include "k8s/dra/resource_slice.h"

namespace fgpu::k8s {

struct PublisherCounters {
  uint64_t publishes = 0;  // objects created or updated
  uint64_t errors = 0;
  int64_t generation = 0;
  int64_t devices = 0;  // devices in the last published object
};

class SlicePublisher {
 public:
  SlicePublisher(std::string node, CapacityPolicy policy, SliceAgent* agent, SliceStore* store);

  // Reads the agent's GPUs and, if the published object differs (or is missing), writes it with
  // the next generation. True when it wrote.
  Result<bool> PublishOnce();

  PublisherCounters Counters() const;

 private:
  Result<bool> Write(const nlohmann::json& devices);

  const std::string node_;
  const CapacityPolicy policy_;
  SliceAgent* const agent_;
  SliceStore* const store_;
  mutable std::mutex mutex_;
  PublisherCounters counters_;
  nlohmann::json last_devices_;  // what the server holds, as far as we know (null: unknown)
};

}  // namespace fgpu::k8s
