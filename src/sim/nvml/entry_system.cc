// Exported NVML entry points: initialisation, error strings and system queries.
//
// As in the real NVML, nvmlErrorString, nvmlSystemGetNVMLVersion and
// nvmlSystemGetCudaDriverVersion[_v2] work without nvmlInit (the real ones read
// constants or ask libcuda); every other call needs it.
#include <string_view>

#include "core/abi/nvml_api.h"
#include "sim/nvml/library.h"

namespace {

using fgpu::sim::nvml::CopyOut;
using fgpu::sim::nvml::Guarded;
using fgpu::sim::nvml::Library;
using fgpu::sim::nvml::Session;

// Recognisably simulated, yet "<major>.<minor>.<patch>" first so that version
// parsers that stop at the first non-digit still read a 580-series driver.
constexpr std::string_view kDriverVersion = "580.00.00-fgpu-sim";
// The real string is "<NVML API major>.<driver version>".
constexpr std::string_view kNvmlVersion = "13.580.00.00-fgpu-sim";
// CUDA 13.0, as cuDriverGetVersion of the simulated libcuda reports it.
constexpr int kCudaDriverVersion = 13000;

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

}  // extern "C"
