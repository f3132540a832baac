// RequestReader: the HTTP server's event loop. One thread accepts every connection, says who
// the peer is, admits it under the connection limits and reads its request with non-blocking
// I/O (epoll) until HttpParser has all of it; only then is the request handed to a
// RequestSink (the worker pool). An idle or slow client costs a descriptor and a parser here,
// never a worker thread. docs/net.md describes the model and every limit.
//
// Contract
// - Run() loops until Stop() (thread-safe, from any thread). Before returning it answers
//   every connection it still reads with 503 "the server is stopping" and closes it; requests
//   already handed over are the sink's.
// - Every admitted connection ends in exactly one of: handed over (the sink's owner closes the
//   fd and Release()s the peer), or closed here (with Release()).
// - Answers from the loop (408, the parser's errors, 503) are a single non-blocking send of a
//   small response into an empty socket buffer, so the loop never waits on a client. After
//   one, the loop half-closes and reads and drops what the client still sends for up to
//   kLingerMs / kLingerBytes, so the client reads the answer instead of a reset.
// - The listeners are borrowed: made non-blocking here, closed by the owner after Run returns.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/status.h"
#include "net/connection_limits.h"
#include "net/http_message.h"
#include "net/server_stats.h"
#include "net/tcp_owner.h"

namespace fgpu::net {

// The JSON {"error": ...} response every refusal carries.
HttpResponse ErrorResponse(int status, const std::string& message);

// A complete request and the connection to answer it on.
struct ReadyRequest {
  int fd = -1;
  std::string peer_key;  // ConnectionLimits key, to Release() after closing fd
  bool privileged = false;
  HttpRequest request;  // request.peer filled in
};

// Where complete requests go. Called only from the loop's thread (one producer), so HasRoom()
// followed by Push() cannot be overtaken.
class RequestSink {
 public:
  virtual ~RequestSink() = default;
  virtual bool HasRoom(bool privileged) = 0;
  virtual void Push(ReadyRequest request) = 0;
};

class RequestReader {
 public:
  static constexpr int kLingerMs = 1000;
  static constexpr std::size_t kLingerBytes = 4u << 20;  // a whole over-limit body of a few MiB

  struct Listener {
    int fd = -1;
    bool unix_socket = false;
    std::string path;
  };
  struct Settings {
    std::size_t max_body = 1 << 20;
    int head_timeout_ms = 2000;
    int read_timeout_ms = 5000;
    bool tcp_peer_uid = true;
  };

  RequestReader(std::vector<Listener> listeners, Settings settings, ConnectionLimits* limits,
                ServerCounters* counters, RequestSink* sink);
  ~RequestReader();
  RequestReader(const RequestReader&) = delete;
  RequestReader& operator=(const RequestReader&) = delete;

  // Creates the epoll set and the wake-up eventfd.
  Status Open();
  void Run();
  void Stop();

 private:
  struct Connection;

  void Accept(const Listener& listener);
  void Admit(int fd, const Listener& listener, const sockaddr_storage& address);
  void Read(Connection& connection);
  void HandOver(Connection& connection);
  void Answer(Connection& connection, const HttpResponse& response);
  void Expire(int64_t now);
  void Close(int fd);
  void Schedule(Connection& connection, int64_t deadline);
  void PauseAccepting(int64_t until);
  void ResumeAccepting();
  int WaitMs(int64_t now) const;

  std::vector<Listener> listeners_;
  Settings settings_;
  ConnectionLimits* limits_;
  ServerCounters* counters_;
  RequestSink* sink_;
  TcpOwnerLookup owners_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::atomic<bool> stop_{false};
  int64_t accept_paused_until_ = 0;                                   // 0: accepting
  std::unordered_map<int, std::unique_ptr<Connection>> connections_;  // by fd
  std::set<std::pair<int64_t, int>> deadlines_;                       // (deadline ms, fd), one per connection
};

}  // namespace fgpu::net
