// Where the simulated driver libraries (libcuda.so.1, libnvidia-ml.so.1) live.
//
// They sit at <dir of the fgpu executable>/../lib/fgpu/sim in both the build tree and an
// install tree, so the directory follows the binary wherever it is copied, with no
// configuration. FGPU_SIM_LIBDIR overrides it (a driver built elsewhere, tests).
#pragma once

#include <string>

#include "core/status.h"

namespace fgpu::cli {

inline constexpr const char* kSimLibDirEnv = "FGPU_SIM_LIBDIR";
inline constexpr const char* kSimCudaLibrary = "libcuda.so.1";

// Absolute path of the running executable, from /proc/self/exe (symlinks resolved, so a
// link to fgpu in /usr/local/bin still finds the libraries beside the real binary).
Result<std::string> SelfExecutablePath();

// <dir of executable_path>/../lib/fgpu/sim, lexically normalised. Pure; touches no files.
std::string SimLibDirBeside(const std::string& executable_path);

// The directory to put first on LD_LIBRARY_PATH: `override_dir` when non-empty (made
// absolute, since the child may change directory), else SimLibDirBeside(executable_path).
// NotFound, naming the directory and both ways to fix it, when libcuda.so.1 is not there.
Result<std::string> ResolveSimLibDir(const std::string& executable_path, const std::string& override_dir);

// ResolveSimLibDir for this process: SelfExecutablePath() and $FGPU_SIM_LIBDIR.
Result<std::string> ResolveSimLibDirForThisProcess();

}  // namespace fgpu::cli
