// fgpu sim reset: forget the simulated device state. Processes still attached keep their
// mapping of the old segment; the next process to attach starts from an idle device.
#include <iostream>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/sim_target.h"

namespace fgpu::cli {

CLI::App* AddSimResetFlags(CLI::App& sim, SimResetOptions* options) {
  CLI::App* reset = sim.add_subcommand("reset", "Remove the simulated device state (shared-memory segment)");
  reset->add_option("--config", options->config,
                    "Simulated device configuration (JSON); names the default segment");
  reset->add_option("--segment", options->segment, "Segment to remove, e.g. /fgpu-sim-test");
  return reset;
}

int RunSimReset(const SimResetOptions& options) {
  Result<SimTarget> target = ResolveSimTarget(options.config, options.segment);
  if (!target.ok()) {
    std::cerr << "fgpu sim reset: " << target.status().message() << "\n";
    return kExitUsage;
  }
  Status removed = sim::SharedDevices::Remove(target->segment);
  if (!removed.ok()) {
    std::cerr << "fgpu sim reset: " << removed.message() << "\n";
    return kExitFailure;
  }
  std::cout << "removed segment " << target->segment << "\n";
  return kExitOk;
}

}  // namespace fgpu::cli
