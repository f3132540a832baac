#include "net/connection_limits.h"

namespace fgpu::net {

std::string PeerKey(bool has_uid, uid_t uid, const std::string& address) {
  return has_uid ? "uid:" + std::to_string(uid) : "addr:" + address;
}

ConnectionLimits::Admission ConnectionLimits::Admit(const std::string& peer, bool privileged) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_peer_.find(peer);
  const std::size_t mine = it == by_peer_.end() ? 0 : it->second;
  if (mine >= max_per_peer_) return Admission::kPeerFull;
  if (open_ >= max_total_ && !privileged) return Admission::kServerFull;
  if (it == by_peer_.end()) {
    by_peer_.emplace(peer, 1);
  } else {
    ++it->second;
  }
  ++open_;
  return Admission::kAdmitted;
}

void ConnectionLimits::Release(const std::string& peer) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_peer_.find(peer);
  if (it == by_peer_.end() || it->second == 0) return;  // not admitted: nothing to give back
  --open_;
  if (--it->second == 0) by_peer_.erase(it);
}

std::size_t ConnectionLimits::open() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return open_;
}

std::size_t ConnectionLimits::open_for(const std::string& peer) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_peer_.find(peer);
  return it == by_peer_.end() ? 0 : it->second;
}

}  // namespace fgpu::net
