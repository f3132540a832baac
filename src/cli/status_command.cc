#include <unistd.h>

#include <chrono>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/agent_status.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/run_agent.h"

namespace fgpu::cli {

using nlohmann::json;

CLI::App* AddStatusFlags(CLI::App& root, StatusOptions* options) {
  CLI::App* status = root.add_subcommand("status", "Show the agent's GPUs and slices: caps, usage, shares, tiers");
  status->add_option("--agent", options->agent, "The agent's socket or 127.0.0.1:PORT");
  return status;
}

int RunStatus(const StatusOptions& options) {
  Result<net::Endpoint> agent = RunningAgent(options.agent);
  Result<json> gpus = agent.ok() ? GetFromAgent(*agent, "/v1/gpus") : Result<json>(agent.status());
  Result<json> slices = gpus.ok() ? GetFromAgent(*agent, "/v1/slices?usage=1") : Result<json>(gpus.status());
  if (!slices.ok()) {
    std::cerr << "fgpu status: " << slices.status().message() << "\n";
    return kExitFailure;
  }
  std::cout << RenderAgentStatus(*gpus, *slices);
  return kExitOk;
}

CLI::App* AddTopFlags(CLI::App& root, TopOptions* options) {
  CLI::App* top = root.add_subcommand("top", "fgpu status every second, with each slice's achieved compute share");
  top->add_option("--agent", options->agent, "The agent's socket or 127.0.0.1:PORT");
  top->add_option("--interval", options->interval_s, "Seconds between refreshes")->check(CLI::Range(0.1, 3600.0));
  top->add_option("--count", options->count, "Refreshes before exiting (0: until interrupted)");
  return top;
}

int RunTop(const TopOptions& options) {
  Result<net::Endpoint> agent = RunningAgent(options.agent);
  if (!agent.ok()) {
    std::cerr << "fgpu top: " << agent.status().message() << "\n";
    return kExitFailure;
  }
  std::map<std::string, double> busy_before;
  auto before = std::chrono::steady_clock::now();
  for (int shown = 0; options.count == 0 || shown < options.count; ++shown) {
    Result<json> gpus = GetFromAgent(*agent, "/v1/gpus");
    Result<json> slices = gpus.ok() ? GetFromAgent(*agent, "/v1/slices?usage=1") : Result<json>(gpus.status());
    if (!slices.ok()) {
      std::cerr << "fgpu top: " << slices.status().message() << "\n";
      return kExitFailure;
    }
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - before).count();
    std::map<std::string, double> achieved, busy_now;
    for (const json& slice : *slices) {
      const std::string id = slice.value("id", "");
      busy_now[id] = slice.value("compute_busy_seconds", 0.0);
      const auto it = busy_before.find(id);
      if (it != busy_before.end() && seconds > 0) achieved[id] = 100.0 * (busy_now[id] - it->second) / seconds;
    }
    if (isatty(STDOUT_FILENO)) std::cout << "\033[H\033[2J";
    std::cout << RenderAgentStatus(*gpus, *slices, &achieved) << std::flush;
    busy_before = busy_now;
    before = now;
    if (options.count == 0 || shown + 1 < options.count) {
      std::this_thread::sleep_for(std::chrono::duration<double>(options.interval_s));
    }
  }
  return kExitOk;
}

}  // namespace fgpu::cli
