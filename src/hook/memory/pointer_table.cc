#include "hook/memory/pointer_table.h"

#include <sys/mman.h>

#include <atomic>

namespace fgpu::hook {

// Plain words in a zero-filled mapping, accessed only through std::atomic_ref: the mapping needs
// no construction, so untouched pages stay untouched. The key word publishes the rest: a writer
// fills kind/device/bytes/owner while the key is kBusy and then stores the key with release; a
// reader acquires the key before reading them.
struct PointerTable::Slot {
  uint64_t key;
  uint64_t bytes;
  uint64_t owner;
  uint32_t kind;
  int32_t device;
};
static_assert(sizeof(uint64_t) * 3 + sizeof(uint32_t) * 2 == 32, "a slot is 32 bytes");

namespace {

template <typename T>
std::atomic_ref<T> Atomic(T& word) {
  return std::atomic_ref<T>(word);
}

// Addresses are aligned (often to 2 MiB) and handles small: mix every bit into the home slot
// (murmur3's finaliser), with the kind so equal values of two kinds start apart.
uint64_t Mix(uint64_t value, uint32_t kind) {
  uint64_t x = value ^ (uint64_t{kind} * 0x9E3779B97F4A7C15ull);
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  x ^= x >> 33;
  return x;
}

}  // namespace

PointerTable::PointerTable(int log2_slots) {
  const size_t slots = size_t{1} << log2_slots;
  bytes_ = slots * sizeof(Slot);
  void* mapping =
      mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping == MAP_FAILED) return;
  storage_ = mapping;
  mask_ = slots - 1;
}

PointerTable::~PointerTable() {
  if (storage_ != nullptr) munmap(storage_, bytes_);
}

PointerTable::Slot* PointerTable::SlotAt(size_t index) const {
  return static_cast<Slot*>(storage_) + (index & mask_);
}

bool PointerTable::Insert(PointerKind kind, uint64_t value, const PointerEntry& entry) {
  if (storage_ == nullptr || value > UINT64_MAX - kFirstKey) return false;
  const uint64_t stored = value + kFirstKey;
  const auto kind_word = static_cast<uint32_t>(kind);
  const size_t home = Mix(value, kind_word);
  for (size_t i = 0; i < kMaxProbe; ++i) {
    Slot* slot = SlotAt(home + i);
    uint64_t key = Atomic(slot->key).load(std::memory_order_acquire);
    while (key == kEmpty || key == kTombstone) {
      if (Atomic(slot->key).compare_exchange_weak(key, kBusy, std::memory_order_acquire)) {
        Atomic(slot->kind).store(kind_word, std::memory_order_relaxed);
        Atomic(slot->device).store(entry.device, std::memory_order_relaxed);
        Atomic(slot->bytes).store(entry.bytes, std::memory_order_relaxed);
        Atomic(slot->owner).store(entry.owner, std::memory_order_relaxed);
        Atomic(slot->key).store(stored, std::memory_order_release);
        return true;
      }
      // Lost the slot (or a spurious failure): `key` now holds what is there; look again.
    }
  }
  return false;
}

bool PointerTable::Find(PointerKind kind, uint64_t value, PointerEntry* entry) const {
  if (storage_ == nullptr || value > UINT64_MAX - kFirstKey) return false;
  const uint64_t stored = value + kFirstKey;
  const auto kind_word = static_cast<uint32_t>(kind);
  const size_t home = Mix(value, kind_word);
  for (size_t i = 0; i < kMaxProbe; ++i) {
    Slot* slot = SlotAt(home + i);
    const uint64_t key = Atomic(slot->key).load(std::memory_order_acquire);
    if (key == kEmpty) return false;
    if (key != stored || Atomic(slot->kind).load(std::memory_order_relaxed) != kind_word) continue;
    // Acquire loads keep the re-check of the key after them: if it still holds the same key,
    // the fields were not recycled under us while we read them.
    PointerEntry found;
    found.device = Atomic(slot->device).load(std::memory_order_acquire);
    found.bytes = Atomic(slot->bytes).load(std::memory_order_acquire);
    found.owner = Atomic(slot->owner).load(std::memory_order_acquire);
    if (Atomic(slot->key).load(std::memory_order_relaxed) != stored) continue;
    *entry = found;
    return true;
  }
  return false;
}

bool PointerTable::TryEraseSlot(Slot* slot, uint64_t stored, PointerKind kind, PointerEntry* entry) {
  uint64_t expected = stored;
  if (!Atomic(slot->key).compare_exchange_strong(expected, kBusy, std::memory_order_acq_rel)) return false;
  // Ours now: nobody writes the fields while the key is busy.
  if (Atomic(slot->kind).load(std::memory_order_relaxed) != static_cast<uint32_t>(kind)) {
    Atomic(slot->key).store(stored, std::memory_order_release);  // another kind's key: put it back
    return false;
  }
  entry->device = Atomic(slot->device).load(std::memory_order_relaxed);
  entry->bytes = Atomic(slot->bytes).load(std::memory_order_relaxed);
  entry->owner = Atomic(slot->owner).load(std::memory_order_relaxed);
  Atomic(slot->key).store(kTombstone, std::memory_order_release);
  return true;
}

bool PointerTable::Erase(PointerKind kind, uint64_t value, PointerEntry* entry) {
  if (storage_ == nullptr || value > UINT64_MAX - kFirstKey) return false;
  const uint64_t stored = value + kFirstKey;
  const auto kind_word = static_cast<uint32_t>(kind);
  const size_t home = Mix(value, kind_word);
  for (size_t i = 0; i < kMaxProbe; ++i) {
    Slot* slot = SlotAt(home + i);
    const uint64_t key = Atomic(slot->key).load(std::memory_order_acquire);
    if (key == kEmpty) return false;
    if (key != stored || Atomic(slot->kind).load(std::memory_order_relaxed) != kind_word) continue;
    if (TryEraseSlot(slot, stored, kind, entry)) return true;
    // Another thread claimed it first (a racing free), or it is another kind after all: the
    // key is live at most once, so only a later slot could still hold it as this kind.
  }
  return false;
}

bool PointerTable::LiveSlot(size_t index, uint64_t owner, uint64_t* stored, PointerKind* kind) const {
  Slot* slot = SlotAt(index);
  const uint64_t key = Atomic(slot->key).load(std::memory_order_acquire);
  if (key < kFirstKey || Atomic(slot->owner).load(std::memory_order_relaxed) != owner) return false;
  *stored = key;
  *kind = static_cast<PointerKind>(Atomic(slot->kind).load(std::memory_order_relaxed));
  return true;
}

}  // namespace fgpu::hook
