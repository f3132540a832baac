// `fgpu run` through the node agent (docs/agent.md): the slice is placed by the agent on this
// machine's GPUs, queued with --wait when there is no room, released when the program exits
// (and by the agent if fgpu run itself dies).
#pragma once

#include <optional>
#include <string>

#include "api/agent_client.h"
#include "cli/commands.h"
#include "core/status.h"
#include "net/http_client.h"

namespace fgpu::cli {

inline constexpr const char* kDefaultAgentSocket = "/var/lib/fgpu/agent.sock";
// --agent's help for the commands that only read (or, with the socket, manage) slices.
inline constexpr const char* kAgentFlagHelp =
    "The agent: its Unix socket, 127.0.0.1:PORT or localhost:PORT (default $FGPU_AGENT, else /var/lib/fgpu/agent.sock)";

// Where the agent listens, as a user writes it: a socket path (`/var/lib/fgpu/agent.sock`,
// `unix:PATH`, or a bare file name), `127.0.0.1:PORT`, or `localhost:PORT` (the agent serves
// IPv4 loopback). InvalidArgument, naming the forms, otherwise.
Result<net::Endpoint> ParseAgentEndpoint(const std::string& text, bool any_port = false);

// The agent to use: `flag`, else $FGPU_AGENT, else the default socket when it exists; none
// (std::nullopt) means standalone. A named agent that does not answer is Unavailable; a
// malformed one InvalidArgument, and so is one not on a Unix socket when `unix_socket_only`
// (fgpu run: RequireUnixSocket), whether or not an agent answers there.
Result<std::optional<net::Endpoint>> FindAgent(const std::string& flag, bool unix_socket_only = false);

// FindAgent for commands that need one: Unavailable, with a hint, when none is running.
Result<net::Endpoint> RunningAgent(const std::string& flag);

// How long one call to the agent may take.
inline constexpr int kAgentCallTimeoutMs = 10000;

// The agent's typed client (api/agent_client.h) for the commands that only read it (fgpu status,
// top, report, and the GPUs a relative resize is measured on): any answer but 200 is Unavailable,
// "the agent answered 403 to /v1/gpus", as those commands have always said.
api::AgentClient ReadingClient(const net::Endpoint& agent, int timeout_ms = kAgentCallTimeoutMs);

// `fgpu run` needs the Unix socket: only there may it join the slice, queue with --wait and have
// the slice released when the program ends. InvalidArgument naming the socket otherwise.
Status RequireUnixSocket(const net::Endpoint& agent);

int RunThroughAgent(const RunOptions& options, const net::Endpoint& agent);

}  // namespace fgpu::cli
