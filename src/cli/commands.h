// fgpu's subcommands: the front door of src/cli. Each subcommand lives in its own file as a
// pair: Add<Name>Flags() declares its flags under a parent node and fills an options
// struct; Run<Name>() does the work and returns the exit status (cli/exit_codes.h).
// main() wires the pairs into a CommandLine; tests call Add<Name>Flags() and parse.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace fgpu::cli {

// fgpu sim run [--config FILE] [--segment NAME] -- CMD ARGS...
struct SimRunOptions {
  std::string config;
  std::string segment;
  std::vector<std::string> command;
};
CLI::App* AddSimRunFlags(CLI::App& sim, SimRunOptions* options);
// Returns only on failure: on success the process becomes `command`.
int RunSimRun(const SimRunOptions& options);
// Shown when `sim run` is given options it does not know (the command's own options).
inline constexpr const char* kSimRunExtrasHint =
    "put the program after `--` so its options are not read as fgpu's, e.g. fgpu sim run -- sh -c 'exit 0'";

// fgpu sim status [--config FILE] [--segment NAME] [--json]
struct SimStatusOptions {
  std::string config;
  std::string segment;
  bool json = false;
};
CLI::App* AddSimStatusFlags(CLI::App& sim, SimStatusOptions* options);
int RunSimStatus(const SimStatusOptions& options);

// fgpu sim reset [--config FILE] [--segment NAME]
struct SimResetOptions {
  std::string config;
  std::string segment;
};
CLI::App* AddSimResetFlags(CLI::App& sim, SimResetOptions* options);
int RunSimReset(const SimResetOptions& options);

// The choices of --compute-mode and --tier (slice/compute_spec.h parses them).
inline const std::vector<std::string> kComputeModes = {"cap", "share"};
inline const std::vector<std::string> kTiers = {"latency", "standard", "batch"};
inline const std::vector<std::string> kIsolations = {"trusted", "hard", "exclusive"};

// fgpu run --memory SIZE [--device N|UUID] -- CMD ARGS...
// fgpu run [--compute PCT] [--compute-mode M] [--tier T] [--agent ENDPOINT] [--wait] [--tenant T]
struct RunOptions {
  std::string memory = "100%";
  std::string compute;  // empty: 100 alone; through the agent, in proportion to memory
  std::string compute_mode = "share";
  std::string tier = "standard";
  std::string device;  // empty: 0 alone; through the agent, its choice
  std::string agent;
  bool wait = false;
  std::string tenant = "default";
  std::string isolation = "trusted";  // through the agent: docs/mig.md "Isolation classes"
  std::string mig_profile;            // with hard isolation: the instance's profile ("3g.40gb")
  std::vector<std::string> command;
};
CLI::App* AddRunFlags(CLI::App& root, RunOptions* options);
// The command's exit status (128 + signal if it was killed), or an fgpu exit code.
int RunRun(const RunOptions& options);

// fgpu version (and fgpu --version, a flag of `root`)
std::string VersionLine();  // "fgpu 0.1.0"
CLI::App* AddVersionFlags(CLI::App& root);
int RunVersion();

// fgpu demo [--config FILE]
struct DemoOptions {
  std::string config;
};
CLI::App* AddDemoFlags(CLI::App& root, DemoOptions* options);
int RunDemo(const DemoOptions& options);

// fgpu simulate --nodes FILE --pods FILE [--policy LIST|all] [--seeds 42-51] [--inflate 1.3]
//               [--jobs N] [--out DIR] [--format table|json] [--authors FILE] [--ties first|random]
// fgpu simulate --time ... [--load LIST] [--baselines LIST|all] [--window H] [--warmup H]
//               [--drain H] [--tenants ORGSxTEAMS] [--zipf S] [--borrowing X] [--equal-quotas]
struct SimulateOptions {
  std::string nodes;
  std::string pods;
  std::string policy = "all";
  std::string seeds = "42-51";
  double inflate = 1.3;
  int jobs = 1;
  std::string out;
  std::string format = "table";
  std::string authors;
  std::string ties = "first";
  bool no_progress = false;
  // --time: governance in time (src/simulate/timeline.h)
  bool time = false;
  std::string loads = "1.2";
  std::string baselines = "all";
  double window_hours = 6;
  double warmup_hours = 1;
  double drain_hours = 2;
  std::string tenants = "2x4";
  double zipf = 1.0;
  double borrowing = 1.0;
  bool equal_quotas = false;
  // --mig: MIG against slices (simulate_mig_command.cc)
  bool mig = false;
  std::string mig_model = "H100-80GB";
  double mig_share = 0.5;
};
CLI::App* AddSimulateFlags(CLI::App& root, SimulateOptions* options);
int RunSimulate(const SimulateOptions& options);
int RunSimulateInTime(const SimulateOptions& options);  // simulate_time_command.cc
int RunSimulateMig(const SimulateOptions& options);     // simulate_mig_command.cc

// The placement policies src/sched knows, for --policy's help and check.
std::vector<std::string> PlacementPolicyNames();

// fgpu agent [--state DIR] [--listen 127.0.0.1:PORT] [--socket PATH]
struct AgentOptions {
  std::string state = "/var/lib/fgpu";
  std::string listen;
  std::string socket;
  double account_interval_s = 60;
  std::string policy = "FGD+";
  std::string config;
  std::string token_file;
  std::string log_level;  // empty: the configuration's, else info
};
CLI::App* AddAgentFlags(CLI::App& root, AgentOptions* options);
int RunAgent(const AgentOptions& options);

// fgpu status [--agent ENDPOINT] [--json]
struct StatusOptions {
  std::string agent;
  bool json = false;
};
CLI::App* AddStatusFlags(CLI::App& root, StatusOptions* options);
int RunStatus(const StatusOptions& options);

// fgpu top [--agent ENDPOINT] [--interval S] [--count N]
struct TopOptions {
  std::string agent;
  double interval_s = 1.0;
  int count = 0;
};
CLI::App* AddTopFlags(CLI::App& root, TopOptions* options);
int RunTop(const TopOptions& options);

// fgpu report [--since 24h] [--by tenant|slice] [--format table|csv|json] [--agent ENDPOINT]
struct ReportOptions {
  std::string since = "24h";
  std::string by = "tenant";
  std::string format = "table";
  std::string agent;
};
CLI::App* AddReportFlags(CLI::App& root, ReportOptions* options);
int RunReport(const ReportOptions& options);

// fgpu completion bash|zsh, fgpu man: generated from `root`, the whole tree (cli_reference.h).
struct CompletionOptions {
  std::string shell;
};
CLI::App* AddCompletionFlags(CLI::App& root, CompletionOptions* options);
int RunCompletion(const CompletionOptions& options, const CLI::App& root);
CLI::App* AddManFlags(CLI::App& root);
int RunMan(const CLI::App& root);

// fgpu slice list|show|resize|delete [--agent ENDPOINT]: the agent's slices without curl.
struct SliceOptions {
  std::string agent;
  bool json = false;
  std::vector<std::string> ids;  // show: one; delete: one or more; resize: one
  std::string memory;            // resize: empty = unchanged
  std::string compute;
  std::string compute_mode;
  std::string tier;
};
// Each under the `slice` group (CommandLine::AddGroup), all filling one options struct.
CLI::App* AddSliceListFlags(CLI::App& slice, SliceOptions* options);
CLI::App* AddSliceShowFlags(CLI::App& slice, SliceOptions* options);
CLI::App* AddSliceResizeFlags(CLI::App& slice, SliceOptions* options);
CLI::App* AddSliceDeleteFlags(CLI::App& slice, SliceOptions* options);
int RunSliceList(const SliceOptions& options);
int RunSliceShow(const SliceOptions& options);
int RunSliceResize(const SliceOptions& options);
int RunSliceDelete(const SliceOptions& options);

}  // namespace fgpu::cli
