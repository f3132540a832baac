// The simulated driver's process-wide runtime: initialisation, the shared device
// state, contexts (primary and created), the per-thread context stack, and the
// stream timeline rules every API shares.
//
// Contract
// - Every exported entry point is extern "C", never throws, and returns a CUresult
//   the real driver could return for that call.
// - Before a successful cuInit every API except cuInit, cuDriverGetVersion,
//   cuGetErrorName/String and cuGetProcAddress[_v2] returns CUDA_ERROR_NOT_INITIALIZED.
//   A failed cuInit (bad config, foreign segment) prints one `fgpu-sim:` line on stderr
//   and every later cuInit returns the same error.
// - Work on streams takes simulated device time on the shared timeline (SharedDevices);
//   synchronisation sleeps real wall time until that work ends.
// - Thread-safe; contexts are shared by all threads as in the real driver.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "core/abi/cuda_types.h"
#include "sim/cuda/objects.h"
#include "sim/state/shared_devices.h"

namespace fgpu::sim::cuda {

inline constexpr int kDriverVersion = 13000;

class Runtime {
 public:
  static Runtime& Get();

  // cuInit: attaches the shared state once. Later calls return the first outcome.
  CUresult Init(unsigned flags);
  // CUDA_SUCCESS once cuInit succeeded, CUDA_ERROR_NOT_INITIALIZED otherwise.
  CUresult RequireInit() const;
  // Devices below are CUDA ordinals: the devices CUDA_VISIBLE_DEVICES makes visible, in its
  // order. The shared state is indexed by physical device; these methods translate.
  SharedDevices& shared() { return *shared_; }
  int device_count() const;
  // CUDA_ERROR_INVALID_DEVICE unless 0 <= device < device_count().
  CUresult CheckDevice(int device) const;
  int physical(int device) const { return visible_[static_cast<size_t>(device)]; }
  // A MIG device (CUDA_VISIBLE_DEVICES=MIG-...) is its compute instance's view of the parent.
  const DeviceSpec& spec(int device) const { return mig_spec_ ? *mig_spec_ : shared_->spec(physical(device)); }
  uint64_t RoundToGranularity(int device, uint64_t bytes) const;

  // Charges device memory to this process (OOM -> false, nothing charged).
  bool Charge(int device, uint64_t bytes) { return shared_->TryCharge(physical(device), bytes); }
  void Credit(int device, uint64_t bytes) { shared_->Credit(physical(device), bytes); }
  MemoryInfo Memory(int device) {
    return mig_spec_ ? shared_->GpuInstanceMemory(physical(device), mig_gpu_instance_) : shared_->Memory(physical(device));
  }

  // --- contexts -----------------------------------------------------------------
  // New non-primary context, made current on this thread (cuCtxCreate semantics).
  CUresult CreateContext(int device, unsigned flags, Context** out);
  CUresult DestroyContext(Context* ctx);
  CUresult RetainPrimary(int device, Context** out);
  CUresult ReleasePrimary(int device);
  CUresult ResetPrimary(int device);
  CUresult PrimaryState(int device, unsigned* flags, int* active);
  CUresult SetPrimaryFlags(int device, unsigned flags);
  // The context bound to the calling thread, unchecked (null when none): what cuCtxGetCurrent
  // reports — a thread-local read, as in the real driver, which does not validate it either.
  Context* BoundContext() const;
  // The calling thread's current context, or CUDA_ERROR_INVALID_CONTEXT if none.
  CUresult CurrentContext(Context** out) const;
  Context* LookupContext(CUcontext handle) const;
  // A context argument: `handle`, or the current context when it is NULL, as the calls that
  // take one read it.
  CUresult ContextOrCurrent(CUcontext handle, Context** out) const;
  // Current-context stack of the calling thread.
  void SetCurrent(Context* ctx);
  void PushCurrent(Context* ctx);
  Context* PopCurrent();

  // --- streams and time ----------------------------------------------------------
  // Resolves a stream handle as seen by an API variant: 0 means the legacy stream
  // unless `per_thread` (the _ptsz/_ptds variants), CU_STREAM_LEGACY / CU_STREAM_PER_THREAD
  // are honoured. Requires a current context for the default streams.
  CUresult ResolveStream(CUstream handle, bool per_thread, Stream** out);
  // Earliest start of new work on `stream`, honouring legacy-stream synchronisation.
  uint64_t ReadyTime(const Stream& stream) const;
  // Records that work on `stream` now ends at `end_ns`.
  void AdvanceStream(Stream& stream, uint64_t end_ns);
  // Puts `duration_ns` of device time on the shared timeline after the stream's work.
  KernelSlot EnqueueWork(Stream& stream, uint64_t duration_ns);
  // Synchronous memcpy/memset semantics: wait for the legacy stream (and with it all
  // blocking streams) of the current context.
  CUresult WaitLegacyStream(Context* ctx);
  static void SleepUntil(uint64_t monotonic_ns);

  // Releases everything this process charged (library teardown, as the driver does at exit).
  void ReleaseAllCharges();

 private:
  Runtime() = default;
  struct PrimarySlot {
    Context* ctx = nullptr;
    int refcount = 0;
    unsigned flags = 0;
  };
  CUresult MakeContext(int device, unsigned flags, bool primary, Context** out);
  void FreeContext(Context* ctx);

  mutable std::mutex mu_;
  bool init_done_ = false;
  CUresult init_result_ = CUDA_ERROR_NOT_INITIALIZED;
  std::atomic<bool> initialized_{false};  // Init succeeded (set once, never cleared)
  std::unique_ptr<SharedDevices> shared_;
  std::vector<int> visible_;  // CUDA ordinal -> physical device
  // Set when the process uses a MIG compute instance (then visible_ has one entry, its GPU).
  std::optional<DeviceSpec> mig_spec_;
  uint32_t mig_gpu_instance_ = 0;
  // CUDA_VISIBLE_DEVICES -> visible_ (and the MIG binding); see docs/sim.md "MIG".
  void ChooseVisibleDevices(const char* value);
  std::vector<PrimarySlot> primaries_;
  unsigned long long next_context_id_ = 1;
};

// The first check of most entry points: has this process called cuInit?
inline CUresult Ready() { return Runtime::Get().RequireInit(); }

// Hooks implemented by the memory side (api_memory*.cc): release every allocation,
// array, pool and VMM handle owned by a context that is being destroyed or reset.
void ReleaseContextMemory(Context* ctx);
// Called after a stream/event/context synchronisation completed on `device`: stream-
// ordered pools release reserved memory above their release threshold, as the driver does.
void TrimPoolsAfterSync(int device);

}  // namespace fgpu::sim::cuda
