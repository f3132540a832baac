// What the simulated NVML reports about a device's chip and board, derived from the
// compute capability a configuration gives it (the config has no clock or PCIe keys).
//
// Contract
// - Architecture and CUDA cores per SM follow from the compute capability alone (NVML's
//   NVML_DEVICE_ARCH_* and the CUDA samples' cores-per-SM table); an unknown capability
//   has architecture NVML_DEVICE_ARCH_UNKNOWN and no core count.
// - Clocks and the PCIe link are those of one reference data-centre board per compute
//   capability (public specifications): 7.0 V100-SXM2, 7.5 T4, 8.0 A100-SXM4-80GB, 8.9 L4,
//   9.0 H100 SXM5. Other capabilities have no board: clocks and link are NOT_SUPPORTED.
// - No power management: the current clocks and link are the maximum ones.
// - Thermal model: the GPU sensor reads kIdleCelsius plus (kBusyCelsius - kIdleCelsius) times
//   the device's utilization over the last sample period.
// Pure constexpr functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>

#include "core/abi/nvml_api.h"

namespace fgpu::sim::nvml {

struct BoardClocks {
  unsigned int max_graphics_mhz = 0;  // also the SM clock
  unsigned int max_memory_mhz = 0;
  unsigned int pcie_generation = 0;
  unsigned int pcie_width = 0;
};

inline constexpr unsigned int kIdleCelsius = 30;
inline constexpr unsigned int kBusyCelsius = 70;

constexpr nvmlDeviceArchitecture_t ArchitectureFor(int cc_major, int cc_minor) {
  switch (cc_major) {
    case 3: return NVML_DEVICE_ARCH_KEPLER;
    case 5: return NVML_DEVICE_ARCH_MAXWELL;
    case 6: return NVML_DEVICE_ARCH_PASCAL;
    case 7: return cc_minor < 5 ? NVML_DEVICE_ARCH_VOLTA : NVML_DEVICE_ARCH_TURING;
    case 8:
      if (cc_minor == 9) return NVML_DEVICE_ARCH_ADA;
      return cc_minor == 7 ? NVML_DEVICE_ARCH_T23X : NVML_DEVICE_ARCH_AMPERE;  // 8.7: Orin
    case 9: return NVML_DEVICE_ARCH_HOPPER;
    case 10:
    case 12: return NVML_DEVICE_ARCH_BLACKWELL;
    default: return NVML_DEVICE_ARCH_UNKNOWN;
  }
}

// FP32 cores per SM; 0 for a capability the table does not know.
constexpr unsigned int CoresPerSm(int cc_major, int cc_minor) {
  switch (cc_major) {
    case 3: return 192;
    case 5: return 128;
    case 6: return cc_minor == 0 ? 64 : 128;
    case 7: return 64;
    case 8: return cc_minor == 0 ? 64 : 128;
    case 9:
    case 10:
    case 12: return 128;
    default: return 0;
  }
}

constexpr std::optional<BoardClocks> ReferenceBoard(int cc_major, int cc_minor) {
  const int cc = cc_major * 10 + cc_minor;
  switch (cc) {
    case 70: return BoardClocks{1530, 877, 3, 16};   // V100-SXM2
    case 75: return BoardClocks{1590, 5001, 3, 16};  // T4
    case 80: return BoardClocks{1410, 1593, 4, 16};  // A100-SXM4-80GB
    case 89: return BoardClocks{2040, 6251, 4, 16};  // L4
    case 90: return BoardClocks{1980, 2619, 5, 16};  // H100 SXM5
    default: return std::nullopt;
  }
}

// The GPU sensor for a device `busy_percent` (0-100) busy over the last sample period.
constexpr unsigned int TemperatureCelsius(uint32_t busy_percent) {
  const uint32_t busy = busy_percent > 100 ? 100 : busy_percent;
  return kIdleCelsius + (kBusyCelsius - kIdleCelsius) * busy / 100;
}

}  // namespace fgpu::sim::nvml
