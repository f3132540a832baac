// Board: the compute-arbitration state of one physical GPU, mapped by every process of every
// slice that runs on it (docs/compute.md "The board").
//
// Contract
// - Open (a file board: unmanaged nodes, and managed ones without board_socket) creates
//   `<dir>/<uuid>` complete under a temporary name and hard-links it into place (never replacing
//   a board another process created first; 0666, so slices of other users can join; `dir` is
//   created 01777), or maps the existing one after validating magic, version, sizes and counts:
//   VersionMismatch / Corrupt / Unavailable with the path in the message.
// - Map (a sealed board: a managed node with board_socket) maps a board memfd read-write and its
//   policy table memfd read-only (read-write for the agent, `writable_policy`) after checking
//   both descriptors (sealed.h CheckSealed: size, seals, owner, and a policy descriptor that is
//   not writable unless `writable_policy`) and validating both headers (the policy names this
//   board's inode). The descriptors are not kept: the caller closes them.
// - A board is never freed by the hook (it lives as long as the process); tests and the agent
//   delete theirs.
// - Rows. Without a policy table, Join finds the row whose key is `key` or claims a free (or
//   abandoned) one; -1 when all rows are held by live slices. Two processes of one slice joining
//   at once may claim two rows; Join then keeps the lowest and frees the other, so a slice ends
//   with one row. With a policy table the agent assigns rows: Join only finds the policy row
//   whose key is `key` (-1: none) and never claims, and every row's key, share and mode|tier are
//   read from the policy table (share_word, mode_tier_word, RowKey), not from the board.
// - Everything after Open/Map is lock-free: rows are claimed by CAS on their key, the owner word
//   by CAS, maxima by CAS loops. No call after Open/Map allocates or makes a syscall.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "compute/board_layout.h"
#include "core/status.h"

namespace fgpu::compute {

// A row nobody of its slice has touched for this long may be taken by another slice.
inline constexpr int64_t kAbandonedRowNs = 60'000'000'000;

struct MapOptions {
  bool writable_policy = false;  // the agent's own mapping; workloads' descriptors must be read-only
  uid_t owner = 0;               // who must own both memfds (the agent's user: root on a node)
};

class Board {
 public:
  static Result<Board*> Open(const std::string& dir, std::string_view uuid);
  static Result<Board*> Map(int board_fd, int policy_fd, std::string_view uuid, const MapOptions& options = {});
  ~Board();
  Board(const Board&) = delete;
  Board& operator=(const Board&) = delete;

  int Join(uint64_t key, std::string_view slice_id, int64_t now_ns);
  // The row holding `key` (the policy table's rows when there is one); -1 when none.
  int Find(uint64_t key) const;

  layout::BoardHeader* header() const { return header_; }
  layout::BoardEntry* entry(int index) const { return entries_ + index; }
  const std::string& path() const { return path_; }

  bool has_policy() const { return policy_ != nullptr; }
  bool policy_writable() const { return policy_writable_; }
  layout::PolicyHeader* policy_header() const { return policy_header_; }
  // Writable only through a Map with writable_policy (the agent); else the page is read-only.
  layout::PolicyEntry* policy_entry(int index) const { return policy_ + index; }
  // Where row `index`'s settings live: the policy table when there is one, else the row itself.
  const uint32_t* share_word(int index) const { return policy_ != nullptr ? &policy_[index].share : &entries_[index].share; }
  const uint32_t* mode_tier_word(int index) const {
    return policy_ != nullptr ? &policy_[index].mode_tier : &entries_[index].mode_tier;
  }
  uint64_t RowKey(int index) const {
    return __atomic_load_n(policy_ != nullptr ? &policy_[index].key : &entries_[index].key, __ATOMIC_ACQUIRE);
  }

 private:
  Board(void* base, void* policy, bool policy_writable, std::string path);
  bool Claim(int index, uint64_t key, std::string_view slice_id, int64_t now_ns);

  layout::BoardHeader* header_;
  layout::BoardEntry* entries_;
  layout::PolicyHeader* policy_header_ = nullptr;  // null: a file board (rows claimed by workloads)
  layout::PolicyEntry* policy_ = nullptr;
  bool policy_writable_ = false;
  std::string path_;
};

// The header of a new board for GPU `uuid` (shorter than kUuidBytes): nobody owns it, rows free.
layout::BoardHeader FreshBoardHeader(std::string_view uuid);

// The key of a slice on a board: FNV-1a of its identity, never 0.
uint64_t SliceKey(std::string_view identity);

// CLOCK_MONOTONIC in ns (vDSO: no syscall).
int64_t MonotonicNs();

// Atomic helpers on board words.
inline int64_t LoadI64(const int64_t* word) { return __atomic_load_n(word, __ATOMIC_ACQUIRE); }
inline uint64_t LoadU64(const uint64_t* word) { return __atomic_load_n(word, __ATOMIC_ACQUIRE); }
inline void StoreI64(int64_t* word, int64_t value) { __atomic_store_n(word, value, __ATOMIC_RELEASE); }
template <typename T>
inline void StoreMax(T* word, T value) {
  T seen = __atomic_load_n(word, __ATOMIC_RELAXED);
  while (seen < value &&
         !__atomic_compare_exchange_n(word, &seen, value, true, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
  }
}

}  // namespace fgpu::compute
