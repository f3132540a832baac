// The plugin's arguments from plugstack.conf:
//
//   required /usr/lib/fgpu/fgpu_spank.so agent=/var/lib/fgpu/agent.sock timeout_ms=3000
//
// `agent=PATH` is the node agent's Unix socket; "%n" in it becomes the Slurm node name, so
// several slurmd on one host (multiple-slurmd) each reach their own agent, and "%%" a '%'.
// `timeout_ms=N` (100..60000) bounds every call to the agent: slurmstepd must never hang on
// a stopped or dead agent. `shards=refuse|SIZE` says what a step with shards of a GPU
// (--gres=shard:N) that asks no slice gets: refused (the default), or a slice of N × SIZE of
// GPU memory (`shards=10GiB`); never the GPU unenforced. Pure; never throws except std::bad_alloc.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "slurm/slice_options.h"

namespace fgpu::slurm {

inline constexpr const char* kDefaultAgentSocket = "/var/lib/fgpu/agent.sock";
inline constexpr int kDefaultTimeoutMs = 3000;

struct PluginConfig {
  std::string agent_pattern = kDefaultAgentSocket;  // may hold %n
  int timeout_ms = kDefaultTimeoutMs;
  uint64_t memory_per_shard = 0;  // 0: a step with shards and no --gpu-memory is refused
};

// What a step with `shards` shards of a GPU and no fgpu option of its own gets: the options of its
// default slice, or InvalidArgument with the refusal the user reads.
Result<SliceOptions> ShardDefault(const PluginConfig& config, uint64_t shards);

// InvalidArgument naming the argument for an unknown key, an empty or malformed value, or a
// '%' sequence other than %n and %%.
Result<PluginConfig> ParsePluginArgs(const std::vector<std::string>& args);

// The socket of this node's agent: the pattern with %n expanded (InvalidArgument when it
// holds %n and `node_name` is empty).
Result<std::string> AgentSocket(const PluginConfig& config, const std::string& node_name);

// "%n" → node_name, "%%" → "%"; any other '%' sequence is InvalidArgument.
Result<std::string> ExpandNodeName(const std::string& pattern, const std::string& node_name);

}  // namespace fgpu::slurm
