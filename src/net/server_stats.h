// What the HTTP server has done and refused, as counters the agent can export in /metrics
// (every refusal and timeout is counted: SYSTEM.md "Everything observable") and tests can wait on.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace fgpu::net {

// A snapshot; totals since Start() except the two gauges.
struct ServerStats {
  std::size_t open_connections = 0;  // gauge: being read, queued or in a handler
  std::size_t max_connections = 0;   // gauge: the global cap in force (Options, clamped at Start)
  uint64_t accepted = 0;             // admitted past the limits
  uint64_t refused_peer_limit = 0;   // closed at accept: the peer held max_connections_per_peer
  uint64_t refused_server_full = 0;  // closed at accept: max_connections were open
  uint64_t refused_queue_full = 0;   // complete request answered 503: max_queued were waiting
  uint64_t head_timeouts = 0;        // 408: no complete head within head_timeout_ms
  uint64_t read_timeouts = 0;        // 408: no complete request within read_timeout_ms
  uint64_t malformed = 0;            // answered with the parser's status (400, 411, 413, 431, 501, 505)
  uint64_t abandoned = 0;            // the client closed before its request was complete
  uint64_t handled = 0;              // requests the handler answered
  uint64_t write_failures = 0;       // responses not fully written within write_timeout_ms
  uint64_t tcp_owner_unknown = 0;    // TCP clients limited by address: their uid was not found
  uint64_t accept_failures = 0;      // accept() failed for lack of descriptors or memory
};

// The live counters behind ServerStats. Relaxed atomics throughout: each is a tally read on its
// own, nothing is published through it.
struct ServerCounters {
  std::atomic<uint64_t> accepted{0};
  std::atomic<uint64_t> refused_peer_limit{0};
  std::atomic<uint64_t> refused_server_full{0};
  std::atomic<uint64_t> refused_queue_full{0};
  std::atomic<uint64_t> head_timeouts{0};
  std::atomic<uint64_t> read_timeouts{0};
  std::atomic<uint64_t> malformed{0};
  std::atomic<uint64_t> abandoned{0};
  std::atomic<uint64_t> handled{0};
  std::atomic<uint64_t> write_failures{0};
  std::atomic<uint64_t> tcp_owner_unknown{0};
  std::atomic<uint64_t> accept_failures{0};

  static void Bump(std::atomic<uint64_t>& counter) { counter.fetch_add(1, std::memory_order_relaxed); }

  ServerStats Snapshot() const {
    auto get = [](const std::atomic<uint64_t>& counter) { return counter.load(std::memory_order_relaxed); };
    ServerStats stats;
    stats.accepted = get(accepted);
    stats.refused_peer_limit = get(refused_peer_limit);
    stats.refused_server_full = get(refused_server_full);
    stats.refused_queue_full = get(refused_queue_full);
    stats.head_timeouts = get(head_timeouts);
    stats.read_timeouts = get(read_timeouts);
    stats.malformed = get(malformed);
    stats.abandoned = get(abandoned);
    stats.handled = get(handled);
    stats.write_failures = get(write_failures);
    stats.tcp_owner_unknown = get(tcp_owner_unknown);
    stats.accept_failures = get(accept_failures);
    return stats;
  }
};

}  // namespace fgpu::net
