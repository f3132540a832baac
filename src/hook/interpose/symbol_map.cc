#include "hook/interpose/symbol_map.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "hook/interpose/real_driver_internal.h"

namespace fgpu::hook {

namespace {

constexpr std::array<std::string_view, kCudaSymbolCount> kCudaNames = {
#define FGPU_HOOK(name) #name,
#include "hook/interpose/hooked_symbols.inc"
#undef FGPU_HOOK
};

constexpr std::array<std::string_view, kNvmlSymbolCount> kNvmlNames = {
#define FGPU_HOOK_NVML(name) #name,
#include "hook/interpose/hooked_nvml.inc"
#undef FGPU_HOOK_NVML
};

struct DriverExport {
  std::string_view base;
  std::string_view exported;
};

// Every export the ABI headers know, to name the base of each hooked variant.
constexpr DriverExport kDriverExports[] = {
#define FGPU_CUDA_SYMBOL(base, exported, version, per_thread) {#base, #exported},
#include "core/abi/cuda_symbols.inc"
#undef FGPU_CUDA_SYMBOL
};

constexpr std::string_view BaseOf(std::string_view exported) {
  for (const DriverExport& entry : kDriverExports) {
    if (entry.exported == exported) return entry.base;
  }
  return {};
}

constexpr std::array<std::string_view, kCudaSymbolCount> kCudaBases = [] {
  std::array<std::string_view, kCudaSymbolCount> bases{};
  for (size_t i = 0; i < kCudaSymbolCount; ++i) bases[i] = BaseOf(kCudaNames[i]);
  return bases;
}();

constexpr bool EveryHookedNameIsADriverExport() {
  for (std::string_view base : kCudaBases) {
    if (base.empty()) return false;
  }
  return true;
}
static_assert(EveryHookedNameIsADriverExport(),
              "hooked_symbols.inc names a symbol missing from core/abi/cuda_symbols.inc");

struct NamedSymbol {
  std::string_view name;
  HookedSymbol symbol;
};

constexpr size_t kHookedCount = kCudaSymbolCount + kNvmlSymbolCount;

constexpr std::array<NamedSymbol, kHookedCount> kSortedNames = [] {
  std::array<NamedSymbol, kHookedCount> names{};
  size_t n = 0;
  for (size_t i = 0; i < kCudaSymbolCount; ++i) names[n++] = {kCudaNames[i], {false, static_cast<uint16_t>(i)}};
  for (size_t i = 0; i < kNvmlSymbolCount; ++i) names[n++] = {kNvmlNames[i], {true, static_cast<uint16_t>(i)}};
  std::sort(names.begin(), names.end(), [](const NamedSymbol& a, const NamedSymbol& b) { return a.name < b.name; });
  return names;
}();

// The same sorted names as a plain array of C strings, for IsHookedName.
struct NameList {
  const char* names[kHookedCount];
};
constexpr NameList kSortedNameList = [] {
  NameList list{};
  for (size_t i = 0; i < kHookedCount; ++i) list.names[i] = kSortedNames[i].name.data();
  return list;
}();

// strcmp by hand: a library strcmp may be a sanitizer interceptor not yet initialised.
FGPU_HOOK_UNINSTRUMENTED int CompareNames(const char* a, const char* b) {
  for (; *a != '\0' && *a == *b; ++a, ++b) {
  }
  return static_cast<int>(static_cast<unsigned char>(*a)) - static_cast<int>(static_cast<unsigned char>(*b));
}

constexpr bool NamesAreUnique() {
  for (size_t i = 1; i < kHookedCount; ++i) {
    if (kSortedNames[i - 1].name == kSortedNames[i].name) return false;
  }
  return true;
}
static_assert(NamesAreUnique(), "a hooked name is listed twice");

// Bases whose unknown variants are refused: every hooked base but the launch entry points,
// which only forward today (refusing a newer launch ABI would break a workload for nothing).
// Bases whose unknown (newer) variants are handed out unwrapped: missing a launch or a
// synchronisation costs no accounting (a sync only triggers reconciliation, which the next one
// repeats), whereas an unwrapped allocator would escape the cap.
constexpr std::string_view kForwardUnknownVariants[] = {"cuLaunchKernel", "cuStreamSynchronize",
                                                        "cuEventSynchronize", "cuCtxSynchronize",
                                                        "cuMemPoolTrimTo"};

constexpr std::array<std::string_view, kCudaSymbolCount> kSortedRefusingBases = [] {
  std::array<std::string_view, kCudaSymbolCount> bases = kCudaBases;
  for (std::string_view& base : bases) {
    for (std::string_view forwarded : kForwardUnknownVariants) {
      if (base == forwarded) base = {};  // sorts first and never matches a real name
    }
  }
  std::sort(bases.begin(), bases.end());
  return bases;
}();

uintptr_t Address(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer); }

}  // namespace

const char* CudaSymbolName(CudaSymbol symbol) {
  // The views point into string literals, so they are NUL-terminated.
  return kCudaNames[static_cast<size_t>(symbol)].data();
}

const char* NvmlSymbolName(NvmlSymbol symbol) { return kNvmlNames[static_cast<size_t>(symbol)].data(); }

const char* CudaBaseName(CudaSymbol symbol) { return kCudaBases[static_cast<size_t>(symbol)].data(); }

bool FindHookedName(const char* name, HookedSymbol* found) {
  if (name == nullptr) return false;
  const std::string_view key(name);
  const auto it = std::lower_bound(kSortedNames.begin(), kSortedNames.end(), key,
                                   [](const NamedSymbol& entry, std::string_view k) { return entry.name < k; });
  if (it == kSortedNames.end() || it->name != key) return false;
  *found = it->symbol;
  return true;
}

FGPU_HOOK_UNINSTRUMENTED bool IsHookedName(const char* name) {
  if (name == nullptr) return false;
  size_t low = 0, high = kHookedCount;
  while (low < high) {
    const size_t middle = low + (high - low) / 2;
    const int order = CompareNames(kSortedNameList.names[middle], name);
    if (order == 0) return true;
    if (order < 0) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return false;
}

bool RefusesUnknownVariant(const char* base) {
  if (base == nullptr || *base == '\0') return false;
  return std::binary_search(kSortedRefusingBases.begin(), kSortedRefusingBases.end(), std::string_view(base));
}

void AddressMap::Add(const void* key, void* real, void* wrapper, HookedSymbol symbol) {
  if (key == nullptr || size_ == kCapacity) return;
  entries_[size_++] = {key, real, wrapper, symbol};
}

void AddressMap::Build(void* const* real_cuda, void* const* cuda_wrappers, void* const* real_nvml,
                       void* const* nvml_wrappers) {
  size_ = 0;
  // Real addresses first, so that after a stable sort the first entry of a key is the real one.
  for (size_t i = 0; i < kCudaSymbolCount; ++i) {
    Add(real_cuda[i], real_cuda[i], cuda_wrappers[i], {false, static_cast<uint16_t>(i)});
  }
  for (size_t i = 0; i < kNvmlSymbolCount; ++i) {
    Add(real_nvml[i], real_nvml[i], nvml_wrappers[i], {true, static_cast<uint16_t>(i)});
  }
  for (size_t i = 0; i < kCudaSymbolCount; ++i) {
    Add(cuda_wrappers[i], real_cuda[i], cuda_wrappers[i], {false, static_cast<uint16_t>(i)});
  }
  for (size_t i = 0; i < kNvmlSymbolCount; ++i) {
    Add(nvml_wrappers[i], real_nvml[i], nvml_wrappers[i], {true, static_cast<uint16_t>(i)});
  }
  // Insertion sort: stable, in place, and allocation-free (std::stable_sort may allocate a
  // buffer, and this runs inside the hook's init); a hundred entries, once per process.
  for (size_t i = 1; i < size_; ++i) {
    const Entry moving = entries_[i];
    size_t j = i;
    for (; j > 0 && Address(entries_[j - 1].key) > Address(moving.key); --j) entries_[j] = entries_[j - 1];
    entries_[j] = moving;
  }
}

const AddressMap::Entry* AddressMap::Find(const void* address) const {
  if (address == nullptr) return nullptr;
  const Entry* it = std::lower_bound(entries_, entries_ + size_, Address(address),
                                     [](const Entry& entry, uintptr_t key) { return Address(entry.key) < key; });
  return it != entries_ + size_ && it->key == address ? it : nullptr;
}

}  // namespace fgpu::hook
