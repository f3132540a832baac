// `fgpu run` through the node agent (docs/agent.md): the slice is placed by the agent on this
// machine's GPUs, queued with --wait when there is no room, released when the program exits
// (and by the agent if fgpu run itself dies).
#pragma once

#include <nlohmann/json.hpp>
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

// FindAgent for commands that need one: Unavailable, with a hint, when none is running.
Result<net::Endpoint> RunningAgent(const std::string& flag);

// One call to the agent and its JSON answer ({} for an empty body); `status` gets the HTTP status.
Result<nlohmann::json> CallAgent(const net::Endpoint& agent, const std::string& method, const std::string& path,
                                 const std::string& body, int* status, int timeout_ms = 10000);
// A GET that must answer 200 with JSON; Unavailable otherwise.
Result<nlohmann::json> GetFromAgent(const net::Endpoint& agent, const std::string& path, int timeout_ms = 10000);

int RunThroughAgent(const RunOptions& options, const net::Endpoint& agent);

}  // namespace fgpu::cli
