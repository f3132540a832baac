#include "slurm/step_slice.h"

#include "api/agent_client.h"
#include "api/codec.h"
#include "core/units.h"
#include "net/http_client.h"

namespace fgpu::slurm {

AgentCall UnixAgent(const std::string& socket_path, int timeout_ms) {
  return [socket_path, timeout_ms](const std::string& method, const std::string& target, const std::string& body) {
    net::Endpoint endpoint;
    endpoint.unix_socket = true;
    endpoint.path = socket_path;
    return net::HttpCall(endpoint, method, target, body, timeout_ms);
  };
}

Result<StepPlan> PlanStep(const SliceOptions& options, const StepFacts& facts) {
  StepPlan plan;
  plan.label = StepLabel(facts.identity.job_id, facts.identity.step_id);
  if (Status complete = Complete(options); !complete.ok()) {
    return Status::InvalidArgument("step " + plan.label + ": " + complete.message());
  }
  Result<std::string> gpu = ChooseStepGpu(facts.gpus);
  if (!gpu.ok()) return Status::InvalidArgument("step " + plan.label + ": " + gpu.status().message());
  plan.gpu = *gpu;
  plan.summary = FormatByteSize(*options.memory_bytes);
  if (options.compute_percent) plan.summary += " and " + std::to_string(*options.compute_percent) + "% compute";
  plan.summary += " on GPU " + plan.gpu;
  plan.body = BuildSliceRequest(options, plan.gpu, facts.identity);
  return plan;
}

Result<GrantedSlice> AcquireSlice(const StepPlan& plan, const AgentCall& agent, const std::string& agent_name) {
  Result<net::HttpResponse> answer = agent("POST", "/v1/slices", plan.body);
  if (!answer.ok()) {
    return Status::Unavailable("step " + plan.label + ": cannot get a slice of " + plan.summary +
                               ": the node's fgpu agent at " + agent_name + " did not answer (" +
                               answer.status().message() + "); is `fgpu agent` running on this node?");
  }
  Result<GrantedSlice> slice = ParseCreateReply(answer->status, answer->body);
  if (slice.ok()) return slice;
  if (answer->status == 201) {
    // Made but unusable (an agent older than this plugin): give it back rather than leak it.
    if (const std::string id = SliceIdOf(answer->body); !id.empty()) (void)ReleaseSlice(id, agent);
    return Status::Internal("step " + plan.label + ": " + slice.status().message());
  }
  return Status::ResourceExhausted("step " + plan.label + " was refused a slice of " + plan.summary +
                                   " by the node's fgpu agent: " + slice.status().message());
}

std::string JobSliceMarker(uint32_t job_id, const std::string& node, const std::string& slice_id) {
  return std::to_string(job_id) + "@" + node + "@" + slice_id;
}

std::string JobSliceOf(const std::string& marker, uint32_t job_id, const std::string& node) {
  const std::string prefix = std::to_string(job_id) + "@" + node + "@";
  if (marker.size() <= prefix.size() || marker.compare(0, prefix.size(), prefix) != 0) return {};
  const std::string id = marker.substr(prefix.size());
  return id.find_first_of("@/?# ") == std::string::npos ? id : std::string();
}

Result<GrantedSlice> AdoptSlice(const std::string& id, const StepIdentity& step, const AgentCall& agent) {
  Result<net::HttpResponse> answer = agent("GET", "/v1/slices/" + id, "");
  if (!answer.ok()) return Status::Unavailable("cannot read the job's slice " + id + ": " + answer.status().message());
  Result<GrantedSlice> slice = ParseGetReply(answer->status, answer->body);
  if (!slice.ok()) return slice;
  Result<api::Slice> record = api::ParseText<api::Slice>(answer->body);  // parsed once already: it is one
  const std::string job_prefix = std::to_string(step.job_id) + ".";
  const bool this_job = record.ok() && record->labels.job.rfind(job_prefix, 0) == 0;
  const bool this_user = record.ok() && record->details && record->details->owner_uid == static_cast<int64_t>(step.uid);
  if (!this_job || !this_user) {
    return Status::PermissionDenied("slice " + id + " is not a slice of job " + std::to_string(step.job_id) +
                                    " and its user");
  }
  return slice;
}

Status JoinSlice(const std::string& id, const AgentCall& agent) {
  Result<api::JoinReply> joined = api::AgentClient(agent).JoinSlice(id);
  if (joined.ok()) return Status::Ok();
  if (joined.status().code() == StatusCode::kUnavailable) {
    return Status::Unavailable("cannot join slice " + id + ": " + joined.status().message());
  }
  return Status::Internal("cannot join slice " + id + ": " + joined.status().message());
}

Status ReleaseSlice(const std::string& id, const AgentCall& agent) {
  const Status released = api::AgentClient(agent).DeleteSlice(id);
  if (released.ok() || released.code() == StatusCode::kNotFound) return Status::Ok();
  if (released.code() == StatusCode::kUnavailable) return Status::Unavailable("cannot release slice " + id + ": " + released.message());
  return Status::Internal("cannot release slice " + id + ": " + released.message());
}

}  // namespace fgpu::slurm
