// fgpu status and fgpu top: the agent's GPUs and slices (cli/agent_status.h renders them).
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "api/codec.h"
#include "cli/agent_status.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/run_agent.h"

namespace fgpu::cli {
namespace {

struct Reading {
  std::vector<api::Gpu> gpus;
  std::vector<api::Slice> slices;  // with what each uses now
  std::vector<api::QueueItem> queue;
  std::vector<api::Quota> quotas;
};

Result<Reading> ReadAgent(const net::Endpoint& agent) {
  const api::AgentClient client = ReadingClient(agent);
  Result<std::vector<api::Gpu>> gpus = client.ListGpus();
  if (!gpus.ok()) return gpus.status();
  Result<std::vector<api::Slice>> slices = client.ListSlices({.usage = true, .idempotency_key = ""});
  if (!slices.ok()) return slices.status();
  Reading reading{std::move(*gpus), std::move(*slices), {}, {}};
  // An agent older than the queue and quota listings answers 404: shown as none.
  if (Result<std::vector<api::QueueItem>> queue = client.Queue(); queue.ok()) reading.queue = std::move(*queue);
  if (Result<std::vector<api::Quota>> quotas = client.Quotas(); quotas.ok()) reading.quotas = std::move(*quotas);
  return reading;
}

// Each slice's achieved share of a GPU since the last reading, from its measured busy time.
class AchievedShares {
 public:
  std::map<std::string, double> Update(const std::vector<api::Slice>& slices) {
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - before_).count();
    std::map<std::string, double> achieved, busy_now;
    for (const api::Slice& slice : slices) {
      const std::string& id = slice.id;
      busy_now[id] = slice.usage ? slice.usage->compute_busy_seconds : 0.0;
      const auto it = busy_before_.find(id);
      if (it != busy_before_.end() && seconds > 0) achieved[id] = 100.0 * (busy_now[id] - it->second) / seconds;
    }
    busy_before_ = std::move(busy_now);
    before_ = now;
    return achieved;
  }

 private:
  std::map<std::string, double> busy_before_;
  std::chrono::steady_clock::time_point before_ = std::chrono::steady_clock::now();
};

}  // namespace

CLI::App* AddStatusFlags(CLI::App& root, StatusOptions* options) {
  CLI::App* status = root.add_subcommand("status", "Show the agent's GPUs and slices: caps, usage, shares, tiers");
  status->add_option("--agent", options->agent, kAgentFlagHelp);
  status->add_flag("--json", options->json,
                   "One JSON document for scripts: {\"gpus\": GET /v1/gpus, \"slices\": GET /v1/slices?usage=1, "
                   "\"queue\": GET /v1/queue, \"quotas\": GET /v1/quotas}");
  return status;
}

int RunStatus(const StatusOptions& options) {
  Result<net::Endpoint> agent = RunningAgent(options.agent);
  Result<Reading> reading = agent.ok() ? ReadAgent(*agent) : Result<Reading>(agent.status());
  if (!reading.ok()) {
    std::cerr << "fgpu status: " << reading.status().message() << "\n";
    return ExitCodeOf(reading.status());
  }
  if (options.json) {
    // The agent's own documents, written back by the codec that read them.
    const nlohmann::json document = {{"gpus", api::ToJson(reading->gpus)},
                                     {"slices", api::ToJson(reading->slices)},
                                     {"queue", api::ToJson(reading->queue)},
                                     {"quotas", api::ToJson(reading->quotas)}};
    std::cout << document.dump(2) << "\n";
  } else {
    std::cout << RenderAgentStatus(reading->gpus, reading->slices) << RenderQueueAndQuotas(reading->queue, reading->quotas);
  }
  return kExitOk;
}

CLI::App* AddTopFlags(CLI::App& root, TopOptions* options) {
  CLI::App* top = root.add_subcommand("top", "fgpu status every second, timestamped, with each slice's achieved compute share");
  top->add_option("--agent", options->agent, kAgentFlagHelp);
  top->add_option("--interval", options->interval_s, "Seconds between refreshes")->check(CLI::Range(0.1, 3600.0));
  top->add_option("--count", options->count, "Refreshes before exiting (0: until interrupted)");
  return top;
}

int RunTop(const TopOptions& options) {
  Result<net::Endpoint> agent = RunningAgent(options.agent);
  if (!agent.ok()) {
    std::cerr << "fgpu top: " << agent.status().message() << "\n";
    return ExitCodeOf(agent.status());
  }
  AchievedShares shares;
  for (int shown = 0; options.count == 0 || shown < options.count; ++shown) {
    Result<Reading> reading = ReadAgent(*agent);
    if (!reading.ok()) {
      std::cerr << "fgpu top: " << reading.status().message() << "\n";
      return kExitFailure;
    }
    const std::map<std::string, double> achieved = shares.Update(reading->slices);
    if (isatty(STDOUT_FILENO)) std::cout << "\033[H\033[2J";
    std::cout << TopHeading(std::time(nullptr), options.interval_s)
              << RenderAgentStatus(reading->gpus, reading->slices, &achieved) << std::flush;
    if (options.count == 0 || shown + 1 < options.count) {
      std::this_thread::sleep_for(std::chrono::duration<double>(options.interval_s));
    }
  }
  return kExitOk;
}

}  // namespace fgpu::cli
