// HttpServer: the agent's small HTTP/1.1 server, on loopback TCP and on a Unix socket whose
// clients the kernel identifies (SO_PEERCRED). cpp-httplib 0.11 (Debian 12) has neither a
// Unix-socket listener nor peer credentials, and the API needs both (docs/agent.md "API").
//
// Contract
// - One request per connection, answered with Connection: close. A request that is not read
//   completely within `read_timeout_ms`, or is malformed or too large, gets the parser's
//   status (408, 400, 411, 413, 431, 501, 505) with a JSON {"error": ...} body; the handler
//   never sees it.
// - The handler runs on one of `workers` threads, concurrently with itself; it must be
//   thread-safe. An exception escaping it becomes a 500.
// - Accepted connections beyond `max_queued` waiting for a worker get 503 at once.
// - Stop() (also the destructor) stops accepting, lets the workers finish the requests they
//   hold, closes the listeners and removes the Unix socket file it created.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "net/http_message.h"

namespace fgpu::net {

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  struct Options {
    std::size_t workers = 8;
    std::size_t max_queued = 256;
    std::size_t max_body = 1 << 20;
    int read_timeout_ms = 5000;
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
  Status Start();
  void Stop();

 private:
  struct Listener {
    int fd = -1;
    bool unix_socket = false;
    std::string path;
  };
  struct Connection {
    int fd = -1;
    Peer peer;
  };

  void AcceptLoop();
  void WorkerLoop();
  void Serve(const Connection& connection);
  void Enqueue(Connection connection);

  Handler handler_;
  Options options_;
  std::vector<Listener> listeners_;
  int wake_fd_ = -1;  // eventfd: wakes the accept loop to stop
  std::atomic<bool> stopping_{false};
  bool started_ = false;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Connection> queue_;
  std::thread acceptor_;
  std::vector<std::thread> workers_;
};

}  // namespace fgpu::net
