#include "cli/run_agent.h"

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "api/agent_client.h"
#include "api/workload_env.h"
#include "cli/agent_status.h"
#include "cli/exit_codes.h"
#include "cli/run_workload.h"
#include "core/units.h"

namespace fgpu::cli {
namespace {


std::atomic<bool> g_interrupted{false};
void NoteInterrupt(int) { g_interrupted.store(true); }

// "40%" of the GPU the slice will go on: the named one, else the first (a node's GPUs are alike).
Result<uint64_t> MemoryBytes(const RunOptions& options, const api::AgentClient& agent) {
  // A whole instance or GPU: the default asks for none in particular (the smallest free one).
  if (options.isolation != "trusted" && options.memory == "100%") return uint64_t{1};
  // A size needs no GPU to check it; the agent knows what fits.
  if (options.memory.empty() || options.memory.back() != '%') return ParseMemoryLimit(options.memory, UINT64_MAX);
  Result<std::vector<api::Gpu>> gpus = agent.ListGpus();
  if (!gpus.ok()) return gpus.status();
  if (gpus->empty()) return Status::Unavailable("the agent lists no GPU");
  uint64_t total = gpus->front().memory_total;
  for (const api::Gpu& gpu : *gpus) {
    if (gpu.uuid == options.device || std::to_string(gpu.index) == options.device) total = gpu.memory_total;
  }
  return ParseMemoryLimit(options.memory, total);
}

Result<api::SliceRequest> Request(const RunOptions& options, uint64_t memory) {
  api::SliceRequest request;
  request.memory_bytes = memory;
  request.compute_mode = options.compute_mode;
  request.tier = options.tier;
  request.tenant = options.tenant;
  if (options.isolation != "trusted") request.isolation = options.isolation;
  if (!options.mig_profile.empty()) request.mig_profile = options.mig_profile;
  request.release_on_exit = true;
  request.wait = options.wait;
  if (!options.compute.empty()) {
    Result<uint32_t> share = ParseComputeShare(options.compute);
    if (!share.ok()) return share.status();
    request.compute = *share;
  }
  if (!options.device.empty()) request.gpu = options.device;
  return request;
}

// Polls a queued request until it is placed; SIGINT/SIGTERM give the place up.
Result<api::Slice> WaitInQueue(const api::AgentClient& agent, const api::QueueTicket& ticket) {
  struct sigaction action {};
  action.sa_handler = NoteInterrupt;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  int position = ticket.position;
  std::cerr << "fgpu run: no GPU has room; waiting in the agent's queue (position " << position << ")\n";
  while (!g_interrupted.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    Result<api::CreateReply> answer = agent.PollTicket(ticket.ticket);
    if (!answer.ok()) {
      if (answer.status().code() == StatusCode::kNotFound) {
        return Status::Unavailable("the agent lost the queued request: " + answer.status().message());
      }
      return answer.status();
    }
    if (answer->slice) return *answer->slice;
    const int now = answer->ticket->position;
    if (now != position) std::cerr << "fgpu run: queue position " << now << "\n";
    position = now;
  }
  (void)agent.CancelTicket(ticket.ticket);
  return Status::Unavailable("interrupted while waiting");
}

// What the agent's refusal of the slice means for the user: a request larger than every GPU
// (or than the named one) can never fit, a usage error; no room now is a refusal, with the room
// that is free and, unless asked already, --wait.
int ReportRefusal(const RunOptions& options, const api::AgentClient& agent, const Status& refusal, uint64_t memory) {
  std::cerr << "fgpu run: the agent refused the slice: " << refusal.message() << "\n";
  if (refusal.code() != StatusCode::kResourceExhausted) {
    return refusal.code() == StatusCode::kInvalidArgument || refusal.code() == StatusCode::kNotFound ? kExitUsage
                                                                                                       : kExitFailure;
  }
  Result<std::vector<api::Gpu>> gpus = agent.ListGpus();
  if (!gpus.ok()) return kExitFailure;
  if (LargerThanEveryGpu(*gpus, memory, options.device)) {
    std::cerr << "fgpu run: --memory " << options.memory << " is more than "
              << (options.device.empty() ? "any GPU here has" : "GPU " + options.device + " has") << ", even empty\n";
    return kExitUsage;
  }
  std::cerr << "fgpu run: free now: " << DescribeFreeRoom(*gpus) << "\n";
  if (!options.wait) std::cerr << "fgpu run: add --wait to queue until a GPU has room\n";
  return kExitFailure;
}

// The slice's "env" from the agent, applied over this shell's as every launcher applies it
// (AgentSliceEnvironment: api/workload_env.h's merge). The interposer is this fgpu's when the
// agent names none; an older agent that sends no env gets the three variables every slice needs.
Result<Environment> SliceEnvironment(const api::Slice& slice) {
  const api::Env env = slice.details && !slice.details->env.empty()
                           ? slice.details->env
                           : api::SliceEnv({}, slice.details ? slice.details->dir : "", slice.gpu);
  const bool named = std::any_of(env.begin(), env.end(), [](const auto& entry) {
    return entry.first == "LD_PRELOAD" && !entry.second.empty();
  });
  std::string own_hook;
  if (!named) {
    Result<std::string> hook = ResolveHookLibrary();
    if (!hook.ok()) return hook.status();
    own_hook = *hook;
  }
  return AgentSliceEnvironment(env, own_hook, std::getenv("LD_PRELOAD"), std::getenv("LD_LIBRARY_PATH"));
}

}  // namespace

api::AgentClient ReadingClient(const net::Endpoint& agent, int timeout_ms) {
  // The client passes its transport's errors through as they are.
  return api::AgentClient([agent, timeout_ms](const std::string& method, const std::string& target,
                                              const std::string& body) -> Result<net::HttpResponse> {
    Result<net::HttpResponse> response = net::HttpCall(agent, method, target, body, timeout_ms);
    if (response.ok() && response->status != 200) {
      return Status::Unavailable("the agent answered " + std::to_string(response->status) + " to " + target);
    }
    return response;
  });
}

Result<net::Endpoint> RunningAgent(const std::string& flag) {
  Result<std::optional<net::Endpoint>> agent = FindAgent(flag);
  if (!agent.ok()) return agent.status();
  if (!*agent) {
    return Status::Unavailable(std::string("no agent is running (looked for $FGPU_AGENT and ") + kDefaultAgentSocket +
                               "); start one with `fgpu agent` or name it with --agent");
  }
  return **agent;
}

Result<net::Endpoint> ParseAgentEndpoint(const std::string& text, bool any_port) {
  static constexpr const char* kForms = "; use the agent's socket path (e.g. /var/lib/fgpu/agent.sock), 127.0.0.1:PORT or localhost:PORT";
  if (text.empty()) return Status::InvalidArgument(std::string("empty agent address") + kForms);
  std::string normal = text;
  if (normal.find(':') == std::string::npos) normal = "unix:" + normal;  // `agent.sock` in this directory
  if (normal.rfind("localhost:", 0) == 0) normal = "127.0.0.1:" + normal.substr(10);
  Result<net::Endpoint> endpoint = net::ParseEndpoint(normal, any_port);
  if (!endpoint.ok()) return Status::InvalidArgument("'" + text + "' is not an agent address" + kForms);
  return endpoint;
}

Status RequireUnixSocket(const net::Endpoint& agent) {
  if (agent.unix_socket) return Status::Ok();
  return Status::InvalidArgument(
      "--agent " + net::ToString(agent) + ": fgpu run needs the agent's Unix socket (only there may it join the slice, "
      "queue with --wait and have the slice released when the program ends); name it, e.g. --agent " +
      kDefaultAgentSocket + " (`fgpu agent --state DIR` listens on DIR/agent.sock). TCP serves fgpu status, top, "
      "report and slice");
}

Result<std::optional<net::Endpoint>> FindAgent(const std::string& flag, bool unix_socket_only) {
  const char* from_env = std::getenv("FGPU_AGENT");
  std::string named = !flag.empty() ? flag : (from_env != nullptr ? from_env : "");
  if (named.empty()) {
    struct stat info {};
    if (stat(kDefaultAgentSocket, &info) != 0 || !S_ISSOCK(info.st_mode)) return std::optional<net::Endpoint>();
    named = kDefaultAgentSocket;
  }
  Result<net::Endpoint> endpoint = ParseAgentEndpoint(named);
  if (!endpoint.ok()) return endpoint.status();
  if (unix_socket_only) {
    if (Status socket = RequireUnixSocket(*endpoint); !socket.ok()) return socket;
  }
  Result<api::Health> health = api::AgentClient(*endpoint, kAgentCallTimeoutMs).Health();
  if (!health.ok()) {
    if (flag.empty() && from_env == nullptr) return std::optional<net::Endpoint>();  // a stale default socket
    return Status::Unavailable("no agent answers at " + named + ": " + health.status().message());
  }
  return std::optional<net::Endpoint>(*endpoint);
}

int RunThroughAgent(const RunOptions& options, const net::Endpoint& endpoint) {
  if (Status socket = RequireUnixSocket(endpoint); !socket.ok()) {
    std::cerr << "fgpu run: " << socket.message() << "\n";
    return kExitUsage;
  }
  const api::AgentClient agent(endpoint, kAgentCallTimeoutMs);
  Result<uint64_t> memory = MemoryBytes(options, agent);
  Result<api::SliceRequest> request = memory.ok() ? Request(options, *memory) : Result<api::SliceRequest>(memory.status());
  if (!request.ok()) {
    std::cerr << "fgpu run: " << request.status().message() << "\n";
    return ExitCodeOf(request.status());
  }
  Result<api::CreateReply> answer = agent.CreateSlice(*request);
  if (!answer.ok()) {
    const Status& refused = answer.status();
    if (refused.code() == StatusCode::kUnavailable || refused.code() == StatusCode::kInternal) {
      std::cerr << "fgpu run: the agent at " << net::ToString(endpoint) << ": " << refused.message() << "\n";
      return kExitFailure;
    }
    return ReportRefusal(options, agent, refused, *memory);
  }
  Result<api::Slice> placed = answer->slice ? Result<api::Slice>(*answer->slice) : WaitInQueue(agent, *answer->ticket);
  if (!placed.ok()) {
    std::cerr << "fgpu run: " << placed.status().message() << "\n";
    return kExitFailure;
  }
  const api::Slice& slice = *placed;
  const std::string& id = slice.id;
  std::cerr << "fgpu run: slice " << id << " on " << slice.gpu << " (" << FormatByteSize(slice.memory_bytes) << ", "
            << slice.compute << " % compute, " << slice.tier << ")\n";
  // This process joins the slice before it starts the workload, which inherits the membership
  // (the slice's cgroup, and descent from a joined process): stop-loss signals members only.
  if (Result<api::JoinReply> joined = agent.JoinSlice(id); !joined.ok()) {
    std::cerr << "fgpu run: slice " << id << ": could not join it (" << joined.status().message()
              << "); the agent cannot evict the workload, only release the slice\n";
  }
  Result<Environment> env = SliceEnvironment(slice);
  if (!env.ok()) {
    std::cerr << "fgpu run: " << env.status().message() << "\n";
    (void)agent.DeleteSlice(id);
    return kExitFailure;
  }
  const int exit_code = RunWorkload(options.command, *env);
  if (!agent.DeleteSlice(id).ok()) {
    std::cerr << "fgpu run: could not release slice " << id << " (the agent releases it once every process exits)\n";
  }
  return exit_code;
}

}  // namespace fgpu::cli
