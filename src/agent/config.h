// AgentConfig: the agent's configuration file (`fgpu agent --config FILE`, docs/agent.md
// "Configuration"): stop-loss, who may ask for what, how long usage records are kept.
//
// Contract
// - LoadConfig("") is the defaults. A file that cannot be read, is not a JSON object, or has a
//   key this build does not know (at any level) or a value of the wrong type or out of range is
//   refused with InvalidArgument naming the file, the key's path and, for a bad value, the value
//   as written: a misspelled limit must not be lifted silently.
// - LoadToken reads the TCP admin token from a file that must be a regular file owned by this
//   process's user with no group or other permissions (0600 or stricter), holding one line of at
//   least 16 characters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/access.h"
#include "agent/isolation.h"
#include "agent/log.h"
#include "agent/slice_service.h"
#include "agent/stop_loss.h"
#include "core/status.h"

namespace fgpu::agent {

// One GPU's isolation class (docs/mig.md "Isolation classes"); GPUs not listed are shared.
struct GpuClassConfig {
  std::string gpu;  // an NVML index ("0") or a UUID
  IsolationClass isolation = IsolationClass::kShared;
  // The MIG geometry (profile names, "3g.40gb"), applied at start and on SIGHUP (mig_manager.h).
  // Empty with `mig`: the instances the GPU has are kept as they are.
  std::vector<std::string> mig;
  // When the geometry would destroy an instance holding slices: false, keep the GPU as it is (and
  // say why); true, take no new slice on the instances in the way and apply it once they are empty.
  bool drain = false;
  // "mig": "dynamic": no geometry is kept; a hard-isolation request makes the instance it takes
  // (the smallest profile that holds it, or the placement it names) and the instance is destroyed
  // when its last slice ends (mig_manager.h).
  bool dynamic = false;
};

struct AgentConfig {
  StopLossPolicy stop_loss;
  AccessPolicy access;
  // Usage records that ended longer ago than this are deleted (each accounting pass); 0: kept.
  int64_t usage_retention_ms = int64_t{400} * 24 * 3600 * 1000;
  LogLevel log_level = LogLevel::kInfo;  // the event log's (log.h); --log-level overrides it
  // Placement, queueing, preemption and quotas (docs/governance.md); the policy is --policy's.
  Governance governance;
  std::vector<GpuClassConfig> gpus;  // by the order written; each GPU at most once
};

Result<AgentConfig> LoadConfig(const std::string& path);
Result<std::string> LoadToken(const std::string& path);

}  // namespace fgpu::agent
