// fgpu demo: a tour of the simulated GPU with fgpu-probe, the sibling executable that
// exercises the driver the way a CUDA program does. The probes run exactly as under
// `fgpu sim run` (same environment), on a private segment removed at the end, so the demo
// neither sees nor disturbs other programs on the simulated GPU.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/demo_steps.h"
#include "cli/exit_codes.h"
#include "cli/sim_dir.h"
#include "cli/sim_target.h"

namespace fgpu::cli {

namespace {

constexpr const char* kProbeName = "fgpu-probe";

Result<std::string> ProbeBesideThisExecutable() {
  Result<std::string> executable = SelfExecutablePath();
  if (!executable.ok()) return executable.status();
  const std::string probe = (std::filesystem::path(*executable).parent_path() / kProbeName).string();
  if (access(probe.c_str(), X_OK) != 0) {
    return Status::NotFound(probe + " is missing or not executable; build it (target fgpu-probe)");
  }
  return probe;
}

// Removes the demo's segment however the demo ends.
class SegmentRemover {
 public:
  explicit SegmentRemover(std::string segment) : segment_(std::move(segment)) {}
  SegmentRemover(const SegmentRemover&) = delete;
  SegmentRemover& operator=(const SegmentRemover&) = delete;
  ~SegmentRemover() {
    Status removed = sim::SharedDevices::Remove(segment_);
    if (!removed.ok()) std::cerr << "fgpu demo: " << removed.message() << "\n";
  }

 private:
  std::string segment_;
};

Status RunSteps(const DemoContext& demo) {
  Result<DeviceFacts> device = ShowDevice(demo);
  if (!device.ok()) return device.status();
  Status step = ShareMemory(demo, *device);
  if (!step.ok()) return step;
  step = FillToOutOfMemory(demo, *device);
  if (!step.ok()) return step;
  step = ShareCompute(demo);
  if (!step.ok()) return step;
  return ShowSlice(demo);
}

}  // namespace

CLI::App* AddDemoFlags(CLI::App& root, DemoOptions* options) {
  CLI::App* demo =
      root.add_subcommand("demo", "Show the simulated GPU at work: memory and compute shared by processes");
  demo->add_option("--config", options->config, "Simulated device configuration (JSON); default: one H100");
  return demo;
}

int RunDemo(const DemoOptions& options) {
  const std::string segment = "/fgpu-demo-" + std::to_string(getuid()) + "-" + std::to_string(getpid());
  Result<SimTarget> target = ResolveSimTarget(options.config, segment);
  if (!target.ok()) {
    std::cerr << "fgpu demo: " << target.status().message() << "\n";
    return kExitUsage;
  }
  Result<std::string> lib_dir = ResolveSimLibDirForThisProcess();
  Result<std::string> probe = ProbeBesideThisExecutable();
  for (const Status& missing : {lib_dir.status(), probe.status()}) {
    if (!missing.ok()) {
      std::cerr << "fgpu demo: " << missing.message() << "\n";
      return kExitFailure;
    }
  }
  // This process never loads libcuda.so.1 itself, so changing its own environment only
  // affects the probes it starts, exactly as `fgpu sim run` would set them up.
  Status applied = ApplyEnvironment(SimEnvironment(*target, *lib_dir, std::getenv("LD_LIBRARY_PATH")));
  if (!applied.ok()) {
    std::cerr << "fgpu demo: " << applied.message() << "\n";
    return kExitFailure;
  }

  std::cout << "fgpu demo: CUDA programs on the simulated GPU\n"
            << "  driver:  " << *lib_dir
            << "/libcuda.so.1 (first on LD_LIBRARY_PATH, as `fgpu sim run` sets it)\n"
            << "  devices: " << (target->config_path.empty() ? "default configuration" : target->config_path)
            << "; state in shared-memory segment " << target->segment << "\n";
  Status result;
  {
    SegmentRemover remover(target->segment);
    result = RunSteps({ProbeClient(*probe), *target, &std::cout});
  }
  std::cout << std::flush;
  if (!result.ok()) {
    std::cerr << "\nfgpu demo: FAILED: " << result.message() << "\n";
    return kExitFailure;
  }
  std::cout << "\nDemo complete; segment " << target->segment << " removed.\n";
  return kExitOk;
}

}  // namespace fgpu::cli
