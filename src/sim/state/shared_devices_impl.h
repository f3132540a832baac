// SharedDevices' private state and the helpers its two halves share: memory and slots
// (shared_devices.cc) and the kernel timeline (timeline.cc).
//
// Every member function marked "lock held" must be called with the segment mutex held
// through an Impl::Guard; the Impl's own fields (own_slot, ...) are guarded by it too.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "sim/state/segment_file.h"
#include "sim/state/shared_devices.h"

namespace fgpu::sim {

// A process can die at any instruction. Within a critical section the compiler may reorder
// plain stores to shared memory; this fence pins the order of the steps that make a
// half-done update harmless (it is a compiler barrier only: the next lock owner gets
// ordinary visibility from the mutex).
inline void OrderStores() { std::atomic_signal_fence(std::memory_order_seq_cst); }

struct SharedDevices::Impl {
  SimConfig config;  // identities completed
  std::string name;
  SegmentMapping mapping;
  int32_t pid = 0;          // the process that owns own_slot; a fork child re-identifies itself
  uint64_t start_time = 0;  // of pid; 0 if /proc was unreadable
  int own_slot = -1;
  uint32_t own_generation = 0;

  bool ValidDevice(int device) const { return device >= 0 && device < static_cast<int>(config.devices.size()); }

  // Lock held. Makes sure this process holds a live slot, (re)claiming one if it was lost
  // (forked child, slot cleared as corrupt). False when all slots are held by live processes.
  bool EnsureOwnSlot();
  // Lock held. Takes the slot already registered for (pid, start_time), else a free one,
  // reaping once if none is free.
  bool ClaimSlot();
  // Lock held. Sum of live slots' charges; a slot found corrupt is released on the way.
  uint64_t UsedBytes(int device);
  // Lock held. Releases dead and corrupt slots; returns how many.
  int Reap();
  // Lock held. Makes the segment consistent after a lock owner died mid-update.
  void RepairAfterOwnerDeath();
  // Lock held. Releases slot `index`: one store of the state word releases every charge.
  void ReleaseSlot(int index);
  // Lock held. True when a live-marked slot's fields are impossible (pid <= 0, a charge
  // larger than its device).
  bool SlotLooksCorrupt(int index) const;

  // Lock held (mig_state.cc). Clears MIG slots left half-written by a dead lock owner.
  void RepairMig();
  // Lock held (mig_state.cc). False when this process is bound to a GPU instance of `device`
  // and `bytes` more would exceed that instance's memory.
  bool FitsInBoundInstance(int device, uint64_t bytes);
  // Lock held (mig_state.cc). Live slots bound to `device` (gi_id / ci_id: only those bound to
  // that instance; kAnyInstance matches all).
  int BoundProcesses(int device, uint32_t gi_id, uint32_t ci_id) const;
  static constexpr uint32_t kAnyInstance = 0xffffffff;

  // Lock held. Accounts the queued kernel time of `device` that lies before `now_ns`.
  void Settle(int device, uint64_t now_ns);
  // Lock held. Adds [start, end) of the kernel owned by `slot` (at `generation`) to the
  // utilization buckets it spans.
  void Account(int device, uint64_t start, uint64_t end, uint32_t slot, uint32_t generation);

  // Holds the segment mutex for a scope. If the previous owner died holding it, marks it
  // consistent and repairs the segment before the caller proceeds.
  class Guard {
   public:
    explicit Guard(Impl& impl);
    ~Guard();
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    // False only if the mutex is unrecoverable (a process unlocked it without making it
    // consistent); callers then fail safe: no charge is granted, nothing reads as free.
    bool held() const { return held_; }

   private:
    pthread_mutex_t* mutex_;
    bool held_ = false;
  };
};

// Locks `mutex`, handling EOWNERDEAD; returns true if the previous owner died (the caller
// must repair) through `owner_died`. False if the mutex cannot be acquired.
bool LockRobust(pthread_mutex_t* mutex, bool* owner_died);

}  // namespace fgpu::sim
