#include "cli/run_plan.h"

#include <cmath>
#include <filesystem>

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

Environment WorkloadEnvironment(const std::string& hook_library, const char* ld_preload,
                                const std::string& slice_dir, const std::string& gpu_uuid) {
  std::string preload = hook_library;
  if (ld_preload != nullptr && *ld_preload != '\0') preload.append(":").append(ld_preload);
  return {{"LD_PRELOAD", preload}, {"FGPU_SLICE", slice_dir}, {"CUDA_VISIBLE_DEVICES", gpu_uuid}};
}

namespace {

// `first` before `current` in a colon-separated search path, once.
std::string PrependPath(const std::string& first, const char* current) {
  if (current == nullptr || *current == '\0' || first == current) return first;
  return first + ":" + current;
}

}  // namespace

Environment AgentSliceEnvironment(const Environment& slice_env, const std::string& own_hook, const char* ld_preload,
                                  const char* ld_library_path) {
  Environment env;
  bool preload_named = false;
  for (const auto& [name, value] : slice_env) {
    if (name == "LD_PRELOAD") {
      preload_named = !value.empty();
      if (preload_named) env.emplace_back(name, PrependPath(value, ld_preload));
    } else if (name == "LD_LIBRARY_PATH") {
      env.emplace_back(name, PrependPath(value, ld_library_path));
    } else {
      env.emplace_back(name, value);
    }
  }
  if (!preload_named) env.insert(env.begin(), {"LD_PRELOAD", PrependPath(own_hook, ld_preload)});
  return env;
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
