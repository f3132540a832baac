// HttpCall: one request to an HTTP/1.1 server (the agent) over a Unix socket or TCP, and its
// response. Bounded: a response head over 16 KiB or a body over 64 MiB is an error.
#pragma once

#include <string>

#include "core/status.h"
#include "net/http_message.h"

namespace fgpu::net {

// Where a server listens: "unix:/run/fgpu/agent.sock", "/run/fgpu/agent.sock" (a path) or
// "127.0.0.1:7070".
struct Endpoint {
  bool unix_socket = false;
  std::string path;
  std::string host;
  int port = 0;
};

// `any_port`: port 0 (a server asking for any free port) is allowed.
Result<Endpoint> ParseEndpoint(const std::string& text, bool any_port = false);
std::string ToString(const Endpoint& endpoint);

// Unavailable when nothing listens (the caller may fall back), InvalidArgument for a
// malformed response, Unavailable on timeout. `timeout_ms` bounds the whole call, the connect
// included (a listener that accepts nothing — a stopped server with a full backlog — cannot
// hold the caller).
Result<HttpResponse> HttpCall(const Endpoint& endpoint, const std::string& method, const std::string& target,
                              const std::string& body, int timeout_ms);

}  // namespace fgpu::net
