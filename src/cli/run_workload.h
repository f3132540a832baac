// The parts of `fgpu run` both paths share (a private slice, or one from the agent): where the
// interposer is, and starting the program in its slice with signals forwarded.
#pragma once

#include <string>
#include <vector>

#include "cli/run_plan.h"
#include "core/status.h"

namespace fgpu::cli {

// $FGPU_HOOK_LIB, else libfgpu.so beside this binary (lib/fgpu/); NotFound when missing.
Result<std::string> ResolveHookLibrary();

// Runs `command` with `env` added; SIGINT/SIGTERM/SIGHUP/SIGQUIT are forwarded to it. The
// command's exit status (128 + signal if killed), or an fgpu exit code.
int RunWorkload(const std::vector<std::string>& command, const Environment& env);

}  // namespace fgpu::cli
