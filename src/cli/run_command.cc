// fgpu run: a private slice on one GPU for one command, with no agent.
//
// Makes a slice (src/slice) capped at --memory, with --compute/--compute-mode/--tier, on the
// chosen GPU, runs the command with the
// interposer preloaded (LD_PRELOAD=libfgpu.so), FGPU_SLICE naming the slice and only that GPU
// visible, waits for it, forwards the signals a terminal or a job runner sends, removes the
// slice, and exits with the command's status. Composes with the simulator: under
// `fgpu sim run -- fgpu run ...` NVML and the driver are the simulated ones.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/gpu_query.h"
#include "cli/run_plan.h"
#include "cli/run_agent.h"
#include "cli/run_workload.h"
#include "cli/sim_dir.h"
#include "core/units.h"
#include "slice/compute_spec.h"
#include "slice/slice.h"

namespace fgpu::cli {
namespace {

std::atomic<pid_t> g_child{0};

void ForwardSignal(int signal_number) {
  const pid_t child = g_child.load();
  if (child > 0) kill(child, signal_number);
}

void ForwardTerminationSignals() {
  struct sigaction action {};
  action.sa_handler = ForwardSignal;
  sigemptyset(&action.sa_mask);
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(signal_number, &action, nullptr);
}

std::string SliceParentDir() {
  const char* configured = std::getenv("FGPU_RUN_DIR");
  if (configured != nullptr && *configured != '\0') return configured;
  return "/dev/shm/fgpu-run-" + std::to_string(getuid());
}

}  // namespace

Result<std::string> ResolveHookLibrary() {
  const char* configured = std::getenv("FGPU_HOOK_LIB");
  std::string path;
  if (configured != nullptr && *configured != '\0') {
    path = std::filesystem::absolute(configured).string();
  } else {
    Result<std::string> self = SelfExecutablePath();
    if (!self.ok()) return self.status();
    path = HookLibraryBeside(*self);
  }
  if (access(path.c_str(), R_OK) != 0) {
    return Status::NotFound("the interposer " + path + " is missing; build the `fgpu_hook` target or set FGPU_HOOK_LIB");
  }
  return path;
}

namespace {

// Creates the slice directory; a leftover of an earlier run with our pid (necessarily dead:
// PIDs are unique among live processes) is removed first.
Result<slice::SliceAdmin> CreateSlice(const std::string& dir, const slice::SliceSpec& spec) {
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(dir).parent_path(), error);
  if (error) return Status::Unavailable("cannot create " + std::filesystem::path(dir).parent_path().string());
  if (std::filesystem::exists(dir)) {
    Result<slice::SliceAdmin> stale = slice::SliceAdmin::Open(dir);
    if (stale.ok()) (void)stale->Remove();
    std::filesystem::remove_all(dir, error);
  }
  return slice::SliceAdmin::Create(dir, spec);
}

int WaitForChild(pid_t child) {
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return kExitFailure;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : kExitFailure;
}

}  // namespace

int RunWorkload(const std::vector<std::string>& command, const Environment& env) {
  ForwardTerminationSignals();
  const pid_t child = fork();
  if (child == 0) {
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> argv;
    for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "fgpu run: cannot run '%s': %s\n", argv[0], std::strerror(errno));
    _exit(kExitCannotExec);
  }
  if (child < 0) {
    std::cerr << "fgpu run: fork failed: " << std::strerror(errno) << "\n";
    return kExitFailure;
  }
  g_child.store(child);
  return WaitForChild(child);
}

CLI::App* AddRunFlags(CLI::App& root, RunOptions* options) {
  CLI::App* run = root.add_subcommand("run", "Run a program in a GPU slice with an enforced memory cap and compute share");
  run->add_option("--memory", options->memory,
                  "Memory cap: 4G, 4Gi, 4GiB, 512MiB, 1.5GiB, a byte count, or 40% of the GPU. The CUDA context "
                  "is charged to the slice (measured when the program creates it: about 500 MiB on an H100 with "
                  "CUDA 12), so ask for that much more than the program allocates")
      ->default_val("100%");
  run->add_option("--compute", options->compute,
                  "Compute share: percent of the GPU's time, 1-100 (default: 100 alone, in proportion to memory "
                  "through the agent)");
  run->add_option("--compute-mode", options->compute_mode,
                  "One of: cap (never more than the share), share (at least the share, idle time too)")
      ->transform(CLI::IsMember(kComputeModes, CLI::ignore_case))
      ->default_val("share");
  run->add_option("--tier", options->tier,
                  "Priority beside other slices, one of: latency, standard, batch (within every slice's guarantee)")
      ->transform(CLI::IsMember(kTiers, CLI::ignore_case))
      ->default_val("standard");
  run->add_option("--device", options->device,
                  "The GPU: NVML index (as nvidia-smi numbers them) or UUID; default 0, or the agent's choice");
  run->add_option("--agent", options->agent,
                  std::string("The agent's Unix socket (default $FGPU_AGENT, else ") + kDefaultAgentSocket +
                      " if present; none: a private slice). `fgpu agent --state DIR` listens on DIR/agent.sock");
  run->add_flag("--wait", options->wait, "Through the agent: queue until a GPU has room instead of failing");
  run->add_option("--tenant", options->tenant, "Through the agent: who is billed")->default_val("default");
  run->add_option("--isolation", options->isolation,
                  "Through the agent, one of: trusted (a slice beside others), hard (a MIG instance of its own, "
                  "the smallest with --memory), exclusive (a GPU of the exclusive class, whole)")
      ->transform(CLI::IsMember(kIsolations, CLI::ignore_case))
      ->default_val("trusted");
  run->add_option("--mig-profile", options->mig_profile,
                  "With --isolation hard: a MIG instance of this profile (3g.40gb), made on a dynamic MIG GPU "
                  "when none is free");
  run->add_option("command", options->command, "The program and its arguments, after `--`")->required();
  run->footer("Example: fgpu run --memory 10GiB --compute 30 -- python3 serve.py\n"
              "On a machine without a GPU: fgpu sim run -- fgpu run --memory 4GiB -- ./my_cuda_program\n"
              "Exit status: the program's; 2 for a usage error, 1 when the slice is refused (no room: try --wait)");
  return run;
}

namespace {

// The words that need no GPU to check, checked before any agent or GPU is looked for: a
// malformed value is a usage error on every path.
Status CheckRunWords(const RunOptions& options) {
  if (options.memory.empty() || options.memory.back() != '%') {
    Result<uint64_t> memory = ParseMemoryLimit(options.memory, UINT64_MAX);
    if (!memory.ok()) return memory.status();
  }
  if (!options.compute.empty()) {
    Result<uint32_t> share = ParseComputeShare(options.compute);
    if (!share.ok()) return share.status();
  }
  if (!options.mig_profile.empty() && options.isolation != "hard") {
    return Status::InvalidArgument("--mig-profile takes a MIG instance whole: add --isolation hard");
  }
  return Status::Ok();
}

}  // namespace

int RunRun(const RunOptions& options) {
  if (Status words = CheckRunWords(options); !words.ok()) {
    std::cerr << "fgpu run: " << words.message() << "\n";
    return kExitUsage;
  }
  Result<std::optional<net::Endpoint>> agent = FindAgent(options.agent, /*unix_socket_only=*/true);
  if (!agent.ok()) {
    std::cerr << "fgpu run: " << agent.status().message() << "\n";
    return ExitCodeOf(agent.status());
  }
  if (*agent) return RunThroughAgent(options, **agent);
  if (options.isolation != "trusted") {
    std::cerr << "fgpu run: --isolation " << options.isolation
              << " needs the agent, which owns the MIG instances and exclusive GPUs (--agent or $FGPU_AGENT)\n";
    return kExitUsage;
  }
  Result<GpuInfo> gpu = QueryGpu(options.device.empty() ? "0" : options.device);
  if (!gpu.ok()) {
    std::cerr << "fgpu run: " << gpu.status().message() << "\n";
    return gpu.status().code() == StatusCode::kNotFound ? kExitUsage : kExitFailure;
  }
  Result<uint64_t> cap = ParseMemoryLimit(options.memory, gpu->total_bytes);
  if (!cap.ok()) {
    std::cerr << "fgpu run: " << cap.status().message() << "\n";
    return kExitUsage;
  }
  Result<uint32_t> share = ParseComputeShare(options.compute.empty() ? "100" : options.compute);
  Result<slice::ComputeMode> mode = slice::ParseComputeMode(options.compute_mode);
  Result<slice::Tier> tier = slice::ParseTier(options.tier);
  for (const Status& status : {share.status(), mode.status(), tier.status()}) {
    if (!status.ok()) {
      std::cerr << "fgpu run: " << status.message() << "\n";
      return kExitUsage;
    }
  }
  Result<std::string> hook = ResolveHookLibrary();
  if (!hook.ok()) {
    std::cerr << "fgpu run: " << hook.status().message() << "\n";
    return kExitFailure;
  }
  slice::SliceSpec spec;
  spec.id = "run-" + std::to_string(getpid());
  spec.devices.push_back({.uuid = gpu->uuid, .memory_cap = *cap, .compute_share = *share,
                          .compute_mode = *mode, .tier = *tier});
  const std::string dir = SliceParentDir() + "/" + spec.id;
  Result<slice::SliceAdmin> admin = CreateSlice(dir, spec);
  if (!admin.ok()) {
    std::cerr << "fgpu run: cannot create the slice: " << admin.status().message() << "\n";
    return kExitFailure;
  }

  const int exit_code = RunWorkload(options.command, WorkloadEnvironment(*hook, std::getenv("LD_PRELOAD"), dir, gpu->uuid));
  const Status removed = admin->Remove();
  if (!removed.ok()) std::cerr << "fgpu run: could not remove the slice " << dir << ": " << removed.message() << "\n";
  return exit_code;
}

}  // namespace fgpu::cli
