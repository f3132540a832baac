// Device enumeration, identity, the chip and board, events, buffers and handle validation.
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "sim/nvml/board_model.h"
#include "core/abi/nvml_api.h"
#include "sim/nvml/nvml_test_env.h"

namespace fgpu::sim::nvml {
namespace {

constexpr const char* kThirdUuid = "GPU-0123abcd-4567-89ab-cdef-0123456789ab";

class DeviceTest : public NvmlTest {
 protected:
  void SetUp() override {
    NvmlTest::SetUp();
    UseConfig(R"({"devices": [
      {"name": "NVIDIA A100-SXM4-80GB", "count": 2, "memory": "80GiB", "compute_capability": "8.0"},
      {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-0123ABCD-4567-89ab-cdef-0123456789ab",
       "pci_bus_id": "00000000:9A:00.0"}]})");
    ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  }
};

TEST_F(DeviceTest, CountAndHandlesByIndex) {
  unsigned int count = 0;
  ASSERT_EQ(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 3u);
  ASSERT_EQ(nvmlDeviceGetCount(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 3u);
  EXPECT_EQ(nvmlDeviceGetCount_v2(nullptr), NVML_ERROR_INVALID_ARGUMENT);

  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t by_v2 = nullptr;
    nvmlDevice_t by_v1 = nullptr;
    ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(i, &by_v2), NVML_SUCCESS);
    ASSERT_EQ(nvmlDeviceGetHandleByIndex(i, &by_v1), NVML_SUCCESS);
    EXPECT_EQ(by_v1, by_v2);
    unsigned int index = 99;
    unsigned int minor = 99;
    EXPECT_EQ(nvmlDeviceGetIndex(by_v2, &index), NVML_SUCCESS);
    EXPECT_EQ(index, i);
    EXPECT_EQ(nvmlDeviceGetMinorNumber(by_v2, &minor), NVML_SUCCESS);
    EXPECT_EQ(minor, i);
  }
  EXPECT_NE(Device(0), Device(1));
  nvmlDevice_t device = nullptr;
  EXPECT_EQ(nvmlDeviceGetHandleByIndex_v2(3, &device), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvmlDeviceGetHandleByIndex_v2(0, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvmlDeviceGetIndex(Device(0), nullptr), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(DeviceTest, HandleByUuid) {
  for (unsigned int i = 0; i < 3; ++i) {
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    ASSERT_EQ(nvmlDeviceGetUUID(Device(i), uuid, sizeof(uuid)), NVML_SUCCESS);
    EXPECT_EQ(std::strlen(uuid), 40u) << uuid;
    EXPECT_EQ(std::string(uuid).rfind("GPU-", 0), 0u) << uuid;
    nvmlDevice_t found = nullptr;
    ASSERT_EQ(nvmlDeviceGetHandleByUUID(uuid, &found), NVML_SUCCESS);
    EXPECT_EQ(found, Device(i));
  }
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  ASSERT_EQ(nvmlDeviceGetUUID(Device(2), uuid, sizeof(uuid)), NVML_SUCCESS);
  EXPECT_STREQ(uuid, kThirdUuid) << "the configured UUID, normalised to lower case";
  nvmlDevice_t found = nullptr;
  EXPECT_EQ(nvmlDeviceGetHandleByUUID("GPU-0123ABCD-4567-89AB-CDEF-0123456789AB", &found), NVML_SUCCESS);
  EXPECT_EQ(found, Device(2));
  EXPECT_EQ(nvmlDeviceGetHandleByUUID("GPU-00000000-0000-0000-0000-000000000000", &found), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(nvmlDeviceGetHandleByUUID(nullptr, &found), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvmlDeviceGetHandleByUUID(kThirdUuid, nullptr), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(DeviceTest, PciInfoAndHandleByPciBusId) {
  nvmlPciInfo_t pci{};
  ASSERT_EQ(nvmlDeviceGetPciInfo_v3(Device(2), &pci), NVML_SUCCESS);
  EXPECT_STREQ(pci.busId, "00000000:9A:00.0");
  EXPECT_STREQ(pci.busIdLegacy, "0000:9A:00.0");
  EXPECT_EQ(pci.domain, 0u);
  EXPECT_EQ(pci.bus, 0x9Au);
  EXPECT_EQ(pci.device, 0u);
  EXPECT_EQ(pci.pciDeviceId, 0x233010DEu);
  ASSERT_EQ(nvmlDeviceGetPciInfo_v3(Device(0), &pci), NVML_SUCCESS);
  EXPECT_EQ(pci.pciDeviceId, 0x20B210DEu);
  EXPECT_EQ(nvmlDeviceGetPciInfo_v3(Device(0), nullptr), NVML_ERROR_INVALID_ARGUMENT);

  for (unsigned int i = 0; i < 3; ++i) {
    ASSERT_EQ(nvmlDeviceGetPciInfo_v3(Device(i), &pci), NVML_SUCCESS);
    nvmlDevice_t found = nullptr;
    ASSERT_EQ(nvmlDeviceGetHandleByPciBusId_v2(pci.busId, &found), NVML_SUCCESS) << pci.busId;
    EXPECT_EQ(found, Device(i));
    found = nullptr;
    ASSERT_EQ(nvmlDeviceGetHandleByPciBusId_v2(pci.busIdLegacy, &found), NVML_SUCCESS) << pci.busIdLegacy;
    EXPECT_EQ(found, Device(i));
  }
  nvmlDevice_t found = nullptr;
  EXPECT_EQ(nvmlDeviceGetHandleByPciBusId_v2("9a:00.0", &found), NVML_SUCCESS) << "bus:device.function";
  EXPECT_EQ(found, Device(2));
  EXPECT_EQ(nvmlDeviceGetHandleByPciBusId_v2("0:9a:0", &found), NVML_SUCCESS) << "domain:bus:device";
  EXPECT_EQ(found, Device(2));
  EXPECT_EQ(nvmlDeviceGetHandleByPciBusId_v2("00000000:9B:00.0", &found), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(nvmlDeviceGetHandleByPciBusId_v2("not-a-bus-id", &found), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvmlDeviceGetHandleByPciBusId_v2(nullptr, &found), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvmlDeviceGetHandleByPciBusId_v2("00000000:9A:00.0", nullptr), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(DeviceTest, NameBufferSizes) {
  const std::string expected = "NVIDIA A100-SXM4-80GB";
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  ASSERT_EQ(nvmlDeviceGetName(Device(0), name, sizeof(name)), NVML_SUCCESS);
  EXPECT_EQ(std::string(name), expected);

  char exact[32];
  std::memset(exact, 'x', sizeof(exact));
  const auto fits = static_cast<unsigned int>(expected.size() + 1);
  EXPECT_EQ(nvmlDeviceGetName(Device(0), exact, fits), NVML_SUCCESS);
  EXPECT_EQ(std::string(exact), expected);

  std::memset(exact, 'x', sizeof(exact));
  EXPECT_EQ(nvmlDeviceGetName(Device(0), exact, fits - 1), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(exact[0], 'x') << "a short buffer is left untouched";
  EXPECT_EQ(nvmlDeviceGetName(Device(0), exact, 0), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(nvmlDeviceGetName(Device(0), nullptr, sizeof(name)), NVML_ERROR_INVALID_ARGUMENT);

  ASSERT_EQ(nvmlDeviceGetName(Device(2), name, sizeof(name)), NVML_SUCCESS);
  EXPECT_STREQ(name, "NVIDIA H100 80GB HBM3");
}

TEST_F(DeviceTest, UuidBufferSizes) {
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  EXPECT_EQ(nvmlDeviceGetUUID(Device(2), uuid, 41), NVML_SUCCESS);
  EXPECT_STREQ(uuid, kThirdUuid);
  EXPECT_EQ(nvmlDeviceGetUUID(Device(2), uuid, 40), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(nvmlDeviceGetUUID(Device(2), nullptr, 96), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(DeviceTest, ComputeCapabilityMigAndSensors) {
  int major = 0;
  int minor = -1;
  ASSERT_EQ(nvmlDeviceGetCudaComputeCapability(Device(0), &major, &minor), NVML_SUCCESS);
  EXPECT_EQ(major, 8);
  EXPECT_EQ(minor, 0);
  ASSERT_EQ(nvmlDeviceGetCudaComputeCapability(Device(2), &major, &minor), NVML_SUCCESS);
  EXPECT_EQ(major, 9);
  EXPECT_EQ(nvmlDeviceGetCudaComputeCapability(Device(0), nullptr, &minor), NVML_ERROR_INVALID_ARGUMENT);

  unsigned int current = 7;
  unsigned int pending = 7;
  ASSERT_EQ(nvmlDeviceGetMigMode(Device(1), &current, &pending), NVML_SUCCESS);
  EXPECT_EQ(current, static_cast<unsigned int>(NVML_DEVICE_MIG_DISABLE));
  EXPECT_EQ(pending, static_cast<unsigned int>(NVML_DEVICE_MIG_DISABLE));
  EXPECT_EQ(nvmlDeviceGetMigMode(Device(1), nullptr, &pending), NVML_ERROR_INVALID_ARGUMENT);

  unsigned int value = 0;
  ASSERT_EQ(nvmlDeviceGetTemperature(Device(0), NVML_TEMPERATURE_GPU, &value), NVML_SUCCESS);
  EXPECT_EQ(value, kIdleCelsius) << "an idle device";
  EXPECT_EQ(nvmlDeviceGetTemperature(Device(0), NVML_TEMPERATURE_GPU, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvmlDeviceGetTemperature(Device(0), NVML_TEMPERATURE_COUNT, &value), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvmlDeviceGetPowerUsage(Device(0), &value), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvmlDeviceGetPowerUsage(Device(0), nullptr), NVML_ERROR_INVALID_ARGUMENT);
}

// Architecture, cores, clocks and PCIe link of an A100 (8.0) and an H100 (9.0).
TEST_F(DeviceTest, ChipAndBoard) {
  struct Expected {
    unsigned int device;
    nvmlDeviceArchitecture_t architecture;
    unsigned int cores;
    unsigned int graphics_mhz;
    unsigned int memory_mhz;
    unsigned int pcie_generation;
  };
  for (const Expected& e : {Expected{0, NVML_DEVICE_ARCH_AMPERE, 64 * 132, 1410, 1593, 4},
                            Expected{2, NVML_DEVICE_ARCH_HOPPER, 128 * 132, 1980, 2619, 5}}) {
    SCOPED_TRACE(e.device);
    nvmlDeviceArchitecture_t architecture = 0;
    ASSERT_EQ(nvmlDeviceGetArchitecture(Device(e.device), &architecture), NVML_SUCCESS);
    EXPECT_EQ(architecture, e.architecture);
    unsigned int value = 0;
    ASSERT_EQ(nvmlDeviceGetNumGpuCores(Device(e.device), &value), NVML_SUCCESS);
    EXPECT_EQ(value, e.cores);
    for (auto get : {nvmlDeviceGetClockInfo, nvmlDeviceGetMaxClockInfo}) {
      ASSERT_EQ(get(Device(e.device), NVML_CLOCK_GRAPHICS, &value), NVML_SUCCESS);
      EXPECT_EQ(value, e.graphics_mhz);
      ASSERT_EQ(get(Device(e.device), NVML_CLOCK_SM, &value), NVML_SUCCESS);
      EXPECT_EQ(value, e.graphics_mhz);
      ASSERT_EQ(get(Device(e.device), NVML_CLOCK_MEM, &value), NVML_SUCCESS);
      EXPECT_EQ(value, e.memory_mhz);
      EXPECT_EQ(get(Device(e.device), NVML_CLOCK_VIDEO, &value), NVML_ERROR_NOT_SUPPORTED) << "no video engines";
      EXPECT_EQ(get(Device(e.device), NVML_CLOCK_COUNT, &value), NVML_ERROR_INVALID_ARGUMENT);
      EXPECT_EQ(get(Device(e.device), NVML_CLOCK_GRAPHICS, nullptr), NVML_ERROR_INVALID_ARGUMENT);
    }
    for (auto get : {nvmlDeviceGetCurrPcieLinkGeneration, nvmlDeviceGetMaxPcieLinkGeneration}) {
      ASSERT_EQ(get(Device(e.device), &value), NVML_SUCCESS);
      EXPECT_EQ(value, e.pcie_generation);
      EXPECT_EQ(get(Device(e.device), nullptr), NVML_ERROR_INVALID_ARGUMENT);
    }
    for (auto get : {nvmlDeviceGetCurrPcieLinkWidth, nvmlDeviceGetMaxPcieLinkWidth}) {
      ASSERT_EQ(get(Device(e.device), &value), NVML_SUCCESS);
      EXPECT_EQ(value, 16u);
      EXPECT_EQ(get(Device(e.device), nullptr), NVML_ERROR_INVALID_ARGUMENT);
    }
    value = 7;
    ASSERT_EQ(nvmlDeviceGetMultiGpuBoard(Device(e.device), &value), NVML_SUCCESS);
    EXPECT_EQ(value, 0u);
    EXPECT_EQ(nvmlDeviceGetArchitecture(Device(e.device), nullptr), NVML_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(nvmlDeviceGetNumGpuCores(Device(e.device), nullptr), NVML_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(nvmlDeviceGetMultiGpuBoard(Device(e.device), nullptr), NVML_ERROR_INVALID_ARGUMENT);
  }
}

// A capability without a reference board has an architecture and cores, but no clocks or link.
TEST_F(NvmlTest, CapabilityWithoutAReferenceBoard) {
  UseConfig(R"({"devices": [{"name": "NVIDIA A10", "sm_count": 72, "compute_capability": "8.6"},
                            {"name": "Some GPU", "compute_capability": "4.0"}]})");
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  nvmlDeviceArchitecture_t architecture = 0;
  ASSERT_EQ(nvmlDeviceGetArchitecture(Device(0), &architecture), NVML_SUCCESS);
  EXPECT_EQ(architecture, static_cast<nvmlDeviceArchitecture_t>(NVML_DEVICE_ARCH_AMPERE));
  unsigned int value = 0;
  ASSERT_EQ(nvmlDeviceGetNumGpuCores(Device(0), &value), NVML_SUCCESS);
  EXPECT_EQ(value, 128u * 72u);
  EXPECT_EQ(nvmlDeviceGetClockInfo(Device(0), NVML_CLOCK_GRAPHICS, &value), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvmlDeviceGetMaxPcieLinkGeneration(Device(0), &value), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvmlDeviceGetCurrPcieLinkWidth(Device(0), &value), NVML_ERROR_NOT_SUPPORTED);

  ASSERT_EQ(nvmlDeviceGetArchitecture(Device(1), &architecture), NVML_SUCCESS);
  EXPECT_EQ(architecture, static_cast<nvmlDeviceArchitecture_t>(NVML_DEVICE_ARCH_UNKNOWN));
  EXPECT_EQ(nvmlDeviceGetNumGpuCores(Device(1), &value), NVML_ERROR_NOT_SUPPORTED);
}

TEST(BoardModelTest, ArchitectureAndCoresFollowTheComputeCapability) {
  static_assert(ArchitectureFor(7, 0) == NVML_DEVICE_ARCH_VOLTA);
  static_assert(ArchitectureFor(7, 5) == NVML_DEVICE_ARCH_TURING);
  static_assert(ArchitectureFor(8, 0) == NVML_DEVICE_ARCH_AMPERE);
  static_assert(ArchitectureFor(8, 6) == NVML_DEVICE_ARCH_AMPERE);
  static_assert(ArchitectureFor(8, 7) == NVML_DEVICE_ARCH_T23X);
  static_assert(ArchitectureFor(8, 9) == NVML_DEVICE_ARCH_ADA);
  static_assert(ArchitectureFor(9, 0) == NVML_DEVICE_ARCH_HOPPER);
  static_assert(ArchitectureFor(10, 0) == NVML_DEVICE_ARCH_BLACKWELL);
  static_assert(ArchitectureFor(12, 0) == NVML_DEVICE_ARCH_BLACKWELL);
  static_assert(ArchitectureFor(1, 0) == NVML_DEVICE_ARCH_UNKNOWN);
  static_assert(CoresPerSm(6, 0) == 64 && CoresPerSm(6, 1) == 128);
  static_assert(CoresPerSm(8, 0) == 64 && CoresPerSm(8, 6) == 128 && CoresPerSm(9, 0) == 128);
  static_assert(CoresPerSm(2, 0) == 0);
  static_assert(TemperatureCelsius(0) == kIdleCelsius && TemperatureCelsius(100) == kBusyCelsius);
  static_assert(TemperatureCelsius(250) == kBusyCelsius, "utilization past 100% is clamped");
  EXPECT_FALSE(ReferenceBoard(8, 6).has_value());
  EXPECT_EQ(ReferenceBoard(7, 0)->max_graphics_mhz, 1530u);
}

// Events: sets, registration, and waits that time out (nothing ever happens on the simulator).
TEST_F(DeviceTest, EventSetsRegisterAndTimeOut) {
  unsigned long long supported = 0;
  ASSERT_EQ(nvmlDeviceGetSupportedEventTypes(Device(0), &supported), NVML_SUCCESS);
  EXPECT_EQ(supported, static_cast<unsigned long long>(nvmlEventTypeSingleBitEccError |
                                                        nvmlEventTypeDoubleBitEccError | nvmlEventTypePState |
                                                        nvmlEventTypeXidCriticalError | nvmlEventTypeClock));
  EXPECT_EQ(nvmlDeviceGetSupportedEventTypes(Device(0), nullptr), NVML_ERROR_INVALID_ARGUMENT);

  nvmlEventSet_t set = nullptr;
  ASSERT_EQ(nvmlEventSetCreate(&set), NVML_SUCCESS);
  ASSERT_NE(set, nullptr);
  EXPECT_EQ(nvmlEventSetCreate(nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvmlDeviceRegisterEvents(Device(0), supported, set), NVML_SUCCESS);
  EXPECT_EQ(nvmlDeviceRegisterEvents(Device(1), nvmlEventTypeXidCriticalError, set), NVML_SUCCESS);
  EXPECT_EQ(nvmlDeviceRegisterEvents(Device(0), nvmlEventTypePowerSourceChange, set), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvmlDeviceRegisterEvents(Device(0), supported, nullptr), NVML_ERROR_INVALID_ARGUMENT);

  nvmlEventData_t data{};
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(nvmlEventSetWait_v2(set, &data, 50), NVML_ERROR_TIMEOUT);
  EXPECT_EQ(nvmlEventSetWait(set, &data, 0), NVML_ERROR_TIMEOUT);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(50)) << "waits its timeout";
  EXPECT_EQ(nvmlEventSetWait_v2(set, nullptr, 0), NVML_ERROR_INVALID_ARGUMENT);

  nvmlEventSet_t other = nullptr;
  ASSERT_EQ(nvmlEventSetCreate(&other), NVML_SUCCESS);
  EXPECT_NE(other, set);
  EXPECT_EQ(nvmlEventSetFree(set), NVML_SUCCESS);
  EXPECT_EQ(nvmlEventSetFree(set), NVML_ERROR_INVALID_ARGUMENT) << "a freed set is not dereferenced";
  EXPECT_EQ(nvmlEventSetWait_v2(set, &data, 0), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvmlDeviceRegisterEvents(Device(0), supported, set), NVML_ERROR_INVALID_ARGUMENT);
  int local = 0;
  EXPECT_EQ(nvmlEventSetFree(reinterpret_cast<nvmlEventSet_t>(&local)), NVML_ERROR_INVALID_ARGUMENT);

  ASSERT_EQ(nvmlShutdown(), NVML_SUCCESS);
  EXPECT_EQ(nvmlEventSetWait_v2(other, &data, 0), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvmlEventSetCreate(&set), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvmlEventSetFree(other), NVML_ERROR_UNINITIALIZED);
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  EXPECT_EQ(nvmlEventSetFree(other), NVML_SUCCESS) << "sets outlive a shutdown";
}

TEST_F(DeviceTest, HandlesWeDidNotReturnAreRejectedWithoutACrash) {
  const auto first = reinterpret_cast<uintptr_t>(Device(0));
  const uintptr_t stride = reinterpret_cast<uintptr_t>(Device(1)) - first;
  int local = 0;
  const nvmlDevice_t bad[] = {
      nullptr,
      reinterpret_cast<nvmlDevice_t>(uintptr_t{0x10}),
      reinterpret_cast<nvmlDevice_t>(~uintptr_t{0}),
      reinterpret_cast<nvmlDevice_t>(&local),
      reinterpret_cast<nvmlDevice_t>(first + 1),           // inside a slot
      reinterpret_cast<nvmlDevice_t>(first + 3 * stride),  // a slot past the device count
      reinterpret_cast<nvmlDevice_t>(first - stride),
  };
  for (nvmlDevice_t handle : bad) {
    char text[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    unsigned int value = 0;
    nvmlMemory_t memory{};
    nvmlUtilization_t utilization{};
    nvmlPciInfo_t pci{};
    EXPECT_EQ(nvmlDeviceGetName(handle, text, sizeof(text)), NVML_ERROR_INVALID_ARGUMENT) << handle;
    EXPECT_EQ(nvmlDeviceGetUUID(handle, text, sizeof(text)), NVML_ERROR_INVALID_ARGUMENT) << handle;
    EXPECT_EQ(nvmlDeviceGetIndex(handle, &value), NVML_ERROR_INVALID_ARGUMENT) << handle;
    EXPECT_EQ(nvmlDeviceGetPciInfo_v3(handle, &pci), NVML_ERROR_INVALID_ARGUMENT) << handle;
    EXPECT_EQ(nvmlDeviceGetMemoryInfo(handle, &memory), NVML_ERROR_INVALID_ARGUMENT) << handle;
    EXPECT_EQ(nvmlDeviceGetUtilizationRates(handle, &utilization), NVML_ERROR_INVALID_ARGUMENT) << handle;
    EXPECT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(handle, &value, nullptr), NVML_ERROR_INVALID_ARGUMENT)
        << handle;
    EXPECT_EQ(nvmlDeviceGetMigMode(handle, &value, &value), NVML_ERROR_INVALID_ARGUMENT) << handle;
    EXPECT_EQ(nvmlDeviceGetTemperature(handle, NVML_TEMPERATURE_GPU, &value), NVML_ERROR_INVALID_ARGUMENT) << handle;
    EXPECT_EQ(nvmlDeviceGetClockInfo(handle, NVML_CLOCK_GRAPHICS, &value), NVML_ERROR_INVALID_ARGUMENT) << handle;
    EXPECT_EQ(nvmlDeviceGetCurrPcieLinkGeneration(handle, &value), NVML_ERROR_INVALID_ARGUMENT) << handle;
    EXPECT_EQ(nvmlDeviceGetNumGpuCores(handle, &value), NVML_ERROR_INVALID_ARGUMENT) << handle;
    nvmlDeviceArchitecture_t architecture = 0;
    EXPECT_EQ(nvmlDeviceGetArchitecture(handle, &architecture), NVML_ERROR_INVALID_ARGUMENT) << handle;
    EXPECT_EQ(nvmlDeviceGetMultiGpuBoard(handle, &value), NVML_ERROR_INVALID_ARGUMENT) << handle;
    unsigned long long types = 0;
    EXPECT_EQ(nvmlDeviceGetSupportedEventTypes(handle, &types), NVML_ERROR_INVALID_ARGUMENT) << handle;
  }
}

}  // namespace
}  // namespace fgpu::sim::nvml
