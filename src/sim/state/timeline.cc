// SharedDevices' kernel timeline and utilization.
//
// Each device has one timeline: EnqueueKernel reserves [start, end) after everything
// already reserved, so kernels of all processes serialize. A reserved interval is queued
// (PendingInterval) and accounted into 10 ms utilization buckets lazily, only up to
// "now", by whoever next touches the device. Queries therefore never see future busy
// time, and the bucket holding "now" is exact up to now. The one approximation is the
// bucket where a query window starts, which is prorated; for a 500 ms window that is at
// most 2.5 ms of 500 (0.5 percentage point), plus 0.5 from rounding to an integer.
#include <algorithm>
#include <cstring>
#include <vector>

#include "sim/state/shared_devices_impl.h"

namespace fgpu::sim {

using layout::DeviceState;
using layout::kBucketCount;
using layout::kBucketNs;
using layout::kPendingCapacity;
using layout::PendingInterval;
using layout::UtilizationBucket;

namespace {

// Ring budget (1280 buckets): queries look back at most 1000 buckets (10 s, the longest
// utilization period a config may set); Settle accounts one more as margin; the rest
// (278 buckets) is room for the full-queue fallback, which accounts time ahead of now.
// Bucket epoch e shares its ring entry with e - 1280, so this keeps every write away from
// every bucket a query can read.
constexpr uint64_t kMaxWindowBuckets = 1000;
constexpr uint64_t kMaxWindowNs = kMaxWindowBuckets * kBucketNs;
constexpr uint64_t kSettleHorizonNs = kMaxWindowNs + kBucketNs;
constexpr uint64_t kMaxAheadNs = (kBucketCount - kMaxWindowBuckets - 2) * kBucketNs;
static_assert(kMaxWindowBuckets + 2 < kBucketCount);

uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

uint32_t RoundedPercent(uint64_t busy_ns, uint64_t window_ns) {
  if (window_ns == 0) return 0;
  // busy and window are at most 10 s (< 2^34 ns): the products cannot overflow.
  const uint64_t percent = (busy_ns * 100 + window_ns / 2) / window_ns;
  return static_cast<uint32_t>(std::min<uint64_t>(percent, 100));
}

// The busy time a bucket holds, and the part of it that falls inside [window_start, now):
// the bucket covers [epoch*B, min((epoch+1)*B, now)); a window that starts inside it gets
// a prorated share.
uint64_t ShareInWindow(uint64_t value, uint64_t epoch, uint64_t window_start, uint64_t now) {
  const uint64_t covered_start = epoch * kBucketNs;
  const uint64_t covered_end = std::min((epoch + 1) * kBucketNs, now);
  if (covered_end <= covered_start) return 0;
  const uint64_t covered = covered_end - covered_start;
  value = std::min(value, covered);  // only the full-queue fallback can overfill a bucket
  if (window_start <= covered_start) return value;
  if (window_start >= covered_end) return 0;
  return value * (covered_end - window_start) / covered;
}

}  // namespace

void SharedDevices::Impl::Account(int device, uint64_t start, uint64_t end, uint32_t slot, uint32_t generation) {
  DeviceState& dev = mapping.device(device);
  // The owner's time counts to the owner only while the slot still holds that owner; a
  // dead process's queued kernels still made the device busy.
  layout::ProcessSlot* owner = nullptr;
  if (slot < static_cast<uint32_t>(layout::kSlotCount)) {
    layout::ProcessSlot& candidate = mapping.slot(static_cast<int>(slot));
    if (candidate.state == layout::kSlotLive && candidate.generation == generation) owner = &candidate;
  }
  while (start < end) {
    const uint64_t epoch = start / kBucketNs;
    const uint64_t piece_end = std::min(end, (epoch + 1) * kBucketNs);
    UtilizationBucket& bucket = dev.buckets[epoch % kBucketCount];
    if (bucket.tag > epoch + 1) {  // holds a later epoch: never overwrite newer history
      start = piece_end;
      continue;
    }
    if (bucket.tag != epoch + 1) {
      bucket.busy_ns = 0;
      std::memset(bucket.slot_busy_ns, 0, sizeof(bucket.slot_busy_ns));
      OrderStores();  // a torn reset leaves the old tag: the bucket still reads as stale
      bucket.tag = epoch + 1;
    }
    const uint64_t piece = piece_end - start;
    bucket.busy_ns += piece;
    if (owner != nullptr) {
      const uint64_t slot_busy = bucket.slot_busy_ns[slot] + piece;
      bucket.slot_busy_ns[slot] = static_cast<uint32_t>(std::min<uint64_t>(slot_busy, kBucketNs));
      owner->last_busy_ns[device] = std::max(owner->last_busy_ns[device], piece_end);
    }
    start = piece_end;
  }
}

void SharedDevices::Impl::Settle(int device, uint64_t now_ns) {
  DeviceState& dev = mapping.device(device);
  uint64_t head = dev.pending_head;
  const uint64_t tail = dev.pending_tail;
  if (tail - head > kPendingCapacity) {  // corrupt counters: drop the queue rather than walk garbage
    dev.pending_head = tail;
    return;
  }
  // Older time would land in ring entries that newer epochs own.
  const uint64_t horizon = now_ns > kSettleHorizonNs ? now_ns - kSettleHorizonNs : 0;
  while (head != tail) {
    PendingInterval& interval = dev.pending[head % kPendingCapacity];
    const uint64_t start = std::max(interval.start_ns, horizon);
    if (interval.start_ns >= now_ns) break;
    const uint64_t end = std::min(interval.end_ns, now_ns);
    // Consume first, then account: a crash in between loses at most this piece instead
    // of counting it twice.
    if (interval.end_ns <= now_ns) {
      dev.pending_head = ++head;
    } else {
      interval.start_ns = now_ns;
    }
    OrderStores();
    if (start < end) Account(device, start, end, interval.slot, interval.generation);
    if (interval.end_ns > now_ns) break;
  }
}

KernelSlot SharedDevices::EnqueueKernel(int device, uint64_t not_before_ns, uint64_t duration_ns) {
  const uint64_t now = NowNs();
  KernelSlot result;
  result.start_ns = std::max(now, not_before_ns);
  result.end_ns = SaturatingAdd(result.start_ns, duration_ns);
  if (!impl_->ValidDevice(device)) return result;
  Impl::Guard guard(*impl_);
  if (!guard.held()) return result;  // unrecorded, but the caller's kernel still "runs"
  const bool has_slot = impl_->EnsureOwnSlot();
  impl_->Settle(device, now);

  DeviceState& dev = impl_->mapping.device(device);
  result.start_ns = std::max(result.start_ns, dev.busy_until_ns);
  result.end_ns = SaturatingAdd(result.start_ns, duration_ns);
  if (duration_ns == 0) return result;
  dev.busy_until_ns = result.end_ns;  // the reservation itself: one store

  const uint32_t slot = has_slot ? static_cast<uint32_t>(impl_->own_slot) : layout::kNoSlot;
  const uint32_t generation = has_slot ? impl_->own_generation : 0;
  if (dev.pending_tail != dev.pending_head) {
    // Back-to-back kernels of one process extend one interval (one store) instead of
    // filling the queue.
    PendingInterval& last = dev.pending[(dev.pending_tail - 1) % kPendingCapacity];
    if (last.slot == slot && last.generation == generation && last.end_ns == result.start_ns) {
      last.end_ns = result.end_ns;
      return result;
    }
  }
  if (dev.pending_tail - dev.pending_head >= kPendingCapacity) {
    // Degraded: the oldest reservation (necessarily in the future, or Settle would have
    // consumed it) is accounted now, early. Utilization may read high until it is due.
    PendingInterval& oldest = dev.pending[dev.pending_head % kPendingCapacity];
    const uint64_t start = oldest.start_ns;
    const uint64_t end = std::min(oldest.end_ns, SaturatingAdd(now, kMaxAheadNs));
    const uint32_t oldest_slot = oldest.slot;
    const uint32_t oldest_generation = oldest.generation;
    dev.pending_head += 1;
    OrderStores();
    if (start < end) impl_->Account(device, start, end, oldest_slot, oldest_generation);
  }
  PendingInterval& entry = dev.pending[dev.pending_tail % kPendingCapacity];
  entry.start_ns = result.start_ns;
  entry.end_ns = result.end_ns;
  entry.slot = slot;
  entry.generation = generation;
  OrderStores();  // publish the entry only once it is whole
  dev.pending_tail += 1;
  return result;
}

uint32_t SharedDevices::UtilizationPercent(int device, uint64_t period_ns) {
  if (!impl_->ValidDevice(device) || period_ns == 0) return 0;
  const uint64_t now = NowNs();
  Impl::Guard guard(*impl_);
  if (!guard.held()) return 0;
  impl_->Settle(device, now);
  const uint64_t window_start = now - std::min({period_ns, kMaxWindowNs, now});
  const DeviceState& dev = impl_->mapping.device(device);
  uint64_t busy = 0;
  for (uint64_t epoch = window_start / kBucketNs; epoch <= now / kBucketNs; ++epoch) {
    const UtilizationBucket& bucket = dev.buckets[epoch % kBucketCount];
    if (bucket.tag == epoch + 1) busy += ShareInWindow(bucket.busy_ns, epoch, window_start, now);
  }
  return RoundedPercent(busy, now - window_start);
}

std::vector<ProcessUtilization> SharedDevices::ProcessUtilizations(int device, uint64_t since_ns,
                                                                   uint64_t period_ns) try {
  std::vector<ProcessUtilization> result;
  if (!impl_->ValidDevice(device)) return result;
  const uint64_t now = NowNs();
  Impl::Guard guard(*impl_);
  if (!guard.held()) return result;
  impl_->Settle(device, now);
  const uint64_t window_start = std::max(since_ns, now - std::min({period_ns, kMaxWindowNs, now}));
  if (window_start >= now) return result;

  std::vector<int> live;
  for (int i = 0; i < layout::kSlotCount; ++i) {
    if (impl_->mapping.slot(i).state == layout::kSlotLive) live.push_back(i);
  }
  std::vector<uint64_t> busy(layout::kSlotCount, 0);
  const DeviceState& dev = impl_->mapping.device(device);
  for (uint64_t epoch = window_start / kBucketNs; epoch <= now / kBucketNs; ++epoch) {
    const UtilizationBucket& bucket = dev.buckets[epoch % kBucketCount];
    if (bucket.tag != epoch + 1) continue;
    for (int i : live) {
      if (epoch < impl_->mapping.slot(i).claimed_epoch) continue;  // an earlier owner's time
      busy[i] += ShareInWindow(bucket.slot_busy_ns[i], epoch, window_start, now);
    }
  }
  for (int i : live) {
    if (busy[i] == 0) continue;
    const layout::ProcessSlot& slot = impl_->mapping.slot(i);
    result.push_back({slot.pid, RoundedPercent(busy[i], now - window_start), std::min(slot.last_busy_ns[device], now)});
  }
  return result;
} catch (...) {  // std::bad_alloc
  return {};
}

}  // namespace fgpu::sim
