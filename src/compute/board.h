// Board: the compute-arbitration file of one physical GPU, mapped by every process of every
// slice that runs on it (docs/compute.md "The board").
//
// Contract
// - Open creates `<dir>/<uuid>` complete under a temporary name and hard-links it into place
//   (never replacing a board another process created first; 0666, so
//   slices of other users can join; `dir` is created 01777), or maps the existing one after
//   validating magic, version, sizes and counts: VersionMismatch / Corrupt / Unavailable with
//   the path in the message. A board is never freed by the hook (it lives as long as the
//   process); tests delete theirs.
// - Join finds the row whose key is `key` or claims a free (or abandoned) one; -1 when all
//   rows are held by live slices. Two processes of one slice joining at once may claim two
//   rows; Join then keeps the lowest and frees the other, so a slice ends with one row.
// - Everything after Open is lock-free: rows are claimed by CAS on their key, the owner word
//   by CAS, maxima by CAS loops. No call after Open allocates or makes a syscall.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "compute/board_layout.h"
#include "core/status.h"

namespace fgpu::compute {

// A row nobody of its slice has touched for this long may be taken by another slice.
inline constexpr int64_t kAbandonedRowNs = 60'000'000'000;

class Board {
 public:
  static Result<Board*> Open(const std::string& dir, std::string_view uuid);
  ~Board();
  Board(const Board&) = delete;
  Board& operator=(const Board&) = delete;

  int Join(uint64_t key, std::string_view slice_id, int64_t now_ns);

  layout::BoardHeader* header() const { return header_; }
  layout::BoardEntry* entry(int index) const { return entries_ + index; }
  const std::string& path() const { return path_; }

 private:
  Board(void* base, std::string path);
  int FindKey(uint64_t key) const;
  bool Claim(int index, uint64_t key, std::string_view slice_id, int64_t now_ns);

  layout::BoardHeader* header_;
  layout::BoardEntry* entries_;
  std::string path_;
};

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
