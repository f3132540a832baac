// HTTP/1.1 messages as the agent's API sees them: one request, one response, then the
// connection closes (docs/agent.md "API"). Header names are kept lower-case.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>

namespace fgpu::net {

// Who is on the other end. Over a Unix socket the kernel vouches for pid/uid/gid
// (SO_PEERCRED); over TCP only the address is known.
struct Peer {
  bool unix_socket = false;
  pid_t pid = -1;
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
  std::string address;  // "127.0.0.1:51234" or the socket path
};

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // percent-decoding is the handler's business; no query string
  std::string query;   // after '?', raw
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  Peer peer;

  // The value of `name` (lower-case) or "" when absent.
  std::string Header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::map<std::string, std::string> headers;  // extra headers, e.g. "Retry-After"
};

// "OK", "Not Found", ... for the codes the agent uses; "Unknown" otherwise.
const char* ReasonPhrase(int status);

// The wire form of `response` (status line, headers with Content-Length and
// Connection: close, body).
std::string Serialize(const HttpResponse& response);

}  // namespace fgpu::net
