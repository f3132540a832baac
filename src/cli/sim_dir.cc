#include "cli/sim_dir.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace fgpu::cli {

namespace fs = std::filesystem;

namespace {

// lexically_normal() keeps a trailing separator ("a/b/.." -> "a/"); paths we print and put on
// LD_LIBRARY_PATH should not have one.
std::string NormalWithoutTrailingSlash(const fs::path& path) {
  std::string normal = path.lexically_normal().string();
  if (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  return normal;
}

}  // namespace

Result<std::string> SelfExecutablePath() {
  std::error_code error;
  fs::path path = fs::read_symlink("/proc/self/exe", error);
  if (error) return Status::Unavailable("cannot read /proc/self/exe: " + error.message());
  return path.string();
}

std::string SimLibDirBeside(const std::string& executable_path) {
  return NormalWithoutTrailingSlash(fs::path(executable_path).parent_path() / ".." / "lib" / "fgpu" / "sim");
}

Result<std::string> ResolveSimLibDir(const std::string& executable_path, const std::string& override_dir) {
  std::string dir;
  if (!override_dir.empty()) {
    std::error_code error;
    fs::path absolute = fs::absolute(override_dir, error);
    if (error) {
      return Status::InvalidArgument(std::string(kSimLibDirEnv) + "=" + override_dir + ": " +
                                     error.message());
    }
    dir = NormalWithoutTrailingSlash(absolute);
  } else {
    dir = SimLibDirBeside(executable_path);
  }
  const fs::path library = fs::path(dir) / kSimCudaLibrary;
  std::error_code error;
  if (!fs::is_regular_file(library, error)) {
    std::string message = "the simulated driver " + library.string() + " does not exist";
    message += override_dir.empty() ? "; build it (target fgpu_sim_cuda) or set " +
                                          std::string(kSimLibDirEnv) + " to the directory that holds it"
                                    : " (directory taken from " + std::string(kSimLibDirEnv) + ")";
    return Status::NotFound(message);
  }
  return dir;
}

Result<std::string> ResolveSimLibDirForThisProcess() {
  Result<std::string> executable = SelfExecutablePath();
  if (!executable.ok()) return executable.status();
  const char* override_dir = std::getenv(kSimLibDirEnv);
  return ResolveSimLibDir(*executable, override_dir != nullptr ? override_dir : "");
}

}  // namespace fgpu::cli
