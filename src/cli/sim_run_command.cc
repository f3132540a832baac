// fgpu sim run: exec a program with the simulated driver in place of the real one.
//
// Why LD_LIBRARY_PATH and not LD_PRELOAD: programs reach the driver by soname, either as a
// DT_NEEDED entry (linked against libcuda.so.1) or with dlopen("libcuda.so.1") (the CUDA
// runtime, PyTorch, NVML users). The loader resolves both through LD_LIBRARY_PATH before
// the system directories, so the simulated library is the only libcuda.so.1 in the process
// and the real driver is never loaded. LD_PRELOAD would add the simulated library next to
// the real one, and a dlopen of the soname would still load the real driver.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/sim_dir.h"
#include "cli/sim_target.h"

namespace fgpu::cli {

CLI::App* AddSimRunFlags(CLI::App& sim, SimRunOptions* options) {
  CLI::App* run = sim.add_subcommand("run", "Run a program on the simulated GPU (its exit status is fgpu's)");
  run->add_option("--config", options->config, "Simulated device configuration (JSON); default: one H100");
  run->add_option("--segment", options->segment,
                  "Shared-memory segment of the device state, e.g. /fgpu-sim-test");
  run->add_option("command", options->command, "The program and its arguments, after `--`")->required();
  run->footer("Example: fgpu sim run --config devices.json -- python3 train.py --epochs 1");
  return run;
}

int RunSimRun(const SimRunOptions& options) {
  Result<SimTarget> target = ResolveSimTarget(options.config, options.segment);
  if (!target.ok()) {
    std::cerr << "fgpu sim run: " << target.status().message() << "\n";
    return kExitUsage;
  }
  Result<std::string> lib_dir = ResolveSimLibDirForThisProcess();
  if (!lib_dir.ok()) {
    std::cerr << "fgpu sim run: " << lib_dir.status().message() << "\n";
    return kExitFailure;
  }
  Status applied = ApplyEnvironment(SimEnvironment(*target, *lib_dir, std::getenv("LD_LIBRARY_PATH")));
  if (!applied.ok()) {
    std::cerr << "fgpu sim run: " << applied.message() << "\n";
    return kExitFailure;
  }

  std::vector<char*> argv;
  argv.reserve(options.command.size() + 1);
  for (const std::string& arg : options.command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  std::cerr << "fgpu sim run: cannot run '" << options.command[0] << "': " << std::strerror(errno) << "\n";
  return kExitCannotExec;
}

}  // namespace fgpu::cli
