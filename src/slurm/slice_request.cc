#include "slurm/slice_request.h"

#include <utility>

#include "api/codec.h"

namespace fgpu::slurm {

std::string StepLabel(uint32_t job_id, uint32_t step_id) {
  const std::string job = std::to_string(job_id);
  switch (step_id) {
    case kBatchStep:
      return job + ".batch";
    case kExternStep:
      return job + ".extern";
    case kInteractiveStep:
      return job + ".interactive";
    default:
      return job + "." + std::to_string(step_id);
  }
}

std::string AgentName(const std::string& name, bool allow_at_and_plus) {
  std::string cleaned = name.substr(0, 63);
  for (char& c : cleaned) {
    const bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                       c == '_' || c == '-';
    if (!plain && !(allow_at_and_plus && (c == '@' || c == '+'))) c = '_';
  }
  return cleaned;
}

std::string TenantOf(const StepIdentity& step) {
  return AgentName(step.account.empty() ? step.user : step.account, /*allow_at_and_plus=*/false);
}

std::string BuildSliceRequest(const SliceOptions& options, const std::string& gpu, const StepIdentity& step) {
  api::SliceRequest request;
  request.memory_bytes = options.memory_bytes.value_or(0);
  request.gpu = gpu;
  request.release_on_exit = true;
  request.labels.job = StepLabel(step.job_id, step.step_id);
  // Empty names are left out (the codec writes only labels that are set), as the agent asks.
  request.labels.user = AgentName(step.user, true);
  request.labels.account = AgentName(step.account, true);
  if (const std::string tenant = TenantOf(step); !tenant.empty()) request.tenant = tenant;
  request.owner = step.uid;
  request.compute = options.compute_percent;
  request.tier = options.tier;
  return api::ToJson(request).dump();
}

}  // namespace fgpu::slurm
