#include "slurm/plugin_config.h"

#include <charconv>

#include "core/units.h"

namespace fgpu::slurm {
namespace {

Result<int> ParseTimeout(const std::string& value) {
  int timeout_ms = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), timeout_ms);
  if (value.empty() || error != std::errc() || end != value.data() + value.size() || timeout_ms < 100 ||
      timeout_ms > 60000) {
    return Status::InvalidArgument("timeout_ms='" + value + "': expected milliseconds from 100 to 60000");
  }
  return timeout_ms;
}

}  // namespace

Result<std::string> ExpandNodeName(const std::string& pattern, const std::string& node_name) {
  std::string expanded;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') {
      expanded += pattern[i];
      continue;
    }
    const char next = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
    if (next == '%') {
      expanded += '%';
    } else if (next == 'n') {
      if (node_name.empty()) return Status::InvalidArgument("'" + pattern + "' uses %n but the node name is unknown");
      expanded += node_name;
    } else {
      return Status::InvalidArgument("'" + pattern + "': only %n (the node name) and %% may follow '%'");
    }
    ++i;
  }
  return expanded;
}

Result<PluginConfig> ParsePluginArgs(const std::vector<std::string>& args) {
  PluginConfig config;
  for (const std::string& arg : args) {
    const std::size_t equals = arg.find('=');
    const std::string key = arg.substr(0, equals);
    const std::string value = equals == std::string::npos ? std::string() : arg.substr(equals + 1);
    if (key == "agent") {
      if (value.empty() || value[0] != '/') {
        return Status::InvalidArgument("agent='" + value + "': expected the absolute path of the agent's Unix socket");
      }
      if (Result<std::string> checked = ExpandNodeName(value, "node"); !checked.ok()) {
        return Status::InvalidArgument("agent=" + checked.status().message());
      }
      config.agent_pattern = value;
    } else if (key == "shards") {
      if (value == "refuse") {
        config.memory_per_shard = 0;
      } else if (Result<uint64_t> bytes = ParseByteSize(value); bytes.ok() && *bytes > 0) {
        config.memory_per_shard = *bytes;
      } else {
        return Status::InvalidArgument("shards='" + value + "': expected refuse or a size per shard such as 10GiB");
      }
    } else if (key == "timeout_ms") {
      Result<int> timeout_ms = ParseTimeout(value);
      if (!timeout_ms.ok()) return timeout_ms.status();
      config.timeout_ms = *timeout_ms;
    } else {
      return Status::InvalidArgument("unknown argument '" + arg + "' (expected agent=PATH, timeout_ms=N or shards=refuse|SIZE)");
    }
  }
  return config;
}

Result<SliceOptions> ShardDefault(const PluginConfig& config, uint64_t shards) {
  if (config.memory_per_shard == 0) {
    return Status::InvalidArgument("it has " + std::to_string(shards) +
                                   " shard(s) of a GPU but asks no slice, and shards would share the GPU unenforced: "
                                   "add --gpu-memory=SIZE (this node's fgpu plugin has shards=refuse)");
  }
  SliceOptions options;
  options.memory_bytes = config.memory_per_shard * shards;
  return options;
}

Result<std::string> AgentSocket(const PluginConfig& config, const std::string& node_name) {
  return ExpandNodeName(config.agent_pattern, node_name);
}

}  // namespace fgpu::slurm
