#include "sim/nvml/library.h"

#include <time.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "core/abi/nvml_api.h"

namespace fgpu::sim::nvml {
namespace {

// The handle table. Handles are addresses of its slots; the slots are never read
// through a handle, the address alone identifies the device.
struct DeviceSlot {
  int index;
};
DeviceSlot g_device_slots[kMaxDevices];

// MIG handle tables: only their addresses matter.
constexpr size_t kGiIds = kMaxGpuInstanceId + 1;
constexpr size_t kCiIds = kMaxComputeInstanceId + 1;
char g_gpu_instance_slots[kMaxDevices * kGiIds];
char g_compute_instance_slots[kMaxDevices * kGiIds * kCiIds];
char g_mig_device_slots[kMaxDevices * kGiIds * kCiIds];

// The index of `handle` in `table` of `count` one-byte slots, by integer arithmetic only.
bool SlotIndex(const void* handle, const char* table, size_t count, size_t* index) {
  const auto address = reinterpret_cast<uintptr_t>(handle);
  const auto first = reinterpret_cast<uintptr_t>(table);
  if (address < first || address - first >= count) return false;
  *index = address - first;
  return true;
}

int64_t SampleRealtimeMinusMonotonicNs() {
  timespec real{};
  timespec mono{};
  clock_gettime(CLOCK_MONOTONIC, &mono);
  clock_gettime(CLOCK_REALTIME, &real);
  const int64_t real_ns = int64_t{real.tv_sec} * 1'000'000'000 + real.tv_nsec;
  const int64_t mono_ns = int64_t{mono.tv_sec} * 1'000'000'000 + mono.tv_nsec;
  return real_ns - mono_ns;
}

// The real library's closest answer to each way the simulated "driver" can fail to
// come up. A missing, unreadable or invalid configuration (or a segment we cannot
// map) is a driver that is not there; a segment laid out by another version is the
// library/kernel-module mismatch the real NVML reports; anything else is unknown.
nvmlReturn_t InitFailureCode(const Status& status) {
  switch (status.code()) {
    case StatusCode::kNotFound:
    case StatusCode::kUnavailable:
    case StatusCode::kInvalidArgument:
      return NVML_ERROR_DRIVER_NOT_LOADED;
    case StatusCode::kPermissionDenied:
      return NVML_ERROR_NO_PERMISSION;
    case StatusCode::kVersionMismatch:
      return NVML_ERROR_LIB_RM_VERSION_MISMATCH;
    case StatusCode::kResourceExhausted:
      return NVML_ERROR_MEMORY;
    case StatusCode::kOk:
    case StatusCode::kCorrupt:
    case StatusCode::kInternal:
    case StatusCode::kAborted:
      break;
  }
  return NVML_ERROR_UNKNOWN;
}

void ReportInitFailure(const std::string& reason, nvmlReturn_t code) {
  std::string line = reason;
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';  // the contract is one line per failure
  }
  std::fprintf(stderr, "fgpu-sim: nvmlInit failed (%s): %s\n", nvmlErrorString(code), line.c_str());
}

}  // namespace

Library& Library::Get() {
  // Never destroyed: exit-time destructors and atexit handlers of other libraries may
  // still call nvmlShutdown after our statics would have died.
  static Library* const library = new Library();
  return *library;
}

Library::Library() : realtime_minus_monotonic_ns_(SampleRealtimeMinusMonotonicNs()) {
  for (int i = 0; i < kMaxDevices; ++i) g_device_slots[i].index = i;
}

nvmlReturn_t Library::Init() {
  std::lock_guard<std::mutex> lock(mu_);
  if (init_count_ > 0) {
    ++init_count_;
    return NVML_SUCCESS;
  }
  auto attached = AttachFromEnvironment();
  if (!attached.ok()) {
    const nvmlReturn_t code = InitFailureCode(attached.status());
    ReportInitFailure(attached.status().message(), code);
    return code;
  }
  std::shared_ptr<SharedDevices> shared = std::move(attached).value();
  if (shared->device_count() > kMaxDevices) {
    ReportInitFailure("the configuration declares " + std::to_string(shared->device_count()) +
                          " devices; the simulated NVML supports at most " + std::to_string(kMaxDevices),
                      NVML_ERROR_INSUFFICIENT_RESOURCES);
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  }
  shared_ = std::move(shared);
  init_count_ = 1;
  return NVML_SUCCESS;
}

nvmlReturn_t Library::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  if (init_count_ == 0) return NVML_ERROR_UNINITIALIZED;
  if (--init_count_ == 0) shared_.reset();  // open Sessions keep their own reference
  return NVML_SUCCESS;
}

nvmlReturn_t Session::Open() {
  Library& library = Library::Get();
  std::lock_guard<std::mutex> lock(library.mu_);
  if (library.init_count_ == 0) return NVML_ERROR_UNINITIALIZED;
  shared_ = library.shared_;
  return NVML_SUCCESS;
}

nvmlReturn_t Session::Resolve(nvmlDevice_t handle, int* index) const {
  // Integer arithmetic on the address: comparing or subtracting unrelated pointers is
  // undefined, and the handle may point anywhere.
  const auto address = reinterpret_cast<uintptr_t>(handle);
  const auto first = reinterpret_cast<uintptr_t>(&g_device_slots[0]);
  if (address < first) return NVML_ERROR_INVALID_ARGUMENT;
  const uintptr_t offset = address - first;
  if (offset % sizeof(DeviceSlot) != 0) return NVML_ERROR_INVALID_ARGUMENT;
  const uintptr_t slot = offset / sizeof(DeviceSlot);
  if (slot >= static_cast<uintptr_t>(device_count())) return NVML_ERROR_INVALID_ARGUMENT;
  *index = static_cast<int>(slot);
  return NVML_SUCCESS;
}

nvmlDevice_t Session::HandleFor(int index) {
  return reinterpret_cast<nvmlDevice_t>(&g_device_slots[index]);
}

nvmlReturn_t Session::ResolveGpuInstance(nvmlGpuInstance_t handle, MigRef* ref) const {
  size_t index = 0;
  if (!SlotIndex(handle, g_gpu_instance_slots, sizeof(g_gpu_instance_slots), &index)) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  ref->device = static_cast<int>(index / kGiIds);
  ref->gi = static_cast<uint32_t>(index % kGiIds);
  ref->ci = 0;
  return ref->device < device_count() ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

namespace {
nvmlReturn_t ResolveInstanceTable(const void* handle, const char* table, size_t size, int device_count,
                                  MigRef* ref) {
  size_t index = 0;
  if (!SlotIndex(handle, table, size, &index)) return NVML_ERROR_INVALID_ARGUMENT;
  ref->device = static_cast<int>(index / (kGiIds * kCiIds));
  ref->gi = static_cast<uint32_t>(index / kCiIds % kGiIds);
  ref->ci = static_cast<uint32_t>(index % kCiIds);
  return ref->device < device_count ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}
size_t InstanceIndex(const MigRef& ref) {
  return (static_cast<size_t>(ref.device) * kGiIds + ref.gi) * kCiIds + ref.ci;
}
}  // namespace

nvmlReturn_t Session::ResolveComputeInstance(nvmlComputeInstance_t handle, MigRef* ref) const {
  return ResolveInstanceTable(handle, g_compute_instance_slots, sizeof(g_compute_instance_slots), device_count(), ref);
}

nvmlReturn_t Session::ResolveMigDevice(nvmlDevice_t handle, MigRef* ref) const {
  return ResolveInstanceTable(handle, g_mig_device_slots, sizeof(g_mig_device_slots), device_count(), ref);
}

nvmlGpuInstance_t Session::GpuInstanceHandle(const MigRef& ref) {
  return reinterpret_cast<nvmlGpuInstance_t>(&g_gpu_instance_slots[static_cast<size_t>(ref.device) * kGiIds + ref.gi]);
}

nvmlComputeInstance_t Session::ComputeInstanceHandle(const MigRef& ref) {
  return reinterpret_cast<nvmlComputeInstance_t>(&g_compute_instance_slots[InstanceIndex(ref)]);
}

nvmlDevice_t Session::MigDeviceHandle(const MigRef& ref) {
  return reinterpret_cast<nvmlDevice_t>(&g_mig_device_slots[InstanceIndex(ref)]);
}

nvmlReturn_t CopyOut(std::string_view text, char* buffer, unsigned int length) {
  if (buffer == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (text.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buffer, text.data(), text.size());
  buffer[text.size()] = '\0';
  return NVML_SUCCESS;
}

}  // namespace fgpu::sim::nvml
