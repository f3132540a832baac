// fgpu slice list|show|resize|delete: the agent's slice API (docs/agent.md) from the command
// line, so nobody needs curl. Over the Unix socket the agent knows who asks (owners manage
// their slices, root all); over TCP it is read-only unless the client holds the admin token.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/agent_status.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/run_agent.h"
#include "cli/run_plan.h"
#include "core/units.h"

namespace fgpu::cli {
namespace {

using nlohmann::json;

std::string ErrorText(const json& body) {
  return body.is_object() && body.contains("error") && body["error"].is_string() ? body["error"].get<std::string>()
                                                                                 : body.dump();
}

// The exit status for an HTTP status the agent answered: a malformed request or an unknown
// slice is the user's mistake (2); refusals for room or permission are run-time (1).
int ExitCodeOfHttp(int status) { return status == 400 || status == 404 ? kExitUsage : kExitFailure; }

// One call; on anything but `expected`, the agent's reason on stderr and the exit status.
struct Answer {
  json body;
  int exit_code = kExitOk;
};
Answer Call(const char* what, const net::Endpoint& agent, const std::string& method, const std::string& path,
            const std::string& body, int expected) {
  int status = 0;
  Result<json> answer = CallAgent(agent, method, path, body, &status);
  if (!answer.ok()) {
    std::cerr << "fgpu slice " << what << ": " << answer.status().message() << "\n";
    return {json(), ExitCodeOf(answer.status())};
  }
  if (status != expected) {
    std::cerr << "fgpu slice " << what << ": " << ErrorText(*answer) << "\n";
    return {*answer, ExitCodeOfHttp(status)};
  }
  return {*answer, kExitOk};
}

Result<net::Endpoint> Agent(const char* what, const SliceOptions& options) {
  Result<net::Endpoint> agent = RunningAgent(options.agent);
  if (!agent.ok()) std::cerr << "fgpu slice " << what << ": " << agent.status().message() << "\n";
  return agent;
}

void AddAgentFlag(CLI::App* command, SliceOptions* options) {
  command->add_option("--agent", options->agent, kAgentFlagHelp);
}

// --memory for a resize: a size, or a percentage of the GPU the slice is on.
Result<uint64_t> ResizeMemory(const net::Endpoint& agent, const json& slice, const std::string& text) {
  if (text.back() != '%') return ParseMemoryLimit(text, UINT64_MAX);
  Result<json> gpus = GetFromAgent(agent, "/v1/gpus");
  if (!gpus.ok()) return gpus.status();
  for (const json& gpu : *gpus) {
    if (gpu.value("uuid", "") == slice.value("gpu", "")) return ParseMemoryLimit(text, gpu.value("memory_total", uint64_t{0}));
  }
  return Status::Unavailable("the agent does not list the slice's GPU " + slice.value("gpu", ""));
}

// The PATCH body: only what the user named changes.
Result<json> ResizeBody(const SliceOptions& options, const net::Endpoint& agent, const json& slice) {
  json body = json::object();
  if (!options.memory.empty()) {
    Result<uint64_t> memory = ResizeMemory(agent, slice, options.memory);
    if (!memory.ok()) return memory.status();
    body["memory"] = *memory;
  }
  if (!options.compute.empty()) {
    Result<uint32_t> share = ParseComputeShare(options.compute);
    if (!share.ok()) return share.status();
    body["compute"] = *share;
  }
  if (!options.compute_mode.empty()) body["compute_mode"] = options.compute_mode;
  if (!options.tier.empty()) body["tier"] = options.tier;
  if (body.empty()) return Status::InvalidArgument("name what to change: --memory, --compute, --compute-mode or --tier");
  return body;
}

std::string Summary(const json& slice) {
  return slice.value("id", "") + " on " + slice.value("gpu", "") + ": " +
         FormatByteSize(slice.value("memory_bytes", uint64_t{0})) + ", " + std::to_string(slice.value("compute", 0)) +
         " % compute (" + slice.value("compute_mode", "") + "), " + slice.value("tier", "");
}

}  // namespace

CLI::App* AddSliceListFlags(CLI::App& slice, SliceOptions* options) {
  CLI::App* list = slice.add_subcommand("list", "List the agent's slices with what each uses now");
  AddAgentFlag(list, options);
  list->add_flag("--json", options->json, "The agent's JSON (GET /v1/slices?usage=1)");
  return list;
}

CLI::App* AddSliceShowFlags(CLI::App& slice, SliceOptions* options) {
  CLI::App* show = slice.add_subcommand("show", "Show one slice: limits, owner, directory, its workloads' environment");
  show->add_option("id", options->ids, "The slice's id, e.g. s3")->required()->expected(1);
  AddAgentFlag(show, options);
  show->add_flag("--json", options->json, "The agent's JSON (GET /v1/slices/ID)");
  return show;
}

CLI::App* AddSliceResizeFlags(CLI::App& slice, SliceOptions* options) {
  CLI::App* resize = slice.add_subcommand("resize", "Change a slice's limits while its workloads run");
  resize->add_option("id", options->ids, "The slice's id, e.g. s3")->required()->expected(1);
  resize->add_option("--memory", options->memory, "New memory cap: 4G, 4GiB, 512MiB, or 40% of its GPU");
  resize->add_option("--compute", options->compute, "New compute share, 1-100");
  resize->add_option("--compute-mode", options->compute_mode, "One of: cap, share")
      ->transform(CLI::IsMember(kComputeModes, CLI::ignore_case));
  resize->add_option("--tier", options->tier, "One of: latency, standard, batch")
      ->transform(CLI::IsMember(kTiers, CLI::ignore_case));
  AddAgentFlag(resize, options);
  resize->footer("Example: fgpu slice resize s3 --memory 8GiB --compute 40");
  return resize;
}

CLI::App* AddSliceDeleteFlags(CLI::App& slice, SliceOptions* options) {
  CLI::App* del = slice.add_subcommand("delete", "Delete slices (their workloads lose the GPU)");
  del->add_option("id", options->ids, "The slices' ids, e.g. s3 s4")->required();
  AddAgentFlag(del, options);
  return del;
}

int RunSliceList(const SliceOptions& options) {
  Result<net::Endpoint> agent = Agent("list", options);
  if (!agent.ok()) return ExitCodeOf(agent.status());
  const Answer answer = Call("list", *agent, "GET", "/v1/slices?usage=1", "", 200);
  if (answer.exit_code != kExitOk) return answer.exit_code;
  std::cout << (options.json ? answer.body.dump(2) + "\n" : RenderSliceTable(answer.body));
  return kExitOk;
}

int RunSliceShow(const SliceOptions& options) {
  Result<net::Endpoint> agent = Agent("show", options);
  if (!agent.ok()) return ExitCodeOf(agent.status());
  const Answer answer = Call("show", *agent, "GET", "/v1/slices/" + options.ids.front(), "", 200);
  if (answer.exit_code != kExitOk) return answer.exit_code;
  std::cout << (options.json ? answer.body.dump(2) + "\n" : RenderSliceDetails(answer.body));
  return kExitOk;
}

int RunSliceResize(const SliceOptions& options) {
  Result<net::Endpoint> agent = Agent("resize", options);
  if (!agent.ok()) return ExitCodeOf(agent.status());
  const std::string path = "/v1/slices/" + options.ids.front();
  const Answer current = Call("resize", *agent, "GET", path, "", 200);
  if (current.exit_code != kExitOk) return current.exit_code;
  Result<json> body = ResizeBody(options, *agent, current.body);
  if (!body.ok()) {
    std::cerr << "fgpu slice resize: " << body.status().message() << "\n";
    return ExitCodeOf(body.status());
  }
  const Answer resized = Call("resize", *agent, "PATCH", path, body->dump(), 200);
  if (resized.exit_code != kExitOk) return resized.exit_code;
  std::cout << "resized " << Summary(resized.body) << "\n";
  return kExitOk;
}

int RunSliceDelete(const SliceOptions& options) {
  Result<net::Endpoint> agent = Agent("delete", options);
  if (!agent.ok()) return ExitCodeOf(agent.status());
  int worst = kExitOk;
  for (const std::string& id : options.ids) {
    const Answer answer = Call("delete", *agent, "DELETE", "/v1/slices/" + id, "", 204);
    if (answer.exit_code == kExitOk) std::cout << "deleted " << id << "\n";
    worst = std::max(worst, answer.exit_code);
  }
  return worst;
}

}  // namespace fgpu::cli
