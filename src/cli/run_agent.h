// `fgpu run` through the node agent (docs/agent.md): the slice is placed by the agent on this
// machine's GPUs, queued with --wait when there is no room, released when the program exits
// (and by the agent if fgpu run itself dies).
#pragma once

#include <optional>
#include <string>

#include "cli/commands.h"
#include "core/status.h"
#include "net/http_client.h"

namespace fgpu::cli {

inline constexpr const char* kDefaultAgentSocket = "/var/lib/fgpu/agent.sock";

// The agent to use: `flag`, else $FGPU_AGENT, else the default socket when it exists; none
// (std::nullopt) means standalone. A named agent that does not answer is an error.
Result<std::optional<net::Endpoint>> FindAgent(const std::string& flag);

int RunThroughAgent(const RunOptions& options, const net::Endpoint& agent);

}  // namespace fgpu::cli
