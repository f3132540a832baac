#include "hook/memory/pool_accounting.h"

#include <new>

#include "hook/interpose/real_driver.h"
#include "hook/memory/memory_hook.h"
#include "slice/slice.h"

namespace fgpu::hook {

bool LedgerReserve(slice::Ledger* ledger, int slice_device, uint64_t bytes) {
  if (slice_device == kNotInSlice || bytes == UINT64_MAX) return false;  // cap 0: fail closed
  return bytes == 0 || ledger->Reserve(slice_device, bytes);
}

void LedgerRelease(slice::Ledger* ledger, int slice_device, uint64_t bytes) {
  if (slice_device != kNotInSlice && bytes != 0) ledger->Release(slice_device, bytes);
}

PoolCalls ResolvePoolCalls() {
  PoolCalls calls;
  calls.pool_get_attribute =
      reinterpret_cast<decltype(calls.pool_get_attribute)>(RealCudaByName("cuMemPoolGetAttribute"));
  calls.device_get_mem_pool =
      reinterpret_cast<decltype(calls.device_get_mem_pool)>(RealCudaByName("cuDeviceGetMemPool"));
  // Hooked by us: the real function behind the wrapper.
  calls.pool_trim_to = RealCuda<decltype(calls.pool_trim_to)>(CudaSymbol::k_cuMemPoolTrimTo);
  return calls;
}

PoolSlot* PoolAccounting::Find(CUmemoryPool pool) const {
  if (pool == nullptr) return nullptr;
  const int count = slot_count_.load(std::memory_order_acquire);
  for (int i = 0; i < count; ++i) {
    if (slots_[i].handle.load(std::memory_order_acquire) == pool) return const_cast<PoolSlot*>(&slots_[i]);
  }
  return nullptr;
}

PoolSlot* PoolAccounting::Register(CUmemoryPool pool, CUdevice device, bool host, bool* full) {
  if (pool == nullptr) return nullptr;
  std::lock_guard lock(registry_mu_);
  if (PoolSlot* known = Find(pool)) return known;
  CudaDeviceFacts facts;
  if (!host && !devices_->Cuda(device, &facts)) return nullptr;  // invalid device: the driver says so
  const int count = slot_count_.load();
  PoolSlot* slot = nullptr;
  for (int i = 0; i < count && slot == nullptr; ++i) {
    if (slots_[i].handle.load() == nullptr) slot = &slots_[i];
  }
  if (slot == nullptr) {
    if (count == kMaxPools) {
      if (full != nullptr) *full = true;
      return nullptr;
    }
    slot = &slots_[count];
  }
  slot->device = device;
  slot->host = host;
  slot->slice_device = host ? kNotInSlice : facts.slice_device;
  slot->granularity = facts.granularity;
  slot->destroyed.store(false);
  slot->charged.store(0);
  slot->live.store(0);
  slot->generation.fetch_add(1);
  slot->handle.store(pool, std::memory_order_release);
  if (slot == &slots_[count]) slot_count_.store(count + 1, std::memory_order_release);
  return slot;
}

void PoolAccounting::Created(CUmemoryPool pool, const CUmemPoolProps& props) {
  const bool on_device = props.location.type == CU_MEM_LOCATION_TYPE_DEVICE;
  (void)Register(pool, on_device ? props.location.id : 0, !on_device);
}

void PoolAccounting::CurrentPoolSet(CUdevice device, CUmemoryPool pool) {
  PoolSlot* slot = Register(pool, device, /*host=*/false);
  if (device >= 0 && device < kCachedDevices) current_[device].store(slot, std::memory_order_release);
}

CUresult PoolAccounting::RefusedUntracked() {
  ledger_->CountFailClosedRefusal();
  return CUDA_ERROR_OUT_OF_MEMORY;
}

PoolSlot* PoolAccounting::ForAllocation(CUdevice device, CUmemoryPool pool, bool* full) {
  if (pool != nullptr) {
    PoolSlot* slot = Find(pool);
    // Not created through us (e.g. before the hook could see it): adopted on the stream's device.
    return slot != nullptr ? slot : Register(pool, device, /*host=*/false, full);
  }
  const bool cached = device >= 0 && device < kCachedDevices;
  if (cached) {
    if (PoolSlot* slot = current_[device].load(std::memory_order_acquire)) return slot;
  }
  CUmemoryPool current = nullptr;
  if (calls_->device_get_mem_pool == nullptr || calls_->device_get_mem_pool(&current, device) != CUDA_SUCCESS) {
    return nullptr;
  }
  PoolSlot* slot = Register(current, device, /*host=*/false, full);
  if (cached && slot != nullptr) current_[device].store(slot, std::memory_order_release);
  return slot;
}

bool PoolAccounting::QueryReserve(const PoolSlot& slot, uint64_t* reserve) const {
  if (calls_->pool_get_attribute == nullptr) return false;
  cuuint64_t value = 0;
  const CUresult rc =
      calls_->pool_get_attribute(slot.handle.load(), CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &value);
  if (rc != CUDA_SUCCESS) return false;
  *reserve = value;
  return true;
}

bool PoolAccounting::SettleLocked(PoolSlot* slot, uint64_t held, uint64_t reserve, uint64_t floor) {
  const uint64_t target = reserve > floor ? reserve : floor;
  if (target > held) {
    if (!LedgerReserve(ledger_, slot->slice_device, target - held)) return false;
  } else {
    LedgerRelease(ledger_, slot->slice_device, held - target);
  }
  slot->charged.store(target);
  return true;
}

void PoolAccounting::ReconcileLocked(PoolSlot* slot) {
  if (slot->handle.load() == nullptr || slot->host) return;
  if (slot->destroyed.load()) {
    if (slot->live.load() == 0) FinalizeLocked(slot);
    return;  // its handle is invalid: nothing to ask
  }
  // Quiescence: no allocation begun before the query is unfinished, none began during it. Then
  // the reserve read includes every allocation's growth and may be lowered to.
  const uint64_t started_before = slot->started.load();
  const uint64_t finished_before = slot->finished.load();
  uint64_t reserve = 0;
  if (!QueryReserve(*slot, &reserve)) return;
  const bool quiescent = started_before == finished_before && slot->started.load() == started_before;
  const uint64_t held = slot->charged.load();
  // Growth refused: stays undercharged until a reconcile can charge it (documented).
  (void)SettleLocked(slot, held, reserve, quiescent ? 0 : held);
}

void PoolAccounting::ReconcileAll() {
  const int count = slot_count_.load(std::memory_order_acquire);
  for (int i = 0; i < count; ++i) {
    PoolSlot* slot = &slots_[i];
    // A pool nothing was ever charged for nor allocated from cannot have grown through us.
    if (slot->handle.load(std::memory_order_acquire) == nullptr || slot->host ||
        (slot->charged.load() == 0 && slot->live.load() == 0 && !slot->destroyed.load())) {
      continue;
    }
    std::lock_guard lock(slot->mu);
    ReconcileLocked(slot);
  }
}

void PoolAccounting::Reconcile(CUmemoryPool pool) {
  PoolSlot* slot = Find(pool);
  if (slot == nullptr) return;
  std::lock_guard lock(slot->mu);
  ReconcileLocked(slot);
}

bool PoolAccounting::DriverSaysEmpty(CUmemoryPool pool) const {
  if (calls_->pool_get_attribute == nullptr) return false;
  cuuint64_t used = 0;
  return calls_->pool_get_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) == CUDA_SUCCESS && used == 0;
}

void PoolAccounting::Destroyed(CUmemoryPool pool, bool driver_says_empty) {
  PoolSlot* slot = Find(pool);
  if (slot == nullptr) return;
  for (auto& current : current_) {
    PoolSlot* expected = slot;
    current.compare_exchange_strong(expected, nullptr);  // the device falls back to its default pool
  }
  std::lock_guard lock(slot->mu);
  slot->destroyed.store(true);
  if (driver_says_empty || slot->live.load() == 0) FinalizeLocked(slot);
}

void PoolAccounting::FinalizeLocked(PoolSlot* slot) {
  LedgerRelease(ledger_, slot->slice_device, slot->charged.exchange(0));
  slot->live.store(0);
  std::lock_guard lock(registry_mu_);
  slot->generation.fetch_add(1);  // entries still in the table no longer count for anything
  slot->handle.store(nullptr, std::memory_order_release);
}

void PoolAccounting::Record(PoolSlot* slot, uint64_t ptr, uint64_t bytes) {
  PointerEntry stale;
  // An address the driver hands out again was freed in a way the hook did not see (cuMemFree*):
  // its old pool's live bytes go now.
  if (table_.Erase(PointerKind::kDevicePointer, ptr, &stale)) {
    PoolSlot* old = &slots_[stale.device];
    if (old->generation.load() == stale.owner) DropLive(old, stale.bytes);
  }
  PointerEntry entry;
  entry.device = static_cast<int32_t>(slot - slots_);
  entry.bytes = bytes;
  entry.owner = slot->generation.load();
  // A full table leaves `live` too high: more slow paths, never an undercharge.
  (void)table_.Insert(PointerKind::kDevicePointer, ptr, entry);
}

CUresult PoolAccounting::RefusedOverCap() {
  ledger_->CountOomRefusal();
  return CUDA_ERROR_OUT_OF_MEMORY;
}

void PoolAccounting::DropLive(PoolSlot* slot, uint64_t bytes) {
  uint64_t live = slot->live.load();
  while (!slot->live.compare_exchange_weak(live, live > bytes ? live - bytes : 0)) {
  }
}

uint64_t PoolAccounting::ChargedFor(CUmemoryPool pool) const {
  const PoolSlot* slot = Find(pool);
  return slot == nullptr ? 0 : slot->charged.load();
}

uint64_t PoolAccounting::LiveFor(CUmemoryPool pool) const {
  const PoolSlot* slot = Find(pool);
  return slot == nullptr ? 0 : slot->live.load();
}

PoolAccounting* EnforcingPoolAccounting() {
  MemoryHook* hook = EnforcingMemoryHook();
  if (hook == nullptr) return nullptr;
  // Static storage, never destroyed (as MemoryHook): wrappers may run during exit.
  alignas(PoolCalls) static unsigned char calls_storage[sizeof(PoolCalls)];
  alignas(PoolAccounting) static unsigned char storage[sizeof(PoolAccounting)];
  static auto* const pools = new (storage) PoolAccounting(
      &hook->accounting().ledger(), &hook->accounting().devices(), new (calls_storage) PoolCalls(ResolvePoolCalls()));
  return pools;
}

}  // namespace fgpu::hook
