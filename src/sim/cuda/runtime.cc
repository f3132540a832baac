#include "sim/cuda/runtime.h"

#include <time.h>

#include <algorithm>
#include <cctype>
#include <string_view>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "sim/cuda/visible_devices.h"

namespace fgpu::sim::cuda {
namespace {

// The calling thread's current-context stack (top = back). Holds raw pointers:
// a destroyed context is removed from the calling thread's stack only, as in the
// driver, and later lookups fail through the registry.
thread_local std::vector<Context*> t_context_stack;

// One per-thread default stream per (thread, context).
struct PerThreadStreams {
  std::vector<std::pair<Context*, std::unique_ptr<Stream>>> streams;
};
thread_local PerThreadStreams t_per_thread_streams;

__attribute__((destructor)) void ReleaseChargesAtExit() { Runtime::Get().ReleaseAllCharges(); }

}  // namespace

Runtime& Runtime::Get() {
  static auto* runtime = new Runtime;  // never destroyed; see HandleRegistry::Get
  return *runtime;
}

CUresult Runtime::Init(unsigned flags) {
  std::lock_guard lock(mu_);
  if (init_done_) return init_result_;
  init_done_ = true;
  if (flags != 0) {
    // The real driver rejects any flag; the failure is not sticky there either.
    init_done_ = false;
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto attached = AttachFromEnvironment();
  if (!attached.ok()) {
    std::fprintf(stderr, "fgpu-sim: cuInit failed: %s\n", attached.status().message().c_str());
    const bool version = attached.status().code() == StatusCode::kVersionMismatch;
    init_result_ = version ? CUDA_ERROR_SYSTEM_DRIVER_MISMATCH : CUDA_ERROR_NO_DEVICE;
    return init_result_;
  }
  shared_ = std::move(attached).value();
  ChooseVisibleDevices(std::getenv("CUDA_VISIBLE_DEVICES"));
  if (visible_.empty()) {
    init_result_ = CUDA_ERROR_NO_DEVICE;  // what the driver says when CUDA_VISIBLE_DEVICES hides every device
    return init_result_;
  }
  primaries_.resize(visible_.size());
  init_result_ = CUDA_SUCCESS;
  initialized_.store(true, std::memory_order_release);
  return init_result_;
}

namespace {

bool SameIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

// As the driver: a MIG UUID in the list makes the process see exactly that one compute
// instance (only one MIG device is enumerated per process) and binds the process to it, so its
// memory is charged against the GPU instance. Without one, GPUs in MIG mode are not enumerated:
// their memory and SMs belong to the instances.
void Runtime::ChooseVisibleDevices(const char* value) {
  if (value != nullptr) {
    std::string_view rest(value);
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      std::string_view entry = rest.substr(0, comma);
      while (!entry.empty() && std::isspace(static_cast<unsigned char>(entry.front()))) entry.remove_prefix(1);
      while (!entry.empty() && std::isspace(static_cast<unsigned char>(entry.back()))) entry.remove_suffix(1);
      if (entry.size() > 4 && SameIgnoringCase(entry.substr(0, 4), "MIG-")) {
        for (int d = 0; d < shared_->device_count(); ++d) {
          const MigSnapshot mig = shared_->Mig(d);
          if (!mig.enabled) continue;
          for (const GpuInstanceState& gi : mig.gpu_instances) {
            const fgpu::mig::Profile* profile = fgpu::mig::FindProfile(*mig.model, gi.profile_id);
            for (const ComputeInstanceState& ci : gi.compute) {
              const DeviceSpec& parent = shared_->spec(d);
              if (profile == nullptr || !SameIgnoringCase(MigUuid(parent.uuid, gi.id, ci.id), entry)) continue;
              if (!shared_->BindMigInstance(d, gi.id, ci.id)) continue;
              DeviceSpec view = parent;
              view.name = MigDeviceName(parent.name, *profile, ci.size);
              view.uuid = MigUuid(parent.uuid, gi.id, ci.id);
              view.total_bytes = profile->memory_bytes;
              view.sm_count = ComputeInstanceSms(*mig.model, *profile, ci.size);
              mig_spec_ = view;
              mig_gpu_instance_ = gi.id;
              visible_ = {d};
              return;
            }
          }
        }
      }
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  std::vector<std::string> uuids;
  for (int i = 0; i < shared_->device_count(); ++i) uuids.push_back(shared_->spec(i).uuid);
  visible_ = ParseVisibleDevices(value, uuids);
  std::erase_if(visible_, [&](int d) { return shared_->Mig(d).enabled; });
}

CUresult Runtime::RequireInit() const {
  // Lock-free, as the driver's check is: every entry point asks, and a mutex here would make
  // the simulator's calls cost what the real ones do not (and distort the hook's benchmarks).
  return initialized_.load(std::memory_order_acquire) ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

int Runtime::device_count() const { return static_cast<int>(visible_.size()); }

CUresult Runtime::CheckDevice(int device) const {
  return device >= 0 && device < device_count() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

uint64_t Runtime::RoundToGranularity(int device, uint64_t bytes) const {
  const uint64_t granule = spec(device).granularity;
  if (bytes > UINT64_MAX - granule) return UINT64_MAX;
  return (bytes + granule - 1) / granule * granule;
}

// --- contexts -------------------------------------------------------------------

CUresult Runtime::MakeContext(int device, unsigned flags, bool primary, Context** out) {
  const uint64_t overhead = spec(device).context_overhead;
  if (!Charge(device, overhead)) return CUDA_ERROR_OUT_OF_MEMORY;
  auto ctx = std::make_unique<Context>();
  ctx->device = device;
  ctx->flags = flags;
  ctx->primary = primary;
  ctx->charged_overhead = overhead;
  ctx->legacy_stream = std::make_unique<Stream>();
  ctx->legacy_stream->ctx = ctx.get();
  ctx->legacy_stream->is_default = true;
  {
    std::lock_guard lock(mu_);
    ctx->id = next_context_id_++;
  }
  HandleRegistry::Get().Insert(ctx.get(), Kind::kContext);
  HandleRegistry::Get().Insert(ctx->legacy_stream.get(), Kind::kStream);
  *out = ctx.release();
  return CUDA_SUCCESS;
}

void Runtime::FreeContext(Context* ctx) {
  SleepUntil(ctx->tail_ns.load());  // the driver waits for outstanding work before destroying
  ReleaseContextMemory(ctx);
  HandleRegistry::Get().Erase(ctx->legacy_stream.get());
  HandleRegistry::Get().Erase(ctx);
  Credit(ctx->device, ctx->charged_overhead);
  auto& streams = t_per_thread_streams.streams;
  std::erase_if(streams, [ctx](const auto& entry) { return entry.first == ctx; });
  std::erase(t_context_stack, ctx);
  delete ctx;
}

CUresult Runtime::CreateContext(int device, unsigned flags, Context** out) {
  if (CUresult rc = CheckDevice(device); rc != CUDA_SUCCESS) return rc;
  Context* ctx = nullptr;
  if (CUresult rc = MakeContext(device, flags, /*primary=*/false, &ctx); rc != CUDA_SUCCESS) return rc;
  PushCurrent(ctx);
  *out = ctx;
  return CUDA_SUCCESS;
}

CUresult Runtime::DestroyContext(Context* ctx) {
  if (ctx->primary) return CUDA_ERROR_INVALID_CONTEXT;  // primary contexts are released, not destroyed
  FreeContext(ctx);
  return CUDA_SUCCESS;
}

CUresult Runtime::RetainPrimary(int device, Context** out) {
  if (CUresult rc = CheckDevice(device); rc != CUDA_SUCCESS) return rc;
  std::unique_lock lock(mu_);
  PrimarySlot& slot = primaries_[static_cast<size_t>(device)];
  if (slot.ctx == nullptr) {
    const unsigned flags = slot.flags;
    lock.unlock();  // MakeContext takes mu_ for the id
    Context* ctx = nullptr;
    if (CUresult rc = MakeContext(device, flags, /*primary=*/true, &ctx); rc != CUDA_SUCCESS) return rc;
    lock.lock();
    if (slot.ctx == nullptr) {
      slot.ctx = ctx;
    } else {  // another thread won the race; keep its context
      lock.unlock();
      FreeContext(ctx);
      lock.lock();
    }
  }
  ++slot.refcount;
  *out = slot.ctx;
  return CUDA_SUCCESS;
}

CUresult Runtime::ReleasePrimary(int device) {
  if (CUresult rc = CheckDevice(device); rc != CUDA_SUCCESS) return rc;
  Context* to_free = nullptr;
  {
    std::lock_guard lock(mu_);
    PrimarySlot& slot = primaries_[static_cast<size_t>(device)];
    if (slot.refcount == 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (--slot.refcount == 0) std::swap(to_free, slot.ctx);
  }
  if (to_free != nullptr) FreeContext(to_free);
  return CUDA_SUCCESS;
}

CUresult Runtime::ResetPrimary(int device) {
  if (CUresult rc = CheckDevice(device); rc != CUDA_SUCCESS) return rc;
  Context* to_free = nullptr;
  {
    std::lock_guard lock(mu_);
    PrimarySlot& slot = primaries_[static_cast<size_t>(device)];
    slot.refcount = 0;
    slot.flags = 0;
    std::swap(to_free, slot.ctx);
  }
  if (to_free != nullptr) FreeContext(to_free);
  return CUDA_SUCCESS;
}

CUresult Runtime::PrimaryState(int device, unsigned* flags, int* active) {
  if (CUresult rc = CheckDevice(device); rc != CUDA_SUCCESS) return rc;
  std::lock_guard lock(mu_);
  const PrimarySlot& slot = primaries_[static_cast<size_t>(device)];
  *flags = slot.flags;
  *active = slot.ctx != nullptr ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult Runtime::SetPrimaryFlags(int device, unsigned flags) {
  if (CUresult rc = CheckDevice(device); rc != CUDA_SUCCESS) return rc;
  constexpr unsigned kKnownFlags = 0x3F;  // sched mode (0x7), map host (0x8), lmem resize (0x10), coredump (0x20)
  if ((flags & ~kKnownFlags) != 0 || (flags & 0x7) > 4 || (flags & 0x7) == 3) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  PrimarySlot& slot = primaries_[static_cast<size_t>(device)];
  slot.flags = flags;
  if (slot.ctx != nullptr) slot.ctx->flags = flags;
  return CUDA_SUCCESS;
}

CUresult Runtime::CurrentContext(Context** out) const {
  if (t_context_stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  Context* ctx = t_context_stack.back();
  if (!HandleRegistry::Get().Is(ctx, Kind::kContext)) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *out = ctx;
  return CUDA_SUCCESS;
}

Context* Runtime::BoundContext() const { return t_context_stack.empty() ? nullptr : t_context_stack.back(); }

Context* Runtime::LookupContext(CUcontext handle) const {
  return HandleRegistry::Get().Lookup<Context>(handle, Kind::kContext);
}

CUresult Runtime::ContextOrCurrent(CUcontext handle, Context** out) const {
  if (handle == nullptr) return CurrentContext(out);
  *out = LookupContext(handle);
  return *out != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

void Runtime::SetCurrent(Context* ctx) {
  if (ctx == nullptr) {
    if (!t_context_stack.empty()) t_context_stack.pop_back();
    return;
  }
  if (t_context_stack.empty()) {
    t_context_stack.push_back(ctx);
  } else {
    t_context_stack.back() = ctx;
  }
}

void Runtime::PushCurrent(Context* ctx) { t_context_stack.push_back(ctx); }

Context* Runtime::PopCurrent() {
  if (t_context_stack.empty()) return nullptr;
  Context* ctx = t_context_stack.back();
  t_context_stack.pop_back();
  return ctx;
}

// --- streams and time ----------------------------------------------------------------

CUresult Runtime::ResolveStream(CUstream handle, bool per_thread, Stream** out) {
  const bool want_legacy = handle == CU_STREAM_LEGACY || (handle == nullptr && !per_thread);
  const bool want_per_thread = handle == CU_STREAM_PER_THREAD || (handle == nullptr && per_thread);
  if (want_legacy || want_per_thread) {
    Context* ctx = nullptr;
    if (CUresult rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
    if (want_legacy) {
      *out = ctx->legacy_stream.get();
      return CUDA_SUCCESS;
    }
    for (auto& [owner, stream] : t_per_thread_streams.streams) {
      if (owner == ctx) {
        *out = stream.get();
        return CUDA_SUCCESS;
      }
    }
    // The per-thread default stream is a blocking stream: it synchronises with the
    // legacy stream, so it keeps flags 0.
    auto stream = std::make_unique<Stream>();
    stream->ctx = ctx;
    stream->is_default = true;
    *out = stream.get();
    t_per_thread_streams.streams.emplace_back(ctx, std::move(stream));
    return CUDA_SUCCESS;
  }
  Stream* stream = HandleRegistry::Get().Lookup<Stream>(handle, Kind::kStream);
  if (stream == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *out = stream;
  return CUDA_SUCCESS;
}

uint64_t Runtime::ReadyTime(const Stream& stream) const {
  const Context& ctx = *stream.ctx;
  uint64_t ready = std::max(stream.tail_ns.load(std::memory_order_acquire),
                            ctx.wait_floor_ns.load(std::memory_order_acquire));
  if (&stream == ctx.legacy_stream.get()) {
    ready = std::max(ready, ctx.blocking_tail_ns.load(std::memory_order_acquire));
  } else if ((stream.flags & CU_STREAM_NON_BLOCKING) == 0) {
    ready = std::max(ready, ctx.legacy_stream->tail_ns.load(std::memory_order_acquire));
  }
  return ready;
}

namespace {
void StoreMax(std::atomic<uint64_t>& target, uint64_t value) {
  uint64_t seen = target.load(std::memory_order_relaxed);
  while (seen < value && !target.compare_exchange_weak(seen, value, std::memory_order_acq_rel)) {
  }
}
}  // namespace

void Runtime::AdvanceStream(Stream& stream, uint64_t end_ns) {
  StoreMax(stream.tail_ns, end_ns);
  Context& ctx = *stream.ctx;
  StoreMax(ctx.tail_ns, end_ns);
  if ((stream.flags & CU_STREAM_NON_BLOCKING) == 0) StoreMax(ctx.blocking_tail_ns, end_ns);
}

KernelSlot Runtime::EnqueueWork(Stream& stream, uint64_t duration_ns) {
  const KernelSlot slot = shared_->EnqueueKernel(physical(stream.ctx->device), ReadyTime(stream), duration_ns);
  AdvanceStream(stream, slot.end_ns);
  return slot;
}

CUresult Runtime::WaitLegacyStream(Context* ctx) {
  // Synchronous copies wait like the driver does, but do not trim pools: only stream,
  // event and context synchronisation release pool memory.
  SleepUntil(ReadyTime(*ctx->legacy_stream));
  return CUDA_SUCCESS;
}

void Runtime::SleepUntil(uint64_t monotonic_ns) {
  if (monotonic_ns == 0) return;
  timespec until{};
  until.tv_sec = static_cast<time_t>(monotonic_ns / 1'000'000'000);
  until.tv_nsec = static_cast<long>(monotonic_ns % 1'000'000'000);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr) == EINTR) {
  }
}

void Runtime::ReleaseAllCharges() {
  std::lock_guard lock(mu_);
  if (!shared_) return;
  for (int device = 0; device < shared_->device_count(); ++device) {
    shared_->Credit(device, shared_->ChargedByThisProcess(device));
  }
}

}  // namespace fgpu::sim::cuda
