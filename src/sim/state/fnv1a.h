// FNV-1a: a digest that is the same in every process, build, compiler and host (std::hash is
// not), for identities derived from names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace fgpu::sim {

class Fnv1a {
 public:
  static constexpr uint64_t kOffsetBasis = 0xcbf29ce484222325ull;

  explicit Fnv1a(uint64_t seed = kOffsetBasis) : hash_(seed) {}

  void Add(const void* data, size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) {
      hash_ ^= bytes[i];
      hash_ *= 0x100000001b3ull;
    }
  }
  void AddU64(uint64_t v) {
    unsigned char bytes[8];
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(v >> (8 * i));  // fixed byte order
    Add(bytes, sizeof(bytes));
  }
  // Length-prefixed, so that ("ab", "c") and ("a", "bc") differ.
  void AddString(std::string_view s) {
    AddU64(s.size());
    Add(s.data(), s.size());
  }
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_;
};

}  // namespace fgpu::sim
