// What the plugin asks the node agent for: the body of POST /v1/slices for one job step.
// Pure; never throws except std::bad_alloc.
#pragma once

#include <cstdint>
#include <string>

#include "slurm/slice_options.h"

namespace fgpu::slurm {

// Slurm's reserved step ids (slurm.h SLURM_BATCH_SCRIPT and friends).
inline constexpr uint32_t kInteractiveStep = 0xFFFFFFFA;
inline constexpr uint32_t kBatchStep = 0xFFFFFFFB;
inline constexpr uint32_t kExternStep = 0xFFFFFFFC;

// Who the step is, from Slurm itself (spank items and slurmctld's job record), never from the
// job's environment, which its user writes.
struct StepIdentity {
  uint32_t job_id = 0;
  uint32_t step_id = 0;
  uint32_t uid = 0;     // the job's user: the slice's owner
  std::string user;     // the job's user name
  std::string account;  // the job's account; empty when the job has none
};

// "1234.0", "1234.batch", "1234.extern", "1234.interactive": as sacct names steps.
std::string StepLabel(uint32_t job_id, uint32_t step_id);

// The agent keeps names for records, reports and metric labels as 1-63 of [A-Za-z0-9._-]
// (user and account may also hold '@' and '+'): any other character becomes '_', and a longer
// name is cut, so that an unusual user name ("DOMAIN\\alice") bills rather than fails the step.
std::string AgentName(const std::string& name, bool allow_at_and_plus);

// The tenant the agent bills: the account when the job has one, else the user (as AgentName).
std::string TenantOf(const StepIdentity& step);

// {"memory": bytes, "compute"?: pct, "tier"?: t, "gpu": gpu, "tenant", "release_on_exit": true,
//  "job", "user", "account", "owner": uid}: names as AgentName, and an empty one left out, as the
// agent asks (docs/slurm.md; the agent's contract in docs/agent.md). The plugin asks as root in
// slurmstepd, for the job's user: the agent holds the request to that user's rule.
std::string BuildSliceRequest(const SliceOptions& options, const std::string& gpu, const StepIdentity& step);

}  // namespace fgpu::slurm
