#include "sim/cuda/memory_registry.h"

#include <sys/mman.h>
#include <unistd.h>

#include <iterator>
#include <mutex>

namespace fgpu::sim::cuda {

MemoryRegistry& MemoryRegistry::Get() {
  // Never destroyed: allocations may be freed from other libraries' destructors.
  static auto* registry = new MemoryRegistry;
  return *registry;
}

std::map<uint64_t, Allocation>::const_iterator MemoryRegistry::Containing(uint64_t addr) const {
  auto it = entries_.upper_bound(addr);
  if (it == entries_.begin()) return entries_.end();
  --it;
  return addr < it->second.end() ? it : entries_.end();
}

bool MemoryRegistry::Insert(const Allocation& allocation) {
  if (allocation.size == 0 || allocation.base > UINT64_MAX - allocation.size) return false;
  std::unique_lock lock(mu_);
  auto next = entries_.lower_bound(allocation.base);
  if (next != entries_.end() && next->first < allocation.end()) return false;
  if (next != entries_.begin() && std::prev(next)->second.end() > allocation.base) return false;
  entries_.emplace_hint(next, allocation.base, allocation);
  return true;
}

std::optional<Allocation> MemoryRegistry::Find(uint64_t addr) const {
  std::shared_lock lock(mu_);
  auto it = Containing(addr);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

std::optional<Allocation> MemoryRegistry::FindBase(uint64_t base) const {
  std::shared_lock lock(mu_);
  auto it = entries_.find(base);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

std::optional<Allocation> MemoryRegistry::Erase(uint64_t base,
                                                const std::function<bool(const Allocation&)>& accept) {
  std::unique_lock lock(mu_);
  auto it = entries_.find(base);
  if (it == entries_.end() || (accept && !accept(it->second))) return std::nullopt;
  Allocation removed = it->second;
  entries_.erase(it);
  return removed;
}

std::vector<Allocation> MemoryRegistry::EraseIf(const std::function<bool(const Allocation&)>& pred) {
  std::vector<Allocation> removed;
  std::unique_lock lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (pred(it->second)) {
      removed.push_back(it->second);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  return removed;
}

std::vector<Allocation> MemoryRegistry::Intersecting(uint64_t addr, uint64_t n) const {
  std::vector<Allocation> found;
  if (n == 0) return found;
  const uint64_t end = addr > UINT64_MAX - n ? UINT64_MAX : addr + n;
  std::shared_lock lock(mu_);
  auto it = Containing(addr);
  if (it == entries_.end()) it = entries_.lower_bound(addr);
  for (; it != entries_.end() && it->first < end; ++it) found.push_back(it->second);
  return found;
}

bool MemoryRegistry::Overlaps(uint64_t addr, uint64_t n) const {
  if (n == 0) return false;
  const uint64_t end = addr > UINT64_MAX - n ? UINT64_MAX : addr + n;
  std::shared_lock lock(mu_);
  if (Containing(addr) != entries_.end()) return true;
  auto next = entries_.lower_bound(addr);
  return next != entries_.end() && next->first < end;
}

namespace {

bool Grants(const Allocation& a, MemoryRegistry::Access access, int accessor) {
  if (a.kind != AllocKind::kVmmMapping) {
    const bool read_only =
        a.kind == AllocKind::kHostRegistered && (a.flags & CU_MEMHOSTREGISTER_READ_ONLY) != 0;
    return access == MemoryRegistry::Access::kRead || !read_only;
  }
  const uint64_t who = accessor < 0 ? ~uint64_t{0} : AccessorBit(accessor);
  const uint64_t mask = access == MemoryRegistry::Access::kRead ? a.read_mask : a.write_mask;
  return (mask & who) != 0;
}

}  // namespace

bool MemoryRegistry::CanAccess(uint64_t addr, uint64_t n, Access access, int accessor) const {
  std::shared_lock lock(mu_);
  return CanAccessLocked(addr, n, access, accessor);
}

bool MemoryRegistry::CanAccessLocked(uint64_t addr, uint64_t n, Access access, int accessor) const {
  if (n == 0 || addr > UINT64_MAX - n) return false;
  const uint64_t end = addr + n;
  auto it = Containing(addr);
  if (it == entries_.end()) return false;
  if (it->second.kind != AllocKind::kVmmMapping)
    return end <= it->second.end() && Grants(it->second, access, accessor);
  // Back-to-back mappings of a reservation form one usable range (PyTorch's
  // expandable segments map chunk after chunk and copy across them).
  while (true) {
    const Allocation& piece = it->second;
    if (piece.kind != AllocKind::kVmmMapping || !Grants(piece, access, accessor)) return false;
    if (end <= piece.end()) return true;
    auto next = std::next(it);
    if (next == entries_.end() || next->first != piece.end()) return false;
    it = next;
  }
}

void MemoryRegistry::SplitAt(uint64_t addr) {
  std::unique_lock lock(mu_);
  auto it = Containing(addr);
  if (it == entries_.end() || it->first == addr || it->second.kind != AllocKind::kVmmMapping) return;
  Allocation tail = it->second;
  const uint64_t head_size = addr - tail.base;
  tail.base = addr;
  tail.size -= head_size;
  tail.physical_offset += head_size;
  entries_.find(it->first)->second.size = head_size;
  entries_.emplace(addr, tail);
}

bool MemoryRegistry::SetAccessMasks(uint64_t base, uint64_t read_mask, uint64_t write_mask) {
  std::unique_lock lock(mu_);
  auto it = entries_.find(base);
  if (it == entries_.end() || it->second.kind != AllocKind::kVmmMapping) return false;
  it->second.read_mask = read_mask;
  it->second.write_mask = write_mask;
  return true;
}

void MemoryRegistry::AddReservation(const Reservation& reservation) {
  std::unique_lock lock(mu_);
  reservations_[reservation.base] = reservation;
}

bool MemoryRegistry::RemoveReservation(uint64_t base, uint64_t size) {
  std::unique_lock lock(mu_);
  auto it = reservations_.find(base);
  if (it == reservations_.end() || it->second.size != size) return false;
  reservations_.erase(it);
  return true;
}

std::optional<Reservation> MemoryRegistry::FindReservation(uint64_t addr) const {
  std::shared_lock lock(mu_);
  auto it = reservations_.upper_bound(addr);
  if (it == reservations_.begin()) return std::nullopt;
  --it;
  if (addr - it->second.base >= it->second.size) return std::nullopt;
  return it->second;
}

bool MemoryRegistry::ReservationOverlapsLocked(uint64_t addr, uint64_t n) const {
  if (n == 0) return false;
  const uint64_t end = addr > UINT64_MAX - n ? UINT64_MAX : addr + n;
  auto it = reservations_.lower_bound(end);  // first reservation starting at or after the end
  if (it == reservations_.begin()) return false;
  --it;
  return it->second.base + it->second.size > addr;
}

MemoryRegistry::HostRange MemoryRegistry::ClassifyHostRange(uint64_t addr, uint64_t n, Access access) const {
  const uint64_t end = addr > UINT64_MAX - n ? UINT64_MAX : addr + n;
  std::shared_lock lock(mu_);
  if (Containing(addr) != entries_.end()) {
    return CanAccessLocked(addr, n, access, /*accessor=*/-1) ? HostRange::kAccessible
                                                             : HostRange::kInaccessible;
  }
  auto next = entries_.lower_bound(addr);
  if (next != entries_.end() && next->first < end) return HostRange::kInaccessible;
  return ReservationOverlapsLocked(addr, n) ? HostRange::kInaccessible : HostRange::kUntracked;
}

uint64_t MemoryRegistry::NextBufferId() { return next_buffer_id_.fetch_add(1, std::memory_order_relaxed); }

// --- primitives ----------------------------------------------------------------------

uint64_t PageSize() {
  static const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return page;
}

uint64_t MapBacking(uint64_t bytes, bool low_4g) {
  const uint64_t length = RoundUp(bytes, PageSize());
  if (length == 0 || length == UINT64_MAX) return 0;
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
#if defined(MAP_32BIT)
  if (low_4g) flags |= MAP_32BIT;  // the first 2 GiB on x86-64
#endif
  void* p = mmap(nullptr, length, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED) return 0;
  const auto base = reinterpret_cast<uint64_t>(p);
  if (low_4g && base + length > (uint64_t{1} << 32)) {
    munmap(p, length);
    return 0;
  }
  return base;
}

void UnmapBacking(uint64_t base, uint64_t bytes) {
  if (base == 0 || bytes == 0) return;
  munmap(reinterpret_cast<void*>(base), RoundUp(bytes, PageSize()));
}

bool HostRangeUsable(const void* addr, uint64_t n, MemoryRegistry::Access access) {
  if (n == 0) return true;
  const auto begin = reinterpret_cast<uint64_t>(addr);
  if (addr == nullptr || begin > UINT64_MAX - n) return false;
  switch (MemoryRegistry::Get().ClassifyHostRange(begin, n, access)) {
    case MemoryRegistry::HostRange::kAccessible:
      return true;
    case MemoryRegistry::HostRange::kInaccessible:
      return false;
    case MemoryRegistry::HostRange::kUntracked:
      break;
  }
  // msync fails with ENOMEM when part of the range is not mapped at all, and costs
  // no I/O with MS_ASYNC: a cheap "is this host memory" test that cannot fault.
  const uint64_t page_begin = begin & ~(PageSize() - 1);
  return msync(reinterpret_cast<void*>(page_begin), begin + n - page_begin, MS_ASYNC) == 0;
}

}  // namespace fgpu::sim::cuda
