#include <cstdlib>

#include "agent/agent.h"
#include "cli/commands.h"
#include "cli/run_plan.h"
#include "cli/run_workload.h"

namespace fgpu::cli {

CLI::App* AddAgentFlags(CLI::App& root, AgentOptions* options) {
  CLI::App* agent = root.add_subcommand("agent", "Run the node agent: owns this machine's GPU slices (docs/agent.md)");
  agent->add_option("--state", options->state, "State directory: agent.db, slices/, agent.sock")
      ->capture_default_str();
  agent->add_option("--listen", options->listen, "Also serve the API on loopback TCP, e.g. 127.0.0.1:7070");
  agent->add_option("--socket", options->socket, "Unix socket path (default <state>/agent.sock)");
  agent->add_option("--policy", options->policy, "Placement policy (src/sched): FGD+, FGD, BestFit, GpuPacking, ...")
      ->capture_default_str();
  agent->add_option("--config", options->config,
                    "JSON configuration: stop-loss, who may ask for what, usage retention (docs/agent.md)");
  agent->add_option("--token-file", options->token_file,
                    "A 0600 file whose token makes a TCP client an admin (without it TCP is read-only)");
  agent->add_option("--account-interval", options->account_interval_s, "Seconds between usage records (chargeback)")
      ->check(CLI::Range(0.1, 86400.0))
      ->capture_default_str();
  agent->footer("Example: fgpu sim run -- fgpu agent --state /tmp/fgpu-agent --listen 127.0.0.1:7070");
  return agent;
}

int RunAgent(const AgentOptions& options) {
  // The interposer the agent names to launchers; a build without it still runs the agent (the
  // launcher then finds libfgpu.so itself, as fgpu run does).
  Result<std::string> hook = ResolveHookLibrary();
  return agent::RunAgent({.state_dir = options.state,
                          .listen = options.listen,
                          .socket = options.socket,
                          .account_interval_s = options.account_interval_s,
                          .policy = options.policy,
                          .config = options.config,
                          .token_file = options.token_file,
                          .workload_preload = hook.ok() ? *hook : std::string(),
                          .workload_env = SimulatorEnvironmentForWorkloads(
                              std::getenv("FGPU_SIM_CONFIG"), std::getenv("FGPU_SIM_SEGMENT"), std::getenv("LD_LIBRARY_PATH"))});
}

}  // namespace fgpu::cli
