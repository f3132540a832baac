// PointerTable: what the hook charged for each live allocation, keyed by the address or handle
// the driver returned.
//
// Contract
// - A key is (kind, 64-bit value). Device pointers, VMM handles, arrays and mipmapped arrays are
//   separate namespaces, so a handle that happens to equal a pointer never collides with it.
// - Insert, Find, Erase make no syscall, take no lock and allocate nothing; any thread may call
//   any of them concurrently. Open addressing with linear probing bounded to kMaxProbe slots
//   from a key's home slot: every operation is O(1) whatever the history. A slot's key word is
//   claimed by CAS (empty/tombstone -> busy -> key), erased slots become tombstones that later
//   inserts reuse.
// - The caller guarantees a key is live at most once (the driver never hands out a live address
//   twice). Erase is the claim of a free: of two threads erasing one key, exactly one succeeds.
// - Insert fails when no slot within kMaxProbe of the home is free (about 10^6 live entries at
//   the default size, or pathological clustering), and for the three values >= 2^64 - 3 that
//   encode the slot states. The caller must then undo the allocation: a charge is never kept
//   without its entry.
// - Storage is one anonymous mapping made by Create (its only syscall), touched lazily. If the
//   mapping fails the table is empty and every Insert fails (fail closed).
#pragma once

#include <cstddef>
#include <cstdint>

namespace fgpu::hook {

enum class PointerKind : uint32_t {
  kDevicePointer = 1,   // cuMemAlloc*, cuMemAllocPitch*, cuMemAllocManaged, stream-ordered allocations
  kVmmHandle = 2,       // cuMemCreate
  kArray = 3,           // cuArrayCreate*, cuArray3DCreate*
  kMipmappedArray = 4,  // cuMipmappedArrayCreate
  kModule = 5,          // cuModuleLoad* (measured)
  kLibrary = 6,         // cuLibraryLoad* (measured)
  kContextLimit = 7,    // cuCtxSetLimit: a (context, limit) pair's reservation (measured)
  kExternalMemory = 8,  // cuImportExternalMemory
  kRefusedLibrary = 9,  // a library whose lazy placement passed the cap (no bytes: a marker until unload)
};

struct PointerEntry {
  int32_t device = -1;  // slice device index the bytes are charged to
  uint64_t bytes = 0;   // bytes charged (already rounded)
  uint64_t owner = 0;   // the CUcontext that owns the allocation (0: none), for context teardown
};

class PointerTable {
 public:
  static constexpr int kDefaultLog2Slots = 20;
  static constexpr size_t kMaxProbe = 256;

  // 2^log2_slots slots of 32 bytes (32 MiB of address space at the default).
  explicit PointerTable(int log2_slots = kDefaultLog2Slots);
  ~PointerTable();
  PointerTable(const PointerTable&) = delete;
  PointerTable& operator=(const PointerTable&) = delete;

  size_t capacity() const { return storage_ == nullptr ? 0 : mask_ + 1; }

  bool Insert(PointerKind kind, uint64_t value, const PointerEntry& entry);
  bool Find(PointerKind kind, uint64_t value, PointerEntry* entry) const;
  // Removes the key; true (and the entry) only for the one caller that removed it.
  bool Erase(PointerKind kind, uint64_t value, PointerEntry* entry);

  // Erases every entry whose owner is `owner` and calls visit(kind, value, entry) for each.
  // Walks the whole table: for context teardown only, never on an allocation path.
  template <typename Visit>
  void EraseOwnedBy(uint64_t owner, Visit&& visit);

 private:
  // Key word states; a live key is stored as value + kFirstKey.
  static constexpr uint64_t kEmpty = 0;
  static constexpr uint64_t kTombstone = 1;
  static constexpr uint64_t kBusy = 2;
  static constexpr uint64_t kFirstKey = 3;

  struct Slot;
  Slot* SlotAt(size_t index) const;
  // Claims a slot whose key word is `stored` (busy), checks its kind; on success fills *entry and
  // leaves a tombstone.
  bool TryEraseSlot(Slot* slot, uint64_t stored, PointerKind kind, PointerEntry* entry);
  // The value in slot `index` if it holds a live key of any kind (for EraseOwnedBy).
  bool LiveSlot(size_t index, uint64_t owner, uint64_t* stored, PointerKind* kind) const;

  void* storage_ = nullptr;
  size_t bytes_ = 0;
  size_t mask_ = 0;
};

template <typename Visit>
void PointerTable::EraseOwnedBy(uint64_t owner, Visit&& visit) {
  if (storage_ == nullptr || owner == 0) return;
  for (size_t i = 0; i <= mask_; ++i) {
    uint64_t stored = 0;
    PointerKind kind{};
    if (!LiveSlot(i, owner, &stored, &kind)) continue;
    PointerEntry entry;
    if (TryEraseSlot(SlotAt(i), stored, kind, &entry)) visit(kind, stored - kFirstKey, entry);
  }
}

}  // namespace fgpu::hook
