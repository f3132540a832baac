#include "net/http_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <exception>

#include "net/connection_limits.h"
#include "net/request_reader.h"
#include "net/socket_io.h"
#include "net/worker_pool.h"

namespace fgpu::net {
namespace {

// Room for a burst of connects while the loop is busy: the kernel caps it at somaxconn.
constexpr int kBacklog = 4096;
// Descriptors left to the rest of the process when the cap is fitted to RLIMIT_NOFILE.
constexpr std::size_t kSpareDescriptors = 64;

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
  if (fd < 0) return Status::Unavailable(ErrnoMessage("socket"));
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 || listen(fd, kBacklog) != 0) {
    const Status error = Status::Unavailable(ErrnoMessage("cannot listen on " + host + ":" + std::to_string(port)));
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
  if (!FillUnixAddress(path, &address))
    return Status::InvalidArgument("socket path too long or empty: " + path);
  struct stat info {};
  if (lstat(path.c_str(), &info) == 0) {
    if (!S_ISSOCK(info.st_mode)) return Status::InvalidArgument(path + " exists and is not a socket");
    if (SomeoneListens(address)) return Status::Unavailable("another server is listening on " + path);
    unlink(path.c_str());
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Unavailable(ErrnoMessage("socket"));
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      chmod(path.c_str(), mode) != 0 || listen(fd, kBacklog) != 0) {
    const Status error = Status::Unavailable(ErrnoMessage("cannot listen on " + path));
    close(fd);
    return error;
  }
  listeners_.push_back({fd, true, path});
  return Status::Ok();
}

std::size_t HttpServer::EffectiveMaxConnections() const {
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) != 0 || files.rlim_cur == RLIM_INFINITY)
    return options_.max_connections;
  // Root's connections may exceed the cap by one peer's worth; keep that and some spare free.
  const std::size_t kept = options_.max_connections_per_peer + kSpareDescriptors;
  const std::size_t fit = files.rlim_cur > kept ? static_cast<std::size_t>(files.rlim_cur) - kept : 1;
  return std::min(options_.max_connections, fit);
}

Status HttpServer::Start() {
  if (listeners_.empty()) return Status::InvalidArgument("nothing to listen on");
  if (started_ || stopping_.load()) return Status::InvalidArgument("the server was already started");
  if (options_.head_timeout_ms <= 0 || options_.read_timeout_ms <= 0 || options_.write_timeout_ms <= 0) {
    return Status::InvalidArgument("head_timeout_ms, read_timeout_ms and write_timeout_ms must be > 0");
  }
  if (options_.workers == 0 || options_.max_connections == 0 || options_.max_connections_per_peer == 0) {
    return Status::InvalidArgument("workers, max_connections and max_connections_per_peer must be > 0");
  }
  limits_ = std::make_unique<ConnectionLimits>(EffectiveMaxConnections(), options_.max_connections_per_peer);
  workers_ = std::make_unique<WorkerPool>(options_.max_queued, [this](ReadyRequest& ready) { Serve(ready); });
  std::vector<RequestReader::Listener> listeners;
  for (const Listener& listener : listeners_)
    listeners.push_back({listener.fd, listener.unix_socket, listener.path});
  RequestReader::Settings settings;
  settings.max_body = options_.max_body;
  settings.head_timeout_ms = options_.head_timeout_ms;
  settings.read_timeout_ms = options_.read_timeout_ms;
  settings.tcp_peer_uid = options_.tcp_peer_uid;
  reader_ = std::make_unique<RequestReader>(std::move(listeners), settings, limits_.get(), &counters_,
                                            workers_.get());
  if (Status opened = reader_->Open(); !opened.ok()) {
    reader_.reset();
    return opened;
  }
  workers_->Start(options_.workers);
  reader_thread_ = std::thread([this] { reader_->Run(); });
  started_ = true;
  return Status::Ok();
}

void HttpServer::Stop() {
  if (stopping_.exchange(true)) return;
  if (started_) {
    reader_->Stop();
    reader_thread_.join();  // nothing more reaches the workers
    workers_->Drain();      // every complete request is answered
    reader_.reset();
  }
  for (const Listener& listener : listeners_) {
    close(listener.fd);
    if (listener.unix_socket) unlink(listener.path.c_str());
  }
  listeners_.clear();
}

ServerStats HttpServer::stats() const {
  ServerStats stats = counters_.Snapshot();
  if (limits_ != nullptr) {
    stats.open_connections = limits_->open();
    stats.max_connections = limits_->max_total();
  }
  return stats;
}

void HttpServer::Serve(ReadyRequest& ready) {
  HttpResponse response;
  try {
    response = handler_(ready.request);
  } catch (const std::exception& error) {
    response = ErrorResponse(500, std::string("internal error: ") + error.what());
  } catch (...) {
    response = ErrorResponse(500, "internal error");
  }
  ServerCounters::Bump(counters_.handled);
  if (!WriteAll(ready.fd, Serialize(response), NowMs() + options_.write_timeout_ms)) {
    ServerCounters::Bump(counters_.write_failures);
  }
  // Given back first: a client that reconnects as soon as it sees EOF finds its slot free.
  limits_->Release(ready.peer_key);
  close(ready.fd);
}

}  // namespace fgpu::net
