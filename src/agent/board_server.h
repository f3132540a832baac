// BoardServer: the board handout socket (compute/board_handout.h has the protocol): hands each
// GPU's sealed board and policy table (board_registry.h) to root and to the users who own a
// slice on that GPU, and to nobody else (docs/compute.md "The board on a managed node",
// docs/security.md "Compute arbitration").
//
// Contract
// - Listen(path): a SOCK_SEQPACKET Unix socket at `path` (an old socket file there is replaced;
//   its directory is made if missing), mode 0666 — every local user may ask; SO_PEERCRED decides.
// - Start() serves on one thread until Stop() (or destruction): one request and one reply per
//   connection. Every connection is bounded: at most kMaxPending waiting at once (kMaxPerUid of
//   one uid; more are closed unanswered), each closed after kRequestDeadlineMs without a
//   request; replies are non-blocking sends. So a user that opens connections and sends nothing,
//   or never reads, delays nobody else for long and never blocks the agent.
// - Who gets the descriptors: uid 0, or a uid `may_have(uid, uuid)` says owns a slice on that GPU
//   (SliceOwnersOn: the SliceService's records). Others get kRefused with the reason; an unknown
//   GPU kUnknownGpu; a malformed request kBadRequest. Counted (handed_out, refused).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "agent/board_registry.h"
#include "core/status.h"

namespace fgpu::agent {

class SliceService;

class BoardServer {
 public:
  using MayHave = std::function<bool(uid_t uid, const std::string& uuid)>;

  static constexpr int kMaxPending = 256;
  static constexpr int kMaxPerUid = 16;
  static constexpr int kRequestDeadlineMs = 1000;

  BoardServer(const BoardRegistry* registry, MayHave may_have);
  ~BoardServer();
  BoardServer(const BoardServer&) = delete;
  BoardServer& operator=(const BoardServer&) = delete;

  Status Listen(const std::string& path);
  Status Start();
  void Stop();

  uint64_t handed_out() const { return handed_out_.load(std::memory_order_relaxed); }
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  void Serve();
  void Answer(int connection, uid_t uid, const std::string& uuid);

  const BoardRegistry* registry_;
  MayHave may_have_;
  int listener_ = -1;
  int wake_[2] = {-1, -1};  // a pipe: Stop() writes, Serve() returns
  std::string path_;
  std::thread thread_;
  std::atomic<uint64_t> handed_out_{0};  // counters: for logs and tests
  std::atomic<uint64_t> refused_{0};
};

// Whether `uid` owns a slice on GPU `uuid`, by the service's records.
BoardServer::MayHave SliceOwnersOn(const SliceService* slices);

}  // namespace fgpu::agent
