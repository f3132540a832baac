// SimTarget: which simulated GPU a command talks to (its device configuration and its
// shared-memory segment), and the environment that sends a program to it.
//
// Precedence: a flag (--config, --segment) wins over the environment (FGPU_SIM_CONFIG,
// FGPU_SIM_SEGMENT), which wins over the defaults. The simulated libraries read only the
// environment, so `fgpu sim status` run inside `fgpu sim run` sees the same segment.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "sim/state/shared_devices.h"

namespace fgpu::cli {

struct SimTarget {
  std::string config_path;  // absolute; empty = the built-in default configuration
  sim::SimConfig config;
  std::string segment;  // always set: flag, environment, or DefaultSegmentName(config)
  bool segment_is_default = true;
};

// Loads and validates the configuration and checks the segment name. `config_env` and
// `segment_env` are the environment's values (nullptr or "" = unset). Any error is the
// user's input: InvalidArgument or NotFound, saying where the bad value came from.
Result<SimTarget> ResolveSimTarget(const std::string& config_flag, const std::string& segment_flag,
                                   const char* config_env, const char* segment_env);
// The same with this process's environment.
Result<SimTarget> ResolveSimTarget(const std::string& config_flag, const std::string& segment_flag);

// A POSIX shared-memory name: "/" then 1-254 characters, none of them "/".
Status ValidateSegmentName(const std::string& name);

using EnvironmentChanges = std::vector<std::pair<std::string, std::string>>;

// What a program needs to run on `target`: FGPU_SIM_CONFIG when a file was chosen (made
// absolute, so a child that changes directory reads the same file), FGPU_SIM_SEGMENT when
// not the default, and LD_LIBRARY_PATH with `lib_dir` first. `ld_library_path` is the
// current value (nullptr = unset); an empty entry would mean "the current directory" to
// the loader, so none is ever added.
EnvironmentChanges SimEnvironment(const SimTarget& target, const std::string& lib_dir,
                                  const char* ld_library_path);
// setenv() each change in this process, so exec'd or spawned children inherit it.
Status ApplyEnvironment(const EnvironmentChanges& changes);

}  // namespace fgpu::cli
