#include "cli/run_plan.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

#include "api/workload_env.h"
#include "core/units.h"

namespace fgpu::cli {

Result<uint64_t> ParseMemoryLimit(const std::string& text, uint64_t device_total) {
  uint64_t bytes = 0;
  if (!text.empty() && text.back() == '%') {
    const std::string number = text.substr(0, text.size() - 1);
    char* end = nullptr;
    const double percent = std::strtod(number.c_str(), &end);
    if (number.empty() || end != number.c_str() + number.size() || !std::isfinite(percent) || percent <= 0 ||
        percent > 100) {
      return Status::InvalidArgument("--memory '" + text + "': a percentage must be in (0, 100]");
    }
    bytes = static_cast<uint64_t>(static_cast<double>(device_total) * percent / 100.0);
  } else {
    Result<uint64_t> parsed = ParseByteSize(text);
    if (!parsed.ok()) return Status::InvalidArgument("--memory: " + parsed.status().message());
    bytes = *parsed;
  }
  if (bytes == 0) return Status::InvalidArgument("--memory '" + text + "' is zero");
  if (bytes > device_total) {
    return Status::InvalidArgument("--memory '" + text + "' is more than the GPU has (" + FormatByteSize(device_total) +
                                   ")");
  }
  return bytes;
}

namespace {

// The current value of LD_PRELOAD and LD_LIBRARY_PATH as the caller read them (nullptr: unset).
api::EnvLookup Current(const char* ld_preload, const char* ld_library_path) {
  return [=](const std::string& name) -> std::optional<std::string> {
    const char* value = name == "LD_PRELOAD" ? ld_preload : name == "LD_LIBRARY_PATH" ? ld_library_path : nullptr;
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

}  // namespace

// Both are api/workload_env.h's slice environment and merge, the one every launcher uses.
Environment WorkloadEnvironment(const std::string& hook_library, const char* ld_preload,
                                const std::string& slice_dir, const std::string& gpu_uuid) {
  return api::MergeEnv(api::SliceEnv({hook_library, {}}, slice_dir, gpu_uuid), Current(ld_preload, nullptr));
}

Environment AgentSliceEnvironment(const Environment& slice_env, const std::string& own_hook, const char* ld_preload,
                                  const char* ld_library_path) {
  Environment env;
  for (const auto& [name, value] : slice_env) {
    if (name != "LD_PRELOAD" || !value.empty()) env.emplace_back(name, value);
  }
  const bool named = std::any_of(env.begin(), env.end(), [](const auto& entry) { return entry.first == "LD_PRELOAD"; });
  if (!named) env.insert(env.begin(), {"LD_PRELOAD", own_hook});
  return api::MergeEnv(env, Current(ld_preload, ld_library_path));
}

Environment SimulatorEnvironmentForWorkloads(const char* config, const char* segment, const char* ld_library_path) {
  const auto set = [](const char* value) { return value != nullptr && *value != '\0'; };
  Environment env;
  if (!set(config) && !set(segment)) return env;
  if (set(config)) env.emplace_back("FGPU_SIM_CONFIG", config);
  if (set(segment)) env.emplace_back("FGPU_SIM_SEGMENT", segment);
  if (set(ld_library_path)) env.emplace_back("LD_LIBRARY_PATH", ld_library_path);
  return env;
}

std::string HookLibraryBeside(const std::string& executable_path) {
  namespace fs = std::filesystem;
  return (fs::path(executable_path).parent_path() / ".." / "lib" / "fgpu" / "libfgpu.so")
      .lexically_normal()
      .string();
}

Result<uint32_t> ParseComputeShare(const std::string& text) {
  std::string digits = text;
  if (!digits.empty() && digits.back() == '%') digits.pop_back();
  uint32_t value = 0;
  const bool numeric = !digits.empty() && digits.size() <= 3 &&
                       digits.find_first_not_of("0123456789") == std::string::npos;
  if (numeric) value = static_cast<uint32_t>(std::stoul(digits));
  if (!numeric || value < 1 || value > 100) {
    return Status::InvalidArgument("compute share must be a percentage from 1 to 100, got '" + text + "'");
  }
  return value;
}

}  // namespace fgpu::cli
