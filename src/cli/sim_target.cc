#include "cli/sim_target.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace fgpu::cli {

namespace {

bool IsSet(const char* value) { return value != nullptr && value[0] != '\0'; }

Result<std::string> AbsolutePath(const std::string& path) {
  std::error_code error;
  std::filesystem::path absolute = std::filesystem::absolute(path, error);
  if (error) return Status::InvalidArgument(path + ": " + error.message());
  return absolute.lexically_normal().string();
}

}  // namespace

Status ValidateSegmentName(const std::string& name) {
  const bool well_formed =
      name.size() >= 2 && name.size() <= 255 && name[0] == '/' && name.find('/', 1) == std::string::npos;
  if (well_formed) return Status::Ok();
  return Status::InvalidArgument("segment name '" + name +
                                 "' is not a POSIX shared-memory name: it must start with '/', have 1-254 "
                                 "more characters and no other '/', e.g. /fgpu-sim-test");
}

Result<SimTarget> ResolveSimTarget(const std::string& config_flag, const std::string& segment_flag,
                                   const char* config_env, const char* segment_env) {
  SimTarget target;
  std::string config_source;
  if (!config_flag.empty()) {
    config_source = "--config " + config_flag;
    Result<std::string> path = AbsolutePath(config_flag);
    if (!path.ok()) return path.status();
    target.config_path = *path;
  } else if (IsSet(config_env)) {
    config_source = std::string(sim::kConfigEnv) + "=" + config_env;
    Result<std::string> path = AbsolutePath(config_env);
    if (!path.ok()) return path.status();
    target.config_path = *path;
  }
  if (target.config_path.empty()) {
    target.config = sim::DefaultSimConfig();
  } else {
    Result<sim::SimConfig> config = sim::LoadSimConfig(target.config_path);
    if (!config.ok()) {
      const Status& error = config.status();
      const std::string message =
          "invalid simulator configuration (" + config_source + "): " + error.message();
      return error.code() == StatusCode::kNotFound ? Status::NotFound(message)
                                                   : Status::InvalidArgument(message);
    }
    target.config = std::move(config).value();
  }

  if (!segment_flag.empty()) {
    target.segment = segment_flag;
  } else if (IsSet(segment_env)) {
    target.segment = segment_env;
  }
  if (target.segment.empty()) {
    target.segment = sim::SharedDevices::DefaultSegmentName(target.config);
  } else {
    target.segment_is_default = false;
    Status valid = ValidateSegmentName(target.segment);
    if (!valid.ok()) {
      const std::string source = segment_flag.empty() ? std::string(sim::kSegmentEnv) : "--segment";
      return Status::InvalidArgument(source + ": " + valid.message());
    }
  }
  return target;
}

Result<SimTarget> ResolveSimTarget(const std::string& config_flag, const std::string& segment_flag) {
  return ResolveSimTarget(config_flag, segment_flag, std::getenv(sim::kConfigEnv),
                          std::getenv(sim::kSegmentEnv));
}

EnvironmentChanges SimEnvironment(const SimTarget& target, const std::string& lib_dir,
                                  const char* ld_library_path) {
  EnvironmentChanges changes;
  if (!target.config_path.empty()) changes.emplace_back(sim::kConfigEnv, target.config_path);
  if (!target.segment_is_default) changes.emplace_back(sim::kSegmentEnv, target.segment);
  std::string search_path = lib_dir;
  if (IsSet(ld_library_path)) search_path += std::string(":") + ld_library_path;
  changes.emplace_back("LD_LIBRARY_PATH", search_path);
  return changes;
}

Status ApplyEnvironment(const EnvironmentChanges& changes) {
  for (const auto& [name, value] : changes) {
    if (setenv(name.c_str(), value.c_str(), /*overwrite=*/1) != 0) {
      return Status::Internal("setenv " + name + ": " + std::strerror(errno));
    }
  }
  return Status::Ok();
}

}  // namespace fgpu::cli
