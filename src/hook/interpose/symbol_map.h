// Names and addresses of the hooked entry points: the lookups behind the dlsym override and
// cuGetProcAddress.
//
// Contract
// - FindHookedName(name) answers, for any exported name, which hooked symbol it is (binary
//   search over a table sorted at compile time; no allocation, no init needed), so the dlsym
//   override can pass every other name straight through without touching the hook's state.
// - AddressMap maps a driver address to the hooked symbol it implements. It is filled once, at
//   init, from the real driver's address of every hooked name AND from our own wrappers'
//   addresses: a driver whose internal references to its exports resolve through the global
//   scope (the simulated one, any library built without -Bsymbolic) hands out *our* export
//   when the application has preloaded us, and that must be recognised too. Lookup is a binary
//   search over a fixed array (not a hot path: cuGetProcAddress runs once per symbol).
// - RefusesUnknownVariant(base) is true for the base names whose variants we wrap to account
//   memory (or to gate init/lookup): an address the driver returns for such a base that is in
//   no map is a variant newer than this build, and handing it out would let the workload
//   allocate outside its slice. Launch bases are not refused (nothing is enforced there yet).
#pragma once

#include <cstddef>
#include <cstdint>

#include "hook/interpose/real_driver.h"

namespace fgpu::hook {

inline constexpr size_t kCudaSymbolCount = static_cast<size_t>(CudaSymbol::kCount);
inline constexpr size_t kNvmlSymbolCount = static_cast<size_t>(NvmlSymbol::kCount);

// A hooked symbol of either library.
struct HookedSymbol {
  bool nvml = false;
  uint16_t index = 0;  // CudaSymbol or NvmlSymbol value
};

// The exported name of each hooked symbol, in hooked_symbols.inc / hooked_nvml.inc order.
const char* CudaSymbolName(CudaSymbol symbol);
const char* NvmlSymbolName(NvmlSymbol symbol);

// Which hooked symbol `name` is; false for every other name (and for NULL).
bool FindHookedName(const char* name, HookedSymbol* found);
// The same question without an out-parameter (keeps the dlsym override's pass-through a
// sibling call: no local of the caller has its address taken). On the dlsym pass-through
// path, so plain code only: see FGPU_HOOK_UNINSTRUMENTED in real_driver_internal.h.
bool IsHookedName(const char* name);

// Whether a cuGetProcAddress answer for base name `base` that matches no known address must be
// refused rather than handed out (see the contract above).
bool RefusesUnknownVariant(const char* base);

// The driver base name ("cuMemAlloc") of a hooked exported CUDA name ("cuMemAlloc_v2").
const char* CudaBaseName(CudaSymbol symbol);

// Driver address -> hooked symbol, with both the real function and our wrapper.
class AddressMap {
 public:
  struct Entry {
    const void* key = nullptr;  // the address looked up: a real function or one of our wrappers
    void* real = nullptr;       // the driver's function (NULL when the driver lacks it)
    void* wrapper = nullptr;    // our wrapper
    HookedSymbol symbol;
  };
  static constexpr size_t kCapacity = 2 * (kCudaSymbolCount + kNvmlSymbolCount);

  // Rebuilds the map from per-symbol arrays (index = CudaSymbol / NvmlSymbol value). NULL
  // entries are skipped. Real addresses win over a wrapper at the same address (which only a
  // broken build could produce). No allocation.
  void Build(void* const* real_cuda, void* const* cuda_wrappers, void* const* real_nvml,
             void* const* nvml_wrappers);

  // The entry whose key is `address`, or NULL.
  const Entry* Find(const void* address) const;
  size_t size() const { return size_; }

 private:
  void Add(const void* key, void* real, void* wrapper, HookedSymbol symbol);

  Entry entries_[kCapacity];
  size_t size_ = 0;
};

}  // namespace fgpu::hook
