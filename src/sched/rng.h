// A small, fast, seedable random source with the same stream on every platform (the
// standard library's distributions are implementation-defined), so a simulation with a
// given seed gives the same numbers everywhere. xoshiro256** seeded through splitmix64.
#pragma once

#include <cstdint>

namespace fgpu::sched {

// GCC and Clang have a 128-bit integer; __extension__ keeps -Wpedantic quiet about it.
__extension__ using Uint128 = unsigned __int128;

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (uint64_t& word : state_) word = SplitMix(seed);
  }

  uint64_t Next() {
    const uint64_t result = Rotl(state_[1] * 5, 7) * 9;
    const uint64_t shifted = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= shifted;
    state_[3] = Rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, bound), unbiased (Lemire's multiply-and-reject). bound must be > 0.
  uint64_t Uniform(uint64_t bound) {
    Uint128 product = static_cast<Uint128>(Next()) * bound;
    auto low = static_cast<uint64_t>(product);
    if (low < bound) {
      const uint64_t threshold = -bound % bound;
      while (low < threshold) {
        product = static_cast<Uint128>(Next()) * bound;
        low = static_cast<uint64_t>(product);
      }
    }
    return static_cast<uint64_t>(product >> 64);
  }

  // Uniform in [0, 1).
  double UniformDouble() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  static uint64_t Rotl(uint64_t value, int shift) { return (value << shift) | (value >> (64 - shift)); }
  static uint64_t SplitMix(uint64_t& seed) {
    uint64_t z = (seed += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  uint64_t state_[4] = {};
};

}  // namespace fgpu::sched
