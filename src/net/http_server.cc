#include "net/http_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <exception>

#include "net/http_parser.h"
#include "net/socket_io.h"

namespace fgpu::net {
namespace {

std::string ErrorBody(const std::string& message) {
  std::string escaped;
  for (char c : message) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += (static_cast<unsigned char>(c) < 0x20) ? ' ' : c;
  }
  return "{\"error\":\"" + escaped + "\"}";
}

HttpResponse ErrorResponse(int status, const std::string& message) {
  HttpResponse response;
  response.status = status;
  response.body = ErrorBody(message);
  return response;
}

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

bool FillUnixAddress(const std::string& path, sockaddr_un* address) {
  if (path.empty() || path.size() >= sizeof(address->sun_path)) return false;
  std::memset(address, 0, sizeof(*address));
  address->sun_family = AF_UNIX;
  std::memcpy(address->sun_path, path.c_str(), path.size() + 1);
  return true;
}

// Whether a server accepts on the Unix socket at `path`.
bool SomeoneListens(const sockaddr_un& address) {
  const int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (probe < 0) return false;
  const bool live = connect(probe, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  close(probe);
  return live;
}

Peer UnixPeer(int fd, const std::string& path) {
  Peer peer;
  peer.unix_socket = true;
  peer.address = path;
  ucred credentials{};
  socklen_t size = sizeof(credentials);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) == 0) {
    peer.pid = credentials.pid;
    peer.uid = credentials.uid;
    peer.gid = credentials.gid;
  }
  return peer;
}

Peer TcpPeer(const sockaddr_storage& address) {
  Peer peer;
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (address.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    inet_ntop(AF_INET, &v4->sin_addr, host, sizeof(host));
    port = ntohs(v4->sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof(host));
    port = ntohs(v6->sin6_port);
  }
  peer.address = std::string(host) + ":" + std::to_string(port);
  return peer;
}

}  // namespace

HttpServer::HttpServer(Handler handler, Options options) : handler_(std::move(handler)), options_(options) {}

HttpServer::~HttpServer() { Stop(); }

Result<int> HttpServer::ListenTcp(const std::string& host, int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (port < 0 || port > 65535 || inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1) {
    return Status::InvalidArgument("not an IPv4 address and port: " + host + ":" + std::to_string(port));
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Unavailable(Errno("socket"));
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 || listen(fd, 512) != 0) {
    const Status error = Status::Unavailable(Errno("cannot listen on " + host + ":" + std::to_string(port)));
    close(fd);
    return error;
  }
  socklen_t size = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
  listeners_.push_back({fd, false, ""});
  return static_cast<int>(ntohs(address.sin_port));
}

Status HttpServer::ListenUnix(const std::string& path, mode_t mode) {
  sockaddr_un address{};
  if (!FillUnixAddress(path, &address)) return Status::InvalidArgument("socket path too long or empty: " + path);
  struct stat info {};
  if (lstat(path.c_str(), &info) == 0) {
    if (!S_ISSOCK(info.st_mode)) return Status::InvalidArgument(path + " exists and is not a socket");
    if (SomeoneListens(address)) return Status::Unavailable("another server is listening on " + path);
    unlink(path.c_str());
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Unavailable(Errno("socket"));
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 || chmod(path.c_str(), mode) != 0 ||
      listen(fd, 512) != 0) {
    const Status error = Status::Unavailable(Errno("cannot listen on " + path));
    close(fd);
    return error;
  }
  listeners_.push_back({fd, true, path});
  return Status::Ok();
}

Status HttpServer::Start() {
  if (listeners_.empty()) return Status::InvalidArgument("nothing to listen on");
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) return Status::Unavailable(Errno("eventfd"));
  started_ = true;
  for (std::size_t i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  acceptor_ = std::thread([this] { AcceptLoop(); });
  return Status::Ok();
}

void HttpServer::Stop() {
  if (stopping_.exchange(true)) return;
  if (started_) {
    const uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof(one));
    acceptor_.join();
    ready_.notify_all();
    for (std::thread& worker : workers_) worker.join();
    close(wake_fd_);
  }
  for (const Listener& listener : listeners_) {
    close(listener.fd);
    if (listener.unix_socket) unlink(listener.path.c_str());
  }
  for (const Connection& connection : queue_) close(connection.fd);
  queue_.clear();
}

void HttpServer::AcceptLoop() {
  std::vector<pollfd> polled;
  for (const Listener& listener : listeners_) polled.push_back({listener.fd, POLLIN, 0});
  polled.push_back({wake_fd_, POLLIN, 0});
  while (!stopping_.load()) {
    if (poll(polled.data(), polled.size(), -1) < 0) continue;  // EINTR
    for (std::size_t i = 0; i < listeners_.size(); ++i) {
      if ((polled[i].revents & POLLIN) == 0) continue;
      sockaddr_storage address{};
      socklen_t size = sizeof(address);
      const int fd = accept4(listeners_[i].fd, reinterpret_cast<sockaddr*>(&address), &size, SOCK_CLOEXEC);
      if (fd < 0) continue;  // the client gave up, or fds ran out: the next poll retries
      Enqueue({fd, listeners_[i].unix_socket ? UnixPeer(fd, listeners_[i].path) : TcpPeer(address)});
    }
  }
}

void HttpServer::Enqueue(Connection connection) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (queue_.size() < options_.max_queued) {
      queue_.push_back(std::move(connection));
      ready_.notify_one();
      return;
    }
  }
  HttpResponse busy = ErrorResponse(503, "the server is busy; retry");
  busy.headers["Retry-After"] = "1";
  WriteAll(connection.fd, Serialize(busy), NowMs() + 100);
  close(connection.fd);
}

void HttpServer::WorkerLoop() {
  for (;;) {
    Connection connection;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return stopping_.load() || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      connection = std::move(queue_.front());
      queue_.pop_front();
    }
    Serve(connection);
    close(connection.fd);
  }
}

void HttpServer::Serve(const Connection& connection) {
  const int64_t deadline = NowMs() + options_.read_timeout_ms;
  HttpParser parser(options_.max_body);
  char buffer[8192];
  while (parser.state() == HttpParser::State::kNeedMore) {
    const long got = ReadSome(connection.fd, buffer, sizeof(buffer), deadline);
    if (got == -2) {
      WriteAll(connection.fd, Serialize(ErrorResponse(408, "request not received in time")), NowMs() + 1000);
      return;
    }
    if (got <= 0) return;  // the client went away
    parser.Feed(std::string_view(buffer, static_cast<std::size_t>(got)));
  }
  HttpResponse response;
  if (parser.state() == HttpParser::State::kError) {
    response = ErrorResponse(parser.error_status(), parser.error_message());
  } else {
    parser.request().peer = connection.peer;
    try {
      response = handler_(parser.request());
    } catch (const std::exception& error) {
      response = ErrorResponse(500, std::string("internal error: ") + error.what());
    } catch (...) {
      response = ErrorResponse(500, "internal error");
    }
  }
  WriteAll(connection.fd, Serialize(response), NowMs() + options_.read_timeout_ms);
}

}  // namespace fgpu::net
