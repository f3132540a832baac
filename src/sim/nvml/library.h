// The simulated NVML's process-wide state: the init reference count, the attached
// shared device state, and the table that device handles point into.
//
// Contract
// - Init()/Shutdown() are reference counted like the real NVML: every successful Init
//   needs one Shutdown; the last Shutdown detaches. A failed Init changes nothing,
//   prints one `fgpu-sim: ` line on stderr, and the next Init tries again (so a fixed
//   environment recovers without restarting the process).
// - Every device call opens a Session first. A Session holds its own reference to the
//   shared state, so a Shutdown racing with the call cannot unmap it mid-call.
// - Handles (nvmlDevice_t) are addresses inside a static table that lives for the
//   process, so they stay valid across Shutdown/Init as in the real NVML. A handle is
//   validated by address arithmetic alone: a foreign, stale or garbage pointer is
//   rejected with NVML_ERROR_INVALID_ARGUMENT and never dereferenced.
// - Thread-safe. Nothing here throws except std::bad_alloc, which the exported
//   functions translate (see Guarded()).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <string_view>

#include "core/abi/nvml_types.h"
#include "sim/state/shared_devices.h"

namespace fgpu::sim::nvml {

// The handle table's size: every device a segment can describe.
inline constexpr int kMaxDevices = kMaxSimDevices;

class Session;

// Ids the handle tables cover: GI ids 0..8 and CI ids 0..7 (the state assigns GI ids from 1
// and CI ids from 0 in 8 slots each).
inline constexpr uint32_t kMaxGpuInstanceId = 8;
inline constexpr uint32_t kMaxComputeInstanceId = 7;

// A MIG object: a GPU instance (ci unused) or a compute instance / MIG device.
struct MigRef {
  int device = 0;
  uint32_t gi = 0;
  uint32_t ci = 0;
};

class Library {
 public:
  static Library& Get();

  nvmlReturn_t Init();
  nvmlReturn_t Shutdown();

  // Offset from CLOCK_MONOTONIC to CLOCK_REALTIME, sampled once per process so that
  // timestamps handed out and handed back convert consistently (see cpu_clock.h).
  int64_t realtime_minus_monotonic_ns() const { return realtime_minus_monotonic_ns_; }

 private:
  friend class Session;

  Library();

  mutable std::mutex mu_;
  int init_count_ = 0;                      // guarded by mu_
  std::shared_ptr<SharedDevices> shared_;  // guarded by mu_; set while init_count_ > 0
  const int64_t realtime_minus_monotonic_ns_;
};

// One API call's view of an initialised library.
class Session {
 public:
  // NVML_ERROR_UNINITIALIZED unless the library is initialised.
  nvmlReturn_t Open();

  SharedDevices& shared() const { return *shared_; }
  int device_count() const { return shared_->device_count(); }

  // Index of a handle this library returned, or NVML_ERROR_INVALID_ARGUMENT.
  nvmlReturn_t Resolve(nvmlDevice_t handle, int* index) const;
  static nvmlDevice_t HandleFor(int index);

  // MIG handles (entry_mig.cc): like device handles, addresses in static tables, one slot per
  // (device, GI id[, CI id]), so they are validated by arithmetic and stay stable across
  // processes' views. Resolving checks the address only; callers check the instance exists.
  nvmlReturn_t ResolveGpuInstance(nvmlGpuInstance_t handle, MigRef* ref) const;
  nvmlReturn_t ResolveComputeInstance(nvmlComputeInstance_t handle, MigRef* ref) const;
  // A MIG device handle (one per compute instance); INVALID_ARGUMENT for anything else.
  nvmlReturn_t ResolveMigDevice(nvmlDevice_t handle, MigRef* ref) const;
  static nvmlGpuInstance_t GpuInstanceHandle(const MigRef& ref);
  static nvmlComputeInstance_t ComputeInstanceHandle(const MigRef& ref);
  static nvmlDevice_t MigDeviceHandle(const MigRef& ref);

 private:
  std::shared_ptr<SharedDevices> shared_;
};

// Copies `text` and its terminator into a caller's buffer of `length` bytes:
// NVML_ERROR_INSUFFICIENT_SIZE (buffer untouched) when it does not fit.
nvmlReturn_t CopyOut(std::string_view text, char* buffer, unsigned int length);

// The exception barrier every exported function runs behind.
template <typename Fn>
nvmlReturn_t Guarded(Fn&& fn) noexcept {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return NVML_ERROR_MEMORY;
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

// Runs fn(session) behind the barrier once the library is initialised.
template <typename Fn>
nvmlReturn_t WithSession(Fn&& fn) noexcept {
  return Guarded([&] {
    Session session;
    if (nvmlReturn_t rc = session.Open(); rc != NVML_SUCCESS) return rc;
    return fn(session);
  });
}

// Runs fn(session, device_index) once the library is initialised and `handle` is one
// of ours: the shape of every per-device call.
template <typename Fn>
nvmlReturn_t WithDevice(nvmlDevice_t handle, Fn&& fn) noexcept {
  return WithSession([&](Session& session) {
    int index = 0;
    if (nvmlReturn_t rc = session.Resolve(handle, &index); rc != NVML_SUCCESS) return rc;
    return fn(session, index);
  });
}

}  // namespace fgpu::sim::nvml
