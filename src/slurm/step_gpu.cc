#include "slurm/step_gpu.h"

#include <string_view>
#include <vector>

namespace fgpu::slurm {
namespace {

std::string Trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return std::string(text);
}

std::vector<std::string> SplitList(const std::string& list) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = list.find(',', start);
    const std::size_t end = comma == std::string::npos ? list.size() : comma;
    items.push_back(Trimmed(std::string_view(list).substr(start, end - start)));
    start = end + 1;
  }
  return items;
}

// A GPU index (digits) or a UUID-like name (GPU-..., MIG-...): what Slurm or CUDA may list.
bool LooksLikeGpu(const std::string& item) {
  if (item.empty()) return false;
  if (item.find_first_not_of("0123456789") == std::string::npos) return item.size() <= 4;
  return item.rfind("GPU-", 0) == 0 || item.rfind("MIG-", 0) == 0;
}

}  // namespace

Result<std::string> ChooseStepGpu(const StepGpuEnv& env) {
  const char* source = "SLURM_STEP_GPUS";
  const std::optional<std::string>* chosen = &env.step_gpus;
  if (!chosen->has_value() || (*chosen)->empty()) {
    source = "SLURM_JOB_GPUS";
    chosen = &env.job_gpus;
  }
  if (!chosen->has_value() || (*chosen)->empty()) {
    source = "CUDA_VISIBLE_DEVICES";
    chosen = &env.cuda_visible_devices;
  }
  if (!chosen->has_value() || (*chosen)->empty()) {
    return Status::InvalidArgument(
        "this step has no GPU from Slurm: add --gres=shard:N (a share of one GPU) or --gres=gpu:1 to the job");
  }
  const std::vector<std::string> gpus = SplitList(**chosen);
  for (const std::string& gpu : gpus) {
    if (!LooksLikeGpu(gpu)) {
      return Status::InvalidArgument(std::string(source) + "='" + **chosen + "' is not a list of GPUs");
    }
  }
  if (gpus.size() > 1) {
    return Status::InvalidArgument("this step has " + std::to_string(gpus.size()) + " GPUs (" + source + "=" +
                                   **chosen +
                                   ") but an fgpu slice is on one GPU: ask for --gres=gpu:1 or --gres=shard:N");
  }
  return gpus.front();
}

}  // namespace fgpu::slurm
