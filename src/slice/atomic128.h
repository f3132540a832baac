// 128-bit atomic words in shared memory: a compare-and-swap and an atomic load.
//
// Contract
// - `word` must be 16-byte aligned and mapped writable: the load is itself a CAS (a plain
//   16-byte load is not atomic on x86-64), which needs write access to the cache line.
// - Both are full barriers (lock cmpxchg16b). On x86-64 this file must be compiled with
//   -mcx16 so that GCC inlines the instruction instead of calling libatomic, which the
//   interposer does not link (checked by objdump in the tests' CMake, see CMakeLists.txt).
// - A Word128 keeps the low half (used / charged / state|pid) and the high half
//   (last / committed / start_time) as two 64-bit values, little-endian in memory.
//
// ThreadSanitizer: TSan replaces 16-byte atomics with a load and a store under a mutex of
// its own process's runtime, which is atomic among that process's threads but NOT against
// other processes sharing the mapping (seen as lost updates in the crash test). So under TSan
// the same instruction is issued by inline assembly, which TSan does not rewrite, and the
// happens-before edge it would have recorded is declared with __tsan_release/__tsan_acquire
// on the word's address. The protocol is unchanged; only TSan's view of it is annotated.
#pragma once

#include <cstdint>

#if defined(__SANITIZE_THREAD__)
#define FGPU_SLICE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FGPU_SLICE_TSAN 1
#endif
#endif

#if defined(FGPU_SLICE_TSAN)
#include <sanitizer/tsan_interface.h>
#if !defined(__x86_64__)
#error "TSan builds of the slice ledger need x86-64 (inline cmpxchg16b)"
#endif
#endif

namespace fgpu::slice {

__extension__ typedef unsigned __int128 Uint128;

struct Word128 {
  uint64_t low = 0;
  uint64_t high = 0;
  friend bool operator==(const Word128&, const Word128&) = default;
};

inline Uint128 ToUint128(Word128 w) { return (static_cast<Uint128>(w.high) << 64) | w.low; }
inline Word128 FromUint128(Uint128 v) {
  return Word128{static_cast<uint64_t>(v), static_cast<uint64_t>(v >> 64)};
}

#if defined(FGPU_SLICE_TSAN)
// lock cmpxchg16b: compares rdx:rax with *word; equal → *word = rcx:rbx, ZF=1; else
// rdx:rax = *word, ZF=0. Returns ZF; `expected` receives the value found.
inline bool TsanVisibleCmpxchg16b(void* word, Word128* expected, Word128 desired) {
  __tsan_release(word);
  bool swapped = false;
  asm volatile("lock cmpxchg16b %[word]"
               : "=@ccz"(swapped), [word] "+m"(*static_cast<Uint128*>(word)), "+a"(expected->low),
                 "+d"(expected->high)
               : "b"(desired.low), "c"(desired.high)
               : "memory");
  __tsan_acquire(word);
  return swapped;
}
#endif

// Atomically: if *word == expected, *word = desired and true; else false.
inline bool Cas128(void* word, Word128 expected, Word128 desired) {
#if defined(FGPU_SLICE_TSAN)
  return TsanVisibleCmpxchg16b(word, &expected, desired);
#else
  return __sync_bool_compare_and_swap(static_cast<Uint128*>(word), ToUint128(expected), ToUint128(desired));
#endif
}

// An atomic snapshot of *word: CAS with 0 → 0, which changes nothing whatever the word holds.
inline Word128 Load128(void* word) {
#if defined(FGPU_SLICE_TSAN)
  Word128 found{};
  TsanVisibleCmpxchg16b(word, &found, Word128{});
  return found;
#else
  return FromUint128(__sync_val_compare_and_swap(static_cast<Uint128*>(word), Uint128{0}, Uint128{0}));
#endif
}

}  // namespace fgpu::slice
