// fgpu slice list|show|resize|delete: the agent's slice API (docs/agent.md) from the command
// line, so nobody needs curl. Over the Unix socket the agent knows who asks (owners manage
// their slices, root all); over TCP it is read-only unless the client holds the admin token.
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <vector>

#include "api/agent_client.h"
#include "api/codec.h"
#include "cli/agent_status.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/run_agent.h"
#include "cli/run_plan.h"
#include "core/units.h"

namespace fgpu::cli {
namespace {

// A failed call: the agent's reason (or why it could not be asked) on stderr, and the exit
// status: a malformed request or an unknown slice is the user's mistake (2); refusals for room
// or permission, and an agent that does not answer, are run-time (1).
int Fail(const char* what, const Status& status) {
  std::cerr << "fgpu slice " << what << ": " << status.message() << "\n";
  return ExitCodeOf(status);
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
Result<uint64_t> ResizeMemory(const net::Endpoint& agent, const api::Slice& slice, const std::string& text) {
  if (text.back() != '%') return ParseMemoryLimit(text, UINT64_MAX);
  Result<std::vector<api::Gpu>> gpus = ReadingClient(agent).ListGpus();
  if (!gpus.ok()) return gpus.status();
  for (const api::Gpu& gpu : *gpus) {
    if (gpu.uuid == slice.gpu) return ParseMemoryLimit(text, gpu.memory_total);
  }
  return Status::Unavailable("the agent does not list the slice's GPU " + slice.gpu);
}

// The PATCH: only what the user named changes.
Result<api::SliceResize> Resize(const SliceOptions& options, const net::Endpoint& agent, const api::Slice& slice) {
  api::SliceResize resize;
  if (!options.memory.empty()) {
    Result<uint64_t> memory = ResizeMemory(agent, slice, options.memory);
    if (!memory.ok()) return memory.status();
    resize.memory_bytes = *memory;
  }
  if (!options.compute.empty()) {
    Result<uint32_t> share = ParseComputeShare(options.compute);
    if (!share.ok()) return share.status();
    resize.compute = *share;
  }
  if (!options.compute_mode.empty()) resize.compute_mode = options.compute_mode;
  if (!options.tier.empty()) resize.tier = options.tier;
  if (resize == api::SliceResize{}) {
    return Status::InvalidArgument("name what to change: --memory, --compute, --compute-mode or --tier");
  }
  return resize;
}

std::string Summary(const api::Slice& slice) {
  return slice.id + " on " + slice.gpu + ": " + FormatByteSize(slice.memory_bytes) + ", " +
         std::to_string(slice.compute) + " % compute (" + slice.compute_mode + "), " + slice.tier;
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
  Result<std::vector<api::Slice>> slices =
      api::AgentClient(*agent, kAgentCallTimeoutMs).ListSlices({.usage = true, .idempotency_key = ""});
  if (!slices.ok()) return Fail("list", slices.status());
  std::cout << (options.json ? api::ToJson(*slices).dump(2) + "\n" : RenderSliceTable(*slices));
  return kExitOk;
}

int RunSliceShow(const SliceOptions& options) {
  Result<net::Endpoint> agent = Agent("show", options);
  if (!agent.ok()) return ExitCodeOf(agent.status());
  Result<api::Slice> slice = api::AgentClient(*agent, kAgentCallTimeoutMs).GetSlice(options.ids.front());
  if (!slice.ok()) return Fail("show", slice.status());
  std::cout << (options.json ? api::ToJson(*slice).dump(2) + "\n" : RenderSliceDetails(*slice));
  return kExitOk;
}

int RunSliceResize(const SliceOptions& options) {
  Result<net::Endpoint> agent = Agent("resize", options);
  if (!agent.ok()) return ExitCodeOf(agent.status());
  const api::AgentClient client(*agent, kAgentCallTimeoutMs);
  const std::string& id = options.ids.front();
  Result<api::Slice> current = client.GetSlice(id);
  if (!current.ok()) return Fail("resize", current.status());
  Result<api::SliceResize> resize = Resize(options, *agent, *current);
  if (!resize.ok()) return Fail("resize", resize.status());
  Result<api::Slice> resized = client.ResizeSlice(id, *resize);
  if (!resized.ok()) return Fail("resize", resized.status());
  std::cout << "resized " << Summary(*resized) << "\n";
  return kExitOk;
}

int RunSliceDelete(const SliceOptions& options) {
  Result<net::Endpoint> agent = Agent("delete", options);
  if (!agent.ok()) return ExitCodeOf(agent.status());
  const api::AgentClient client(*agent, kAgentCallTimeoutMs);
  int worst = kExitOk;
  for (const std::string& id : options.ids) {
    if (Status deleted = client.DeleteSlice(id); !deleted.ok()) {
      worst = std::max(worst, Fail("delete", deleted));
    } else {
      std::cout << "deleted " << id << "\n";
    }
  }
  return worst;
}

}  // namespace fgpu::cli
