#include <iostream>

#include "cli/commands.h"
#include "cli/exit_codes.h"

namespace fgpu::cli {

CLI::App* AddVersionFlags(CLI::App& root) { return root.add_subcommand("version", "Print fgpu's version"); }

int RunVersion() {
  // FGPU_VERSION comes from the CMake project version, so there is one place to bump it.
  std::cout << "fgpu " << FGPU_VERSION << "\n";
  return kExitOk;
}

}  // namespace fgpu::cli
