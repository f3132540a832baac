#include "net/http_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>

#include "net/socket_io.h"

namespace fgpu::net {
namespace {

constexpr std::size_t kMaxHead = 16 * 1024;
constexpr std::size_t kMaxBody = 64u << 20;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// connect() bounded by `deadline_ms`. A blocking connect to a listener that does not accept (a
// stopped agent whose backlog is full) would wait forever on a Unix socket and for minutes on
// TCP; callers such as the Slurm plugin in slurmstepd must never hang on the agent.
Status ConnectBy(int fd, const sockaddr* address, socklen_t length, int64_t deadline_ms) {
  for (;;) {
    if (connect(fd, address, length) == 0) return Status::Ok();
    if (errno == EINTR) continue;
    if (errno == EAGAIN) {  // a Unix socket's backlog is full: the listener may yet accept
      if (NowMs() >= deadline_ms) return Status::Unavailable("timed out (the listener accepts no connection)");
      usleep(5000);
      continue;
    }
    if (errno != EINPROGRESS) return Status::Unavailable(std::strerror(errno));
    pollfd entry{fd, POLLOUT, 0};
    const int64_t left = deadline_ms - NowMs();
    if (left <= 0 || poll(&entry, 1, static_cast<int>(left)) <= 0) return Status::Unavailable("timed out");
    int error = 0;
    socklen_t size = sizeof(error);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0) error = errno;
    return error == 0 ? Status::Ok() : Status::Unavailable(std::strerror(error));
  }
}

Result<int> Connect(const Endpoint& endpoint, int64_t deadline_ms) {
  sockaddr_storage storage{};
  socklen_t length = 0;
  if (endpoint.unix_socket) {
    auto* address = reinterpret_cast<sockaddr_un*>(&storage);
    address->sun_family = AF_UNIX;
    if (endpoint.path.empty() || endpoint.path.size() >= sizeof(address->sun_path)) {
      return Status::InvalidArgument("socket path too long or empty: " + endpoint.path);
    }
    std::memcpy(address->sun_path, endpoint.path.c_str(), endpoint.path.size() + 1);
    length = sizeof(sockaddr_un);
  } else {
    auto* address = reinterpret_cast<sockaddr_in*>(&storage);
    address->sin_family = AF_INET;
    address->sin_port = htons(static_cast<uint16_t>(endpoint.port));
    if (inet_pton(AF_INET, endpoint.host.c_str(), &address->sin_addr) != 1) {
      return Status::InvalidArgument("not an IPv4 address: " + endpoint.host);
    }
    length = sizeof(sockaddr_in);
  }
  const std::string where = endpoint.unix_socket ? endpoint.path : ToString(endpoint);
  // Non-blocking for good: the reads and writes below wait with poll() and their own deadline.
  const int fd = socket(storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Status::Unavailable("cannot connect to " + where + ": " + std::strerror(errno));
  if (Status connected = ConnectBy(fd, reinterpret_cast<sockaddr*>(&storage), length, deadline_ms); !connected.ok()) {
    close(fd);
    return Status::Unavailable("cannot connect to " + where + ": " + connected.message());
  }
  return fd;
}

Result<HttpResponse> ParseResponse(const std::string& raw) {
  const std::size_t head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos) return Status::InvalidArgument("truncated response");
  const std::string_view head(raw.data(), head_end);
  HttpResponse response;
  if (head.substr(0, 9) != "HTTP/1.1 " && head.substr(0, 9) != "HTTP/1.0 ") {
    return Status::InvalidArgument("not an HTTP response");
  }
  const auto [end, error] = std::from_chars(head.data() + 9, head.data() + std::min<std::size_t>(12, head.size()),
                                            response.status);
  if (error != std::errc() || end != head.data() + 12) return Status::InvalidArgument("malformed status line");
  response.content_type.clear();
  std::size_t line = head.find("\r\n");
  while (line != std::string_view::npos) {
    const std::size_t next = head.find("\r\n", line + 2);
    const std::string_view text = head.substr(line + 2, next == std::string_view::npos ? next : next - line - 2);
    const std::size_t colon = text.find(':');
    if (colon != std::string_view::npos) {
      std::string name(text.substr(0, colon));
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      std::string_view value = text.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      if (name == "content-type") response.content_type = std::string(value);
      response.headers[name] = std::string(value);
    }
    line = next;
  }
  response.body = raw.substr(head_end + 4);
  const auto length = response.headers.find("content-length");
  if (length != response.headers.end() && length->second != std::to_string(response.body.size())) {
    return Status::InvalidArgument("response body shorter than its Content-Length");
  }
  return response;
}

}  // namespace

Result<Endpoint> ParseEndpoint(const std::string& text, bool any_port) {
  Endpoint endpoint;
  if (text.rfind("unix:", 0) == 0 || (!text.empty() && (text[0] == '/' || text[0] == '.'))) {
    endpoint.unix_socket = true;
    endpoint.path = text.rfind("unix:", 0) == 0 ? text.substr(5) : text;
    if (endpoint.path.empty()) return Status::InvalidArgument("empty socket path in '" + text + "'");
    return endpoint;
  }
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::InvalidArgument("expected HOST:PORT or a socket path, got '" + text + "'");
  }
  endpoint.host = text.substr(0, colon);
  const std::string port = text.substr(colon + 1);
  const auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), endpoint.port);
  if (error != std::errc() || end != port.data() + port.size() || endpoint.port < (any_port ? 0 : 1) ||
      endpoint.port > 65535) {
    return Status::InvalidArgument("bad port in '" + text + "'");
  }
  return endpoint;
}

std::string ToString(const Endpoint& endpoint) {
  return endpoint.unix_socket ? "unix:" + endpoint.path : endpoint.host + ":" + std::to_string(endpoint.port);
}

Result<HttpResponse> HttpCall(const Endpoint& endpoint, const std::string& method, const std::string& target,
                              const std::string& body, int timeout_ms) {
  const int64_t deadline = NowMs() + timeout_ms;
  Result<int> connected = Connect(endpoint, deadline);
  if (!connected.ok()) return connected.status();
  const Fd fd(*connected);
  std::string request = method + " " + target + " HTTP/1.1\r\nHost: fgpu-agent\r\nConnection: close\r\n";
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
    request += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  request += "\r\n" + body;
  if (!WriteAll(fd.get(), request, deadline)) return Status::Unavailable("cannot send the request to " + ToString(endpoint));
  std::string raw;
  char buffer[8192];
  for (;;) {
    const long got = ReadSome(fd.get(), buffer, sizeof(buffer), deadline);
    if (got == 0) break;
    if (got == -2) return Status::Unavailable("no response from " + ToString(endpoint) + " in time");
    if (got < 0) return Status::Unavailable("connection to " + ToString(endpoint) + " failed");
    raw.append(buffer, static_cast<std::size_t>(got));
    if (raw.size() > kMaxHead + kMaxBody) return Status::InvalidArgument("response too large");
  }
  return ParseResponse(raw);
}

}  // namespace fgpu::net
