// ConnectionLimits: how many connections each peer, and all peers together, may hold open in
// the server (being read, waiting for a worker, or in a handler). The event loop asks at
// accept; whoever closes the connection (the loop or a worker) gives it back.
//
// Contract
// - A peer is a string key, PeerKey(): "uid:1000" when the kernel told us the client's uid
//   (SO_PEERCRED, or the owner of a loopback TCP socket), "addr:127.0.0.1" otherwise.
// - Admit() refuses when the peer already holds `max_per_peer`, or when `max_total` are open
//   and the peer is not privileged. A privileged peer (uid 0) passes the global cap, so another
//   uid's flood cannot lock root out; its own per-peer limit still bounds it, so the total is
//   at most max_total + max_per_peer.
// - Thread-safe (one mutex; it is taken twice per connection, never per byte).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace fgpu::net {

// The limits' key for a client: its uid when known (`has_uid`), else its address without the port.
std::string PeerKey(bool has_uid, uid_t uid, const std::string& address);

class ConnectionLimits {
 public:
  enum class Admission { kAdmitted, kPeerFull, kServerFull };

  ConnectionLimits(std::size_t max_total, std::size_t max_per_peer)
      : max_total_(max_total), max_per_peer_(max_per_peer) {}

  Admission Admit(const std::string& peer, bool privileged);
  // Gives back one connection Admit() let in.
  void Release(const std::string& peer);

  std::size_t open() const;
  std::size_t open_for(const std::string& peer) const;
  std::size_t max_total() const { return max_total_; }

 private:
  const std::size_t max_total_;
  const std::size_t max_per_peer_;
  mutable std::mutex mutex_;
  std::size_t open_ = 0;
  std::unordered_map<std::string, std::size_t> by_peer_;  // peers with at least one open
};

}  // namespace fgpu::net
