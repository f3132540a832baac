#include "slurm/task_env.h"

#include <algorithm>
#include <vector>

namespace fgpu::slurm {
namespace {

bool IsPathList(const std::string& name) { return name == "LD_PRELOAD" || name == "LD_LIBRARY_PATH"; }

std::vector<std::string> SplitPaths(const std::string& list) {
  std::vector<std::string> entries;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t colon = list.find(':', start);
    const std::size_t end = colon == std::string::npos ? list.size() : colon;
    if (end > start) entries.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  return entries;
}

// `first`'s entries, then `rest`'s that are not among them; no empty entries.
std::string PrependPaths(const std::string& first, const std::string& rest) {
  std::vector<std::string> merged = SplitPaths(first);
  for (const std::string& entry : SplitPaths(rest)) {
    if (std::find(merged.begin(), merged.end(), entry) == merged.end()) merged.push_back(entry);
  }
  std::string joined;
  for (const std::string& entry : merged) joined += (joined.empty() ? "" : ":") + entry;
  return joined;
}

}  // namespace

EnvList MergeTaskEnv(const EnvList& agent_env, const EnvLookup& current) {
  EnvList merged;
  for (const auto& [name, value] : agent_env) {
    if (!IsPathList(name)) {
      merged.emplace_back(name, value);
      continue;
    }
    const std::optional<std::string> existing = current(name);
    merged.emplace_back(name, existing ? PrependPaths(value, *existing) : value);
  }
  return merged;
}

}  // namespace fgpu::slurm
