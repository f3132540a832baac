// Exported NVML entry points: initialisation, error strings, system queries and events.
//
// As in the real NVML, nvmlErrorString, nvmlSystemGetNVMLVersion and
// nvmlSystemGetCudaDriverVersion[_v2] work without nvmlInit (the real ones read
// constants or ask libcuda); every other call needs it.
//
// Events: every device supports registering kSupportedEventTypes (those of a data-centre
// GPU). The simulator has no ECC errors, Xid errors, power states or clock changes, so no
// event ever occurs: a wait sleeps its timeout and returns NVML_ERROR_TIMEOUT, as on a
// healthy GPU at fixed clocks. Event sets live until nvmlEventSetFree, across shutdown.
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "core/abi/nvml_api.h"
#include "sim/nvml/library.h"

namespace {

using fgpu::sim::nvml::CopyOut;
using fgpu::sim::nvml::Guarded;
using fgpu::sim::nvml::Library;
using fgpu::sim::nvml::Session;
using fgpu::sim::nvml::WithDevice;
using fgpu::sim::nvml::WithSession;

// Recognisably simulated, yet "<major>.<minor>.<patch>" first so that version
// parsers that stop at the first non-digit still read a 580-series driver.
constexpr std::string_view kDriverVersion = "580.00.00-fgpu-sim";
// The real string is "<NVML API major>.<driver version>".
constexpr std::string_view kNvmlVersion = "13.580.00.00-fgpu-sim";
// CUDA 13.0, as cuDriverGetVersion of the simulated libcuda reports it.
constexpr int kCudaDriverVersion = 13000;

constexpr unsigned long long kSupportedEventTypes = nvmlEventTypeSingleBitEccError |
                                                    nvmlEventTypeDoubleBitEccError | nvmlEventTypePState |
                                                    nvmlEventTypeXidCriticalError | nvmlEventTypeClock;

// An event set: the event types registered per device.
struct EventSet {
  unsigned long long registered[fgpu::sim::nvml::kMaxDevices] = {};
};

// The live event sets, keyed by handle address: a handle is looked up as an integer and
// never dereferenced unless it is one of ours (a freed or garbage handle is
// NVML_ERROR_INVALID_ARGUMENT).
class EventSets {
 public:
  static EventSets& Get() {
    static EventSets* const sets = new EventSets();  // never destroyed, like Library
    return *sets;
  }

  nvmlEventSet_t Create() {
    auto set = std::make_unique<EventSet>();
    const auto handle = reinterpret_cast<nvmlEventSet_t>(set.get());
    std::lock_guard<std::mutex> lock(mu_);
    sets_.emplace(reinterpret_cast<uintptr_t>(handle), std::move(set));
    return handle;
  }

  bool Register(nvmlEventSet_t handle, int device, unsigned long long types) {
    std::lock_guard<std::mutex> lock(mu_);
    const auto found = sets_.find(reinterpret_cast<uintptr_t>(handle));
    if (found == sets_.end()) return false;
    found->second->registered[device] |= types;
    return true;
  }

  bool Contains(nvmlEventSet_t handle) const {
    std::lock_guard<std::mutex> lock(mu_);
    return sets_.count(reinterpret_cast<uintptr_t>(handle)) != 0;
  }

  bool Free(nvmlEventSet_t handle) {
    std::lock_guard<std::mutex> lock(mu_);
    return sets_.erase(reinterpret_cast<uintptr_t>(handle)) != 0;
  }

 private:
  mutable std::mutex mu_;
  std::unordered_map<uintptr_t, std::unique_ptr<EventSet>> sets_;
};

// Both waits: nothing ever arrives, so each sleeps its timeout.
nvmlReturn_t WaitForEvent(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms) {
  const nvmlReturn_t rc = WithSession([&](Session&) {
    if (data == nullptr || !EventSets::Get().Contains(set)) return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_SUCCESS;
  });
  if (rc != NVML_SUCCESS) return rc;
  std::this_thread::sleep_for(std::chrono::milliseconds(timeoutms));
  return NVML_ERROR_TIMEOUT;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlInit_v2(void) {
  return Guarded([] { return Library::Get().Init(); });
}

// v1 attached only to devices the caller may use; every simulated device qualifies.
nvmlReturn_t nvmlInit(void) { return nvmlInit_v2(); }

// NVML_INIT_FLAG_NO_GPUS / NO_ATTACH change nothing here: the simulated devices always
// exist and attaching to them costs nothing. Unknown bits are ignored, not refused,
// so that callers built against newer headers still initialise.
nvmlReturn_t nvmlInitWithFlags(unsigned int /*flags*/) { return nvmlInit_v2(); }

nvmlReturn_t nvmlShutdown(void) {
  return Guarded([] { return Library::Get().Shutdown(); });
}

const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER: return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_IRQ_ISSUE: return "Interrupt Request Issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM: return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM: return "The operating system has blocked the request";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "RM has detected an NVML/RM version mismatch";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_MEMORY: return "Insufficient Memory";
    case NVML_ERROR_NO_DATA: return "No data";
    case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED: return "ECC is not supported on this vGPU";
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient resources";
    case NVML_ERROR_FREQ_NOT_SUPPORTED: return "Frequency not supported";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    case NVML_ERROR_DEPRECATED: return "Deprecated";
    case NVML_ERROR_NOT_READY: return "Not ready";
    case NVML_ERROR_GPU_NOT_FOUND: return "GPU not found";
    case NVML_ERROR_INVALID_STATE: return "Invalid state";
    case NVML_ERROR_UNKNOWN: return "Unknown Error";
  }
  return "Unknown Error";
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return Guarded([&] {
    Session session;
    if (nvmlReturn_t rc = session.Open(); rc != NVML_SUCCESS) return rc;
    return CopyOut(kDriverVersion, version, length);
  });
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  return Guarded([&] { return CopyOut(kNvmlVersion, version, length); });
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* cudaDriverVersion) {
  if (cudaDriverVersion == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *cudaDriverVersion = kCudaDriverVersion;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion) {
  return nvmlSystemGetCudaDriverVersion(cudaDriverVersion);
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  return WithSession([&](Session&) {
    if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *set = EventSets::Get().Create();
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long* eventTypes) {
  return WithDevice(device, [&](Session&, int) {
    if (eventTypes == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *eventTypes = kSupportedEventTypes;
    return NVML_SUCCESS;
  });
}

// Registration adds to what the set already has for the device; asking for a type the
// device does not support registers nothing.
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set) {
  return WithDevice(device, [&](Session&, int index) {
    if (!EventSets::Get().Contains(set)) return NVML_ERROR_INVALID_ARGUMENT;
    if ((eventTypes & ~kSupportedEventTypes) != 0) return NVML_ERROR_NOT_SUPPORTED;
    return EventSets::Get().Register(set, index, eventTypes) ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
  });
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms) {
  return Guarded([&] { return WaitForEvent(set, data, timeoutms); });
}

nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms) {
  return Guarded([&] { return WaitForEvent(set, data, timeoutms); });
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  return WithSession([&](Session&) {
    return EventSets::Get().Free(set) ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
  });
}

}  // extern "C"
