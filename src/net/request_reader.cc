#include "net/request_reader.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "net/http_parser.h"
#include "net/socket_io.h"

namespace fgpu::net {
namespace {

// Accepts per listener per wake-up, so a connect flood on one listener still lets the loop
// read the connections it has (and the other listener) between batches.
constexpr int kAcceptBatch = 64;
// After accept() fails for lack of descriptors, the listener stays readable: stop polling it
// this long instead of spinning on it.
constexpr int kAcceptPauseMs = 100;
// One read per ready connection per wake-up: a client streaming its body cannot starve others.
constexpr std::size_t kReadChunk = 16 * 1024;

std::string ErrorBody(const std::string& message) {
  std::string escaped;
  for (char c : message) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += (static_cast<unsigned char>(c) < 0x20) ? ' ' : c;
  }
  return "{\"error\":\"" + escaped + "\"}";
}

HttpResponse Busy(const std::string& message) {
  HttpResponse busy = ErrorResponse(503, message);
  busy.headers.insert_or_assign("Retry-After", std::string("1"));
  return busy;
}

// A fresh connection's send buffer is empty and these answers are a few hundred bytes: one
// non-blocking send either takes all of it or the client is gone.
void SendOnce(int fd, const HttpResponse& response) {
  const std::string bytes = Serialize(response);
  (void)!send(fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

std::string Host(const sockaddr_storage& address) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (address.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&address)->sin_addr, host, sizeof(host));
  } else if (address.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&address)->sin6_addr, host, sizeof(host));
  }
  return host;
}

int Port(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
  if (address.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
  return 0;
}

}  // namespace

HttpResponse ErrorResponse(int status, const std::string& message) {
  HttpResponse response;
  response.status = status;
  response.body = ErrorBody(message);
  return response;
}

struct RequestReader::Connection {
  Connection(int descriptor, std::size_t max_body) : fd(descriptor), parser(max_body) {}

  int fd;
  Peer peer;
  std::string key;
  bool privileged = false;
  HttpParser parser;
  int64_t head_deadline = 0;
  int64_t read_deadline = 0;
  int64_t deadline = 0;     // the entry in deadlines_
  bool lingering = false;   // answered; dropping what the client still sends
  std::size_t dropped = 0;  // bytes dropped while lingering
};

RequestReader::RequestReader(std::vector<Listener> listeners, Settings settings, ConnectionLimits* limits,
                             ServerCounters* counters, RequestSink* sink)
    : listeners_(std::move(listeners)),
      settings_(settings),
      limits_(limits),
      counters_(counters),
      sink_(sink) {}

RequestReader::~RequestReader() {
  while (!connections_.empty()) Close(connections_.begin()->first);
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

Status RequestReader::Open() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return Status::Unavailable(std::string("epoll_create1: ") + std::strerror(errno));
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) return Status::Unavailable(std::string("eventfd: ") + std::strerror(errno));
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.fd = wake_fd_;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake) != 0) {
    return Status::Unavailable(std::string("epoll_ctl: ") + std::strerror(errno));
  }
  for (const Listener& listener : listeners_) {
    // Non-blocking so a batch of accepts ends at EAGAIN instead of blocking the loop.
    fcntl(listener.fd, F_SETFL, fcntl(listener.fd, F_GETFL) | O_NONBLOCK);
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = listener.fd;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listener.fd, &event) != 0) {
      return Status::Unavailable(std::string("epoll_ctl: ") + std::strerror(errno));
    }
  }
  return Status::Ok();
}

void RequestReader::Stop() {
  stop_.store(true, std::memory_order_release);  // pairs with the acquire in Run
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

void RequestReader::Run() {
  epoll_event events[64];
  while (!stop_.load(std::memory_order_acquire)) {
    const int ready = epoll_wait(epoll_fd_, events, 64, WaitMs(NowMs()));
    for (int i = 0; i < ready; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_fd_) continue;  // Stop(): the loop condition sees it
      const auto listener = std::find_if(listeners_.begin(), listeners_.end(),
                                         [fd](const Listener& candidate) { return candidate.fd == fd; });
      if (listener != listeners_.end()) {
        Accept(*listener);
        continue;
      }
      // An fd closed earlier in this batch may already name a newer connection: a spurious
      // read of it finds nothing (EAGAIN) and costs nothing.
      auto connection = connections_.find(fd);
      if (connection != connections_.end()) Read(*connection->second);
    }
    const int64_t now = NowMs();
    if (accept_paused_until_ != 0 && now >= accept_paused_until_) ResumeAccepting();
    Expire(now);
  }
  for (auto& [fd, connection] : connections_) {
    if (!connection->lingering) SendOnce(fd, Busy("the server is stopping"));
  }
  while (!connections_.empty()) Close(connections_.begin()->first);
}

int RequestReader::WaitMs(int64_t now) const {
  int64_t next = deadlines_.empty() ? -1 : deadlines_.begin()->first;
  if (accept_paused_until_ != 0 && (next < 0 || accept_paused_until_ < next)) next = accept_paused_until_;
  if (next < 0) return -1;
  return static_cast<int>(std::clamp<int64_t>(next - now, 0, 60'000));
}

void RequestReader::Accept(const Listener& listener) {
  for (int i = 0; i < kAcceptBatch; ++i) {
    sockaddr_storage address{};
    socklen_t size = sizeof(address);
    const int fd =
        accept4(listener.fd, reinterpret_cast<sockaddr*>(&address), &size, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      Admit(fd, listener, address);
      continue;
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
      ServerCounters::Bump(counters_->accept_failures);
      PauseAccepting(NowMs() + kAcceptPauseMs);
    }
    return;  // EAGAIN: the backlog is empty
  }
}

void RequestReader::Admit(int fd, const Listener& listener, const sockaddr_storage& address) {
  Peer peer;
  std::string key;
  bool privileged = false;
  if (listener.unix_socket) {
    peer.unix_socket = true;
    peer.address = listener.path;
    ucred credentials{};
    socklen_t size = sizeof(credentials);
    const bool known = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) == 0;
    if (known) {
      peer.pid = credentials.pid;
      peer.uid = credentials.uid;
      peer.gid = credentials.gid;
    }
    key = PeerKey(known, peer.uid, "unix");
    privileged = known && peer.uid == 0;
  } else {
    // request.peer stays address-only over TCP: the owner's uid is used for limits, while the API
    // trusts only what SO_PEERCRED vouches for (net/tcp_owner.h).
    peer.address = Host(address) + ":" + std::to_string(Port(address));
    Result<uid_t> owner = Status::NotFound("not looked up");
    if (settings_.tcp_peer_uid) {
      sockaddr_storage local{};
      socklen_t size = sizeof(local);
      if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &size) == 0)
        owner = owners_.Owner(local, address);
      if (!owner.ok()) ServerCounters::Bump(counters_->tcp_owner_unknown);
    }
    key = PeerKey(owner.ok(), owner.ok() ? *owner : 0, Host(address));
    privileged = owner.ok() && *owner == 0;
  }

  switch (limits_->Admit(key, privileged)) {
    case ConnectionLimits::Admission::kAdmitted:
      break;
    case ConnectionLimits::Admission::kPeerFull:
      ServerCounters::Bump(counters_->refused_peer_limit);
      SendOnce(fd, Busy("too many connections from " + key + "; close some and retry"));
      close(fd);
      return;
    case ConnectionLimits::Admission::kServerFull:
      ServerCounters::Bump(counters_->refused_server_full);
      SendOnce(fd, Busy("the server holds its maximum of connections; retry"));
      close(fd);
      return;
  }
  ServerCounters::Bump(counters_->accepted);

  auto connection = std::make_unique<Connection>(fd, settings_.max_body);
  connection->peer = std::move(peer);
  connection->key = std::move(key);
  connection->privileged = privileged;
  const int64_t now = NowMs();
  connection->head_deadline = now + settings_.head_timeout_ms;
  connection->read_deadline = now + settings_.read_timeout_ms;
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.fd = fd;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
    close(fd);
    limits_->Release(connection->key);
    return;
  }
  Connection& added = *connections_.emplace(fd, std::move(connection)).first->second;
  Schedule(added, std::min(added.head_deadline, added.read_deadline));
}

void RequestReader::Read(Connection& connection) {
  char buffer[kReadChunk];
  const ssize_t got = recv(connection.fd, buffer, sizeof(buffer), 0);
  if (got < 0) {
    if (errno != EAGAIN && errno != EINTR) Close(connection.fd);
    return;
  }
  if (connection.lingering) {
    connection.dropped += static_cast<std::size_t>(got);
    if (got == 0 || connection.dropped > kLingerBytes) Close(connection.fd);
    return;
  }
  if (got == 0) {
    ServerCounters::Bump(counters_->abandoned);
    Close(connection.fd);
    return;
  }
  const bool had_head = connection.parser.head_complete();
  switch (connection.parser.Feed(std::string_view(buffer, static_cast<std::size_t>(got)))) {
    case HttpParser::State::kNeedMore:
      if (!had_head && connection.parser.head_complete()) Schedule(connection, connection.read_deadline);
      return;
    case HttpParser::State::kError:
      ServerCounters::Bump(counters_->malformed);
      Answer(connection, ErrorResponse(connection.parser.error_status(), connection.parser.error_message()));
      return;
    case HttpParser::State::kDone:
      HandOver(connection);
      return;
  }
}

void RequestReader::HandOver(Connection& connection) {
  if (!sink_->HasRoom(connection.privileged)) {
    ServerCounters::Bump(counters_->refused_queue_full);
    Answer(connection, Busy("the server is busy; retry"));
    return;
  }
  const int fd = connection.fd;
  ReadyRequest ready;
  ready.fd = fd;
  ready.peer_key = connection.key;
  ready.privileged = connection.privileged;
  ready.request = std::move(connection.parser.request());
  ready.request.peer = connection.peer;
  // Off the loop before a worker can see the fd: the worker closes it, and a new connection
  // may get the same number.
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  deadlines_.erase({connection.deadline, fd});
  connections_.erase(fd);  // `connection` dies here
  sink_->Push(std::move(ready));
}

void RequestReader::Answer(Connection& connection, const HttpResponse& response) {
  SendOnce(connection.fd, response);
  shutdown(connection.fd, SHUT_WR);
  connection.lingering = true;
  Schedule(connection, NowMs() + kLingerMs);
}

void RequestReader::Expire(int64_t now) {
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    Connection& connection = *connections_.at(deadlines_.begin()->second);
    if (connection.lingering) {
      Close(connection.fd);
    } else if (!connection.parser.head_complete() && connection.head_deadline <= connection.read_deadline) {
      ServerCounters::Bump(counters_->head_timeouts);
      Answer(connection, ErrorResponse(408, "request head not received within " +
                                                std::to_string(settings_.head_timeout_ms) + " ms"));
    } else {
      ServerCounters::Bump(counters_->read_timeouts);
      Answer(connection, ErrorResponse(408, "request not received within " +
                                                std::to_string(settings_.read_timeout_ms) + " ms"));
    }
  }
}

void RequestReader::Schedule(Connection& connection, int64_t deadline) {
  deadlines_.erase({connection.deadline, connection.fd});
  connection.deadline = deadline;
  deadlines_.insert({deadline, connection.fd});
}

void RequestReader::Close(int fd) {
  auto it = connections_.find(fd);
  if (it == connections_.end()) return;
  deadlines_.erase({it->second->deadline, fd});
  limits_->Release(it->second->key);  // before close: see HttpServer::Serve
  close(fd);  // also takes it out of the epoll set (no other descriptor refers to the socket)
  connections_.erase(it);
}

void RequestReader::PauseAccepting(int64_t until) {
  accept_paused_until_ = until;
  for (const Listener& listener : listeners_) {
    epoll_event event{};  // no events: parked until ResumeAccepting
    event.data.fd = listener.fd;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listener.fd, &event);
  }
}

void RequestReader::ResumeAccepting() {
  accept_paused_until_ = 0;
  for (const Listener& listener : listeners_) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = listener.fd;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listener.fd, &event);
  }
}

}  // namespace fgpu::net
