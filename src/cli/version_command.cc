#include <iostream>

#include "cli/commands.h"
#include "cli/exit_codes.h"

namespace fgpu::cli {

// FGPU_VERSION comes from the CMake project version, so there is one place to bump it.
std::string VersionLine() { return std::string("fgpu ") + FGPU_VERSION; }

CLI::App* AddVersionFlags(CLI::App& root) {
  // `fgpu --version` as well as `fgpu version`: people try both.
  root.set_version_flag("--version", VersionLine(), "Print fgpu's version and exit");
  return root.add_subcommand("version", "Print fgpu's version");
}

int RunVersion() {
  std::cout << VersionLine() << "\n";
  return kExitOk;
}

}  // namespace fgpu::cli
