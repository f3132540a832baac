// HttpServer: the agent's small HTTP/1.1 server, on loopback TCP and on a Unix socket whose
// clients the kernel identifies (SO_PEERCRED). cpp-httplib 0.11 (Debian 12) has neither a
// Unix-socket listener nor peer credentials, and the API needs both (docs/agent.md "API").
//
// Model (docs/net.md): one event-loop thread accepts every connection and reads its request
// with non-blocking I/O until it is complete (request_reader.h); only complete requests reach
// the `workers`, which run the handler and write the response (worker_pool.h). An idle or slow
// client holds a descriptor and a parser, never a worker, so it cannot keep other clients from
// being answered; the limits below bound how many descriptors each client may hold.
//
// Contract
// - One request per connection, answered with Connection: close. A request that is malformed
//   or too large gets the parser's status (400, 411, 413, 431, 501, 505); one whose head has not
//   arrived within `head_timeout_ms`, or whose whole request has not within `read_timeout_ms`,
//   gets 408. All with a JSON {"error": ...} body; the handler never sees them.
// - Peers, for the limits: a Unix-socket client is its uid (SO_PEERCRED); a TCP client is the
//   uid owning its socket (sock_diag, tcp_owner.h), or its IP address when that is not found
//   or `tcp_peer_uid` is false. So one user's Unix and TCP connections share one budget.
//   HttpRequest::peer is as before: over TCP only the address (the API trusts SO_PEERCRED alone).
// - A connection beyond its peer's `max_connections_per_peer`, or beyond `max_connections`
//   open in all, is answered 503 with Retry-After and closed at accept, touching no other
//   connection. uid 0 is exempt from `max_connections` (another uid's flood cannot lock root
//   out) but not from its per-peer limit.
// - The handler runs on one of `workers` threads, concurrently with itself; it must be
//   thread-safe. An exception escaping it becomes a 500. Waiting requests are taken
//   round-robin across peers; beyond `max_queued` waiting, a complete request gets 503 (uid 0
//   exempt).
// - stats() is a snapshot of what the server did and refused (server_stats.h); callable from
//   any thread once Start() has returned.
// - Stop() (also the destructor) stops accepting, answers the connections still being read
//   with 503, lets the workers finish every complete request (queued or running), closes the
//   listeners and removes the Unix socket file it created. Idle clients do not delay it.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "net/http_message.h"
#include "net/server_stats.h"

namespace fgpu::net {

class ConnectionLimits;
class RequestReader;
class WorkerPool;
struct ReadyRequest;

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  // Defaults are sized for one node's agent (docs/net.md "Limits"): requests are small JSON,
  // handlers take milliseconds, and tens of local users may each run a few clients at once.
  struct Options {
    // Threads running the handler. Default 8: handlers are short; more only helps if they block.
    std::size_t workers = 8;
    // Complete requests waiting for a worker, all peers together; beyond it 503 + Retry-After
    // (uid 0 exempt). Default 256: ~0.3 s of handler work at 1 ms per request on 8 workers.
    std::size_t max_queued = 256;
    // Largest request body (Content-Length); a larger one is refused with 413 as soon as the
    // head arrives, before any of the body is read. Default 1 MiB (the API's JSON is < 4 KiB).
    std::size_t max_body = 1 << 20;
    // The whole request, head and body, must arrive within this many ms of accept, else 408.
    // Default 5000: a 1 MiB body takes milliseconds on loopback; this bounds how long any
    // client may hold a connection (and its body buffer) before a worker sees it.
    int read_timeout_ms = 5000;
    // The request line and headers must arrive within this many ms of accept, else 408.
    // Default 2000: a real client sends its head in one write; a slow-loris one is cut off here.
    int head_timeout_ms = 2000;
    // A worker gives up writing a response after this many ms (the client is not reading).
    // Default 5000. A response smaller than the socket buffer (hundreds of KiB) never waits.
    int write_timeout_ms = 5000;
    // Connections open at once, all peers together (being read, queued, or in a handler);
    // beyond it 503 at accept (uid 0 exempt). Default 1024. Start() lowers it to fit
    // RLIMIT_NOFILE (soft limit − max_connections_per_peer − 64 kept for the rest of the
    // process); stats().max_connections says what is in force.
    std::size_t max_connections = 1024;
    // Connections one peer (uid, or address) may hold open; beyond it 503 at accept. Default
    // 64: far above what a user's own clients need at once, and 16 users' worth fill the global
    // cap, so one user's flood (even 300 idle connections) leaves room for everyone else.
    std::size_t max_connections_per_peer = 64;
    // Identify a TCP client by the uid owning its socket (NETLINK_SOCK_DIAG). False: by its IP
    // address only, so every loopback TCP client shares one budget. Default true.
    bool tcp_peer_uid = true;
  };

  HttpServer(Handler handler, Options options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds `host:port` (port 0: any free port). Returns the port bound.
  Result<int> ListenTcp(const std::string& host, int port);
  // Binds a Unix socket at `path` with `mode`. A stale socket file (nobody accepting) is
  // replaced; a live one is an error (another server owns it).
  Status ListenUnix(const std::string& path, mode_t mode);
  // InvalidArgument with nothing to listen on or an option out of range (a timeout ≤ 0, a
  // zero limit).
  Status Start();
  void Stop();

  ServerStats stats() const;

 private:
  struct Listener {
    int fd = -1;
    bool unix_socket = false;
    std::string path;
  };

  void Serve(ReadyRequest& ready);
  std::size_t EffectiveMaxConnections() const;

  Handler handler_;
  Options options_;
  std::vector<Listener> listeners_;
  std::atomic<bool> stopping_{false};
  bool started_ = false;
  ServerCounters counters_;
  std::unique_ptr<ConnectionLimits> limits_;
  std::unique_ptr<WorkerPool> workers_;
  std::unique_ptr<RequestReader> reader_;
  std::thread reader_thread_;
};

}  // namespace fgpu::net
