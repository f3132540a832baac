#include <cstdlib>
#include <iostream>

#include "agent/agent.h"
#include "agent/config.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/run_agent.h"
#include "cli/run_plan.h"
#include "cli/run_workload.h"
#include "cli/suggest.h"
#include "simulate/plan.h"

namespace fgpu::cli {
namespace {

// --listen as the agent takes it: loopback HOST:PORT, `localhost:PORT` spelled 127.0.0.1.
Result<std::string> ListenAddress(const std::string& flag) {
  if (flag.empty()) return flag;
  Result<net::Endpoint> endpoint = ParseAgentEndpoint(flag, /*any_port=*/true);
  if (!endpoint.ok() || endpoint->unix_socket) {
    return Status::InvalidArgument("--listen wants 127.0.0.1:PORT or localhost:PORT, got '" + flag + "'");
  }
  if (endpoint->host != "127.0.0.1") {
    return Status::InvalidArgument("--listen is loopback only (127.0.0.1 or localhost): the API has no TLS");
  }
  return net::ToString(*endpoint);
}

// The agent's own checks of these exit 1 like its run-time failures; checked here first, a
// mistake on the command line or in the configuration file is a usage error (2) like every
// other command's.
Status CheckUsage(const AgentOptions& options, std::string* listen) {
  Result<std::string> address = ListenAddress(options.listen);
  if (!address.ok()) return address.status();
  *listen = *address;
  Result<agent::AgentConfig> config = agent::LoadConfig(options.config);
  if (!config.ok()) return Status::InvalidArgument("--config: " + config.status().message());
  return Status::Ok();
}

}  // namespace

std::vector<std::string> PlacementPolicyNames() {
  Result<std::vector<std::string>> all = simulate::ParsePolicies("all");
  return all.ok() ? *all : std::vector<std::string>();
}

CLI::App* AddAgentFlags(CLI::App& root, AgentOptions* options) {
  CLI::App* agent = root.add_subcommand("agent", "Run the node agent: owns this machine's GPU slices (docs/agent.md)");
  agent->add_option("--state", options->state, "State directory: agent.db, slices/, agent.sock")
      ->capture_default_str();
  agent->add_option("--listen", options->listen,
                    "Also serve the API on loopback TCP, e.g. 127.0.0.1:7070 or localhost:7070 (read-only without "
                    "--token-file)");
  agent->add_option("--socket", options->socket, "Unix socket path (default <state>/agent.sock)");
  const std::vector<std::string> policies = PlacementPolicyNames();
  agent->add_option("--policy", options->policy, "Placement policy (src/sched), one of: " + JoinChoices(policies))
      ->transform(CLI::IsMember(policies, CLI::ignore_case))
      ->capture_default_str();
  agent->add_option("--config", options->config,
                    "JSON configuration: stop-loss, who may ask for what, usage retention (docs/agent.md)");
  agent->add_option("--token-file", options->token_file,
                    "A 0600 file whose token makes a TCP client an admin (without it TCP is read-only)");
  agent->add_option("--log-level", options->log_level,
                    "Least level of the event log on stderr, one of: debug, info, warn, error (default: the "
                    "configuration's log_level, else info)")
      ->transform(CLI::IsMember({"debug", "info", "warn", "warning", "error"}, CLI::ignore_case));
  agent->add_option("--account-interval", options->account_interval_s, "Seconds between usage records (chargeback)")
      ->check(CLI::Range(0.1, 86400.0))
      ->capture_default_str();
  agent->footer("Example: fgpu sim run -- fgpu agent --state /tmp/fgpu-agent --listen 127.0.0.1:7070");
  return agent;
}

int RunAgent(const AgentOptions& options) {
  std::string listen;
  if (Status usage = CheckUsage(options, &listen); !usage.ok()) {
    std::cerr << "fgpu agent: " << usage.message() << "\n";
    return kExitUsage;
  }
  // The interposer the agent names to launchers; a build without it still runs the agent (the
  // launcher then finds libfgpu.so itself, as fgpu run does).
  Result<std::string> hook = ResolveHookLibrary();
  return agent::RunAgent({.state_dir = options.state,
                          .listen = listen,
                          .socket = options.socket,
                          .account_interval_s = options.account_interval_s,
                          .policy = options.policy,
                          .config = options.config,
                          .log_level = options.log_level,
                          .token_file = options.token_file,
                          .workload_preload = hook.ok() ? *hook : std::string(),
                          .workload_env = SimulatorEnvironmentForWorkloads(
                              std::getenv("FGPU_SIM_CONFIG"), std::getenv("FGPU_SIM_SEGMENT"), std::getenv("LD_LIBRARY_PATH"))});
}

}  // namespace fgpu::cli
