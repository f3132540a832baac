// Exported NVML entry points: device enumeration and identity; the chip and board
// (board_model.h: architecture, cores, clocks, PCIe link, temperature).
#include <cctype>
#include <cstring>
#include <optional>
#include <string_view>

#include "core/abi/nvml_api.h"
#include "sim/nvml/board_model.h"
#include "sim/nvml/library.h"
#include "sim/nvml/mig_view.h"
#include "sim/nvml/pci_info.h"

namespace {

using fgpu::sim::nvml::ArchitectureFor;
using fgpu::sim::nvml::BoardClocks;
using fgpu::sim::nvml::CopyOut;
using fgpu::sim::nvml::CoresPerSm;
using fgpu::sim::nvml::FillPciInfo;
using fgpu::sim::nvml::MigDeviceView;
using fgpu::sim::nvml::ParsePciBusId;
using fgpu::sim::nvml::ReferenceBoard;
using fgpu::sim::nvml::TemperatureCelsius;
using fgpu::sim::nvml::PciAddress;
using fgpu::sim::nvml::Session;
using fgpu::sim::nvml::ViewMigDevice;
using fgpu::sim::nvml::WithDevice;
using fgpu::sim::nvml::WithSession;

// The config stores UUIDs in lower case; callers copy them from tools that may not.
bool SameUuid(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

// Runs fn(board) for a device whose compute capability has a reference board (board_model.h);
// NVML_ERROR_NOT_SUPPORTED for one that has none. `out` is checked first.
template <typename Fn>
nvmlReturn_t WithBoard(nvmlDevice_t device, const unsigned int* out, Fn&& fn) noexcept {
  return WithDevice(device, [&](Session& session, int index) {
    if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const fgpu::sim::DeviceSpec& spec = session.shared().spec(index);
    const std::optional<BoardClocks> board = ReferenceBoard(spec.cc_major, spec.cc_minor);
    if (!board) return NVML_ERROR_NOT_SUPPORTED;
    return fn(*board);
  });
}

// Graphics, SM and memory clocks of the board; the simulator has no video engines.
nvmlReturn_t BoardClock(nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock) {
  return WithBoard(device, clock, [&](const BoardClocks& board) {
    switch (type) {
      case NVML_CLOCK_GRAPHICS:
      case NVML_CLOCK_SM: *clock = board.max_graphics_mhz; return NVML_SUCCESS;
      case NVML_CLOCK_MEM: *clock = board.max_memory_mhz; return NVML_SUCCESS;
      case NVML_CLOCK_VIDEO: return NVML_ERROR_NOT_SUPPORTED;
      case NVML_CLOCK_COUNT: break;
    }
    return NVML_ERROR_INVALID_ARGUMENT;
  });
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  return WithSession([&](Session& session) {
    if (deviceCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *deviceCount = static_cast<unsigned int>(session.device_count());
    return NVML_SUCCESS;
  });
}

// v1 counted only devices the caller may use; every simulated device qualifies.
nvmlReturn_t nvmlDeviceGetCount(unsigned int* deviceCount) { return nvmlDeviceGetCount_v2(deviceCount); }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  return WithSession([&](Session& session) {
    if (device == nullptr || index >= static_cast<unsigned int>(session.device_count())) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    *device = Session::HandleFor(static_cast<int>(index));
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return nvmlDeviceGetHandleByIndex_v2(index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  return WithSession([&](Session& session) {
    if (uuid == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < session.device_count(); ++i) {
      if (SameUuid(session.shared().spec(i).uuid, uuid)) {
        *device = Session::HandleFor(i);
        return NVML_SUCCESS;
      }
    }
    return NVML_ERROR_NOT_FOUND;
  });
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId, nvmlDevice_t* device) {
  return WithSession([&](Session& session) {
    if (pciBusId == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    // Bounded read: a bus id has at most 8+1+2+1+2+1+1 characters; anything longer
    // cannot match, and an unterminated buffer is not scanned past that bound.
    const size_t length = strnlen(pciBusId, NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE);
    const std::optional<PciAddress> wanted = ParsePciBusId(std::string_view(pciBusId, length));
    if (!wanted) return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < session.device_count(); ++i) {
      if (ParsePciBusId(session.shared().spec(i).pci_bus_id) == wanted) {
        *device = Session::HandleFor(i);
        return NVML_SUCCESS;
      }
    }
    return NVML_ERROR_NOT_FOUND;
  });
}

// Name and UUID accept MIG device handles too, as the real NVML does.
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  return WithSession([&](Session& session) {
    int index = 0;
    if (session.Resolve(device, &index) == NVML_SUCCESS) return CopyOut(session.shared().spec(index).name, name, length);
    MigDeviceView view;
    if (nvmlReturn_t rc = ViewMigDevice(session, device, &view); rc != NVML_SUCCESS) return rc;
    return CopyOut(view.name, name, length);
  });
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  return WithSession([&](Session& session) {
    int index = 0;
    if (session.Resolve(device, &index) == NVML_SUCCESS) return CopyOut(session.shared().spec(index).uuid, uuid, length);
    MigDeviceView view;
    if (nvmlReturn_t rc = ViewMigDevice(session, device, &view); rc != NVML_SUCCESS) return rc;
    return CopyOut(view.uuid, uuid, length);
  });
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  return WithDevice(device, [&](Session&, int device_index) {
    if (index == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *index = static_cast<unsigned int>(device_index);
    return NVML_SUCCESS;
  });
}

// The simulated /dev/nvidiaN numbering follows the NVML index.
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minorNumber) {
  return WithDevice(device, [&](Session&, int device_index) {
    if (minorNumber == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *minorNumber = static_cast<unsigned int>(device_index);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return WithDevice(device, [&](Session& session, int index) {
    if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    // The config loader guarantees a well-formed bus id; a bad one is our bug.
    return FillPciInfo(session.shared().spec(index), pci) ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
  });
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor) {
  return WithDevice(device, [&](Session& session, int index) {
    if (major == nullptr || minor == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *major = session.shared().spec(index).cc_major;
    *minor = session.shared().spec(index).cc_minor;
    return NVML_SUCCESS;
  });
}

// The GPU sensor follows the device's utilization (board_model.h); there is no power model,
// the answer of boards without a power sensor.
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                      unsigned int* temp) {
  return WithDevice(device, [&](Session& session, int index) {
    if (temp == nullptr || sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
    *temp = TemperatureCelsius(
        session.shared().UtilizationPercent(index, session.shared().config().utilization_period_ns));
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  return WithDevice(device, [&](Session&, int) {
    if (power == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_ERROR_NOT_SUPPORTED;
  });
}

// No power management: the clocks are always the board's maximum.
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock) {
  return BoardClock(device, type, clock);
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock) {
  return BoardClock(device, type, clock);
}

// Nor link power saving: the link runs at its maximum generation and width.
nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int* currLinkGen) {
  return WithBoard(device, currLinkGen, [&](const BoardClocks& board) {
    *currLinkGen = board.pcie_generation;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int* currLinkWidth) {
  return WithBoard(device, currLinkWidth, [&](const BoardClocks& board) {
    *currLinkWidth = board.pcie_width;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int* maxLinkGen) {
  return WithBoard(device, maxLinkGen, [&](const BoardClocks& board) {
    *maxLinkGen = board.pcie_generation;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int* maxLinkWidth) {
  return WithBoard(device, maxLinkWidth, [&](const BoardClocks& board) {
    *maxLinkWidth = board.pcie_width;
    return NVML_SUCCESS;
  });
}

// SMs times the FP32 cores per SM of the compute capability.
nvmlReturn_t nvmlDeviceGetNumGpuCores(nvmlDevice_t device, unsigned int* numCores) {
  return WithDevice(device, [&](Session& session, int index) {
    if (numCores == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const fgpu::sim::DeviceSpec& spec = session.shared().spec(index);
    const unsigned int per_sm = CoresPerSm(spec.cc_major, spec.cc_minor);
    if (per_sm == 0) return NVML_ERROR_NOT_SUPPORTED;
    *numCores = per_sm * static_cast<unsigned int>(spec.sm_count);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, nvmlDeviceArchitecture_t* arch) {
  return WithDevice(device, [&](Session& session, int index) {
    if (arch == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const fgpu::sim::DeviceSpec& spec = session.shared().spec(index);
    *arch = ArchitectureFor(spec.cc_major, spec.cc_minor);
    return NVML_SUCCESS;
  });
}

// Every simulated device is a board of its own.
nvmlReturn_t nvmlDeviceGetMultiGpuBoard(nvmlDevice_t device, unsigned int* multiGpuBool) {
  return WithDevice(device, [&](Session&, int) {
    if (multiGpuBool == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *multiGpuBool = 0;
    return NVML_SUCCESS;
  });
}

}  // extern "C"
