#include "api/workload_env.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace fgpu::api {
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

}  // namespace

Env SliceEnv(const WorkloadSetup& setup, const std::string& dir, const std::string& gpu_uuid) {
  Env env = setup.extra;
  if (!setup.preload.empty()) env.emplace_back("LD_PRELOAD", setup.preload);
  env.emplace_back("FGPU_SLICE", dir);
  env.emplace_back("CUDA_VISIBLE_DEVICES", gpu_uuid);
  return env;
}

std::optional<std::string> ProcessEnv(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::string PrependPaths(const std::string& first, const std::string& rest) {
  std::vector<std::string> merged = SplitPaths(first);
  for (const std::string& entry : SplitPaths(rest)) {
    if (std::find(merged.begin(), merged.end(), entry) == merged.end()) merged.push_back(entry);
  }
  std::string joined;
  for (const std::string& entry : merged) joined += (joined.empty() ? "" : ":") + entry;
  return joined;
}

Env MergeEnv(const Env& slice_env, const EnvLookup& current) {
  Env merged;
  for (const auto& [name, value] : slice_env) {
    if (!IsPathList(name)) {
      merged.emplace_back(name, value);
      continue;
    }
    const std::optional<std::string> existing = current(name);
    merged.emplace_back(name, existing ? PrependPaths(value, *existing) : value);
  }
  return merged;
}

}  // namespace fgpu::api
