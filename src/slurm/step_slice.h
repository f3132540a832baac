// One job step's slice, start to end: which GPU, what to ask the node agent, the agent's
// answer, and the release. The agent is reached through an AgentCall so that the flow is
// tested without a socket; UnixAgent() is the real one, bounded by a timeout on every call.
//
// Every error comes back as a Status whose message is the sentence the user sees (the plugin
// prefixes "fgpu: "): it names the step, what was asked, and why it was not given.
// Never throws except std::bad_alloc.
#pragma once

#include <functional>
#include <string>

#include "api/agent_client.h"
#include "core/status.h"
#include "net/http_message.h"
#include "slurm/agent_reply.h"
#include "slurm/slice_options.h"
#include "slurm/slice_request.h"
#include "slurm/step_gpu.h"

namespace fgpu::slurm {

// One exchange with the agent (api::Transport): what api::AgentClient calls through.
using AgentCall = api::Transport;

// Calls over the agent's Unix socket, each bounded by `timeout_ms` once connected.
AgentCall UnixAgent(const std::string& socket_path, int timeout_ms);

struct StepFacts {
  StepIdentity identity;
  StepGpuEnv gpus;
};

// What one step asks for: the GPU and the request body, and the words for messages.
struct StepPlan {
  std::string label;    // "1234.0"
  std::string gpu;      // "0"
  std::string summary;  // "30 GiB on GPU 0", "1 GiB and 20% compute on GPU 1"
  std::string body;     // JSON for POST /v1/slices
};

Result<StepPlan> PlanStep(const SliceOptions& options, const StepFacts& facts);

// POST /v1/slices. `agent_name` (the socket path) appears in messages when it cannot be reached.
Result<GrantedSlice> AcquireSlice(const StepPlan& plan, const AgentCall& agent, const std::string& agent_name);

// A job's steps on one node share one slice: the batch step's (one cap for the job's processes
// there, not a cap per step on top of the batch script's). The batch step names its slice in
// its tasks' environment; a later step of the same job on the same node finds it there (srun
// passes the batch script's environment on) and adopts it instead of asking for another.
inline constexpr const char* kJobSliceEnv = "FGPU_SLURM_JOB_SLICE";
// "<job>@<node>@<slice id>".
std::string JobSliceMarker(uint32_t job_id, const std::string& node, const std::string& slice_id);
// The slice id in `marker` when it names this job on this node, else "" (another job's marker
// leaked into an environment, or the step runs on another node: it gets its own slice).
std::string JobSliceOf(const std::string& marker, uint32_t job_id, const std::string& node);
// GET /v1/slices/{id}: the job's slice, to share — only if the agent says it is this job's (its
// "job" label is "<job_id>.<step>") and this user's (owner_uid): a marker in the environment is
// the user's to write and could name any slice. NotFound when it is gone, PermissionDenied when
// it is another job's.
Result<GrantedSlice> AdoptSlice(const std::string& id, const StepIdentity& step, const AgentCall& agent);
// POST /v1/slices/{id}/join from the task's own process (the kernel names it to the agent), so
// the agent can tell the step's processes from any other: eviction signals members only.
Status JoinSlice(const std::string& id, const AgentCall& agent);

// DELETE /v1/slices/{id}: OK on 204 and on 404 (already gone: the agent's reaper was first).
Status ReleaseSlice(const std::string& id, const AgentCall& agent);

}  // namespace fgpu::slurm
