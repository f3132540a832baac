// Initialisation, shutdown, error strings, system queries and the exported symbol set.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "sim/nvml/nvml_test_env.h"
#include "sim/state/segment_layout.h"

namespace fgpu::sim::nvml {
namespace {

using InitTest = NvmlTest;

int CountLines(const std::string& text) {
  int lines = 0;
  for (char c : text) lines += c == '\n' ? 1 : 0;
  return lines;
}

// Writes `size` bytes at `offset` of the shared memory segment `name`, creating it.
bool WriteSegmentBytes(const std::string& name, off_t offset, const void* data, size_t size) {
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0) return false;
  const bool ok = ::pwrite(fd, data, size, offset) == static_cast<ssize_t>(size);
  ::close(fd);
  return ok;
}

struct InitFailure {
  nvmlReturn_t rc;
  std::string stderr_text;
};

InitFailure InitCapturingStderr() {
  StderrCapture capture;
  const nvmlReturn_t rc = nvmlInit_v2();
  return {rc, capture.Finish()};
}

TEST_F(InitTest, DeviceAndDriverCallsBeforeInitAreUninitialized) {
  unsigned int count = 0;
  EXPECT_EQ(nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvmlDeviceGetCount(&count), NVML_ERROR_UNINITIALIZED);
  nvmlDevice_t device = nullptr;
  EXPECT_EQ(nvmlDeviceGetHandleByIndex_v2(0, &device), NVML_ERROR_UNINITIALIZED);
  nvmlMemory_t memory{};
  EXPECT_EQ(nvmlDeviceGetMemoryInfo(nullptr, &memory), NVML_ERROR_UNINITIALIZED);
  char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
  EXPECT_EQ(nvmlSystemGetDriverVersion(version, sizeof(version)), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
}

TEST_F(InitTest, VersionQueriesThatNeedNoInit) {
  int cuda = 0;
  EXPECT_EQ(nvmlSystemGetCudaDriverVersion(&cuda), NVML_SUCCESS);
  EXPECT_EQ(cuda, 13000);
  cuda = 0;
  EXPECT_EQ(nvmlSystemGetCudaDriverVersion_v2(&cuda), NVML_SUCCESS);
  EXPECT_EQ(cuda, 13000);
  EXPECT_EQ(nvmlSystemGetCudaDriverVersion_v2(nullptr), NVML_ERROR_INVALID_ARGUMENT);
  char version[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE];
  ASSERT_EQ(nvmlSystemGetNVMLVersion(version, sizeof(version)), NVML_SUCCESS);
  EXPECT_EQ(std::string(version).rfind("13.", 0), 0u) << version;
  EXPECT_EQ(nvmlSystemGetNVMLVersion(version, 3), NVML_ERROR_INSUFFICIENT_SIZE);
}

TEST_F(InitTest, DriverVersionIsClearlySimulated) {
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
  ASSERT_EQ(nvmlSystemGetDriverVersion(version, sizeof(version)), NVML_SUCCESS);
  EXPECT_EQ(std::string(version), "580.00.00-fgpu-sim");
  EXPECT_EQ(nvmlSystemGetDriverVersion(version, 5), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(nvmlSystemGetDriverVersion(nullptr, 80), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(InitTest, InitIsReferenceCounted) {
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  unsigned int count = 0;
  EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS);
  EXPECT_EQ(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS) << "one init is still outstanding";
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS);
  EXPECT_EQ(nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
}

TEST_F(InitTest, EveryInitVariantCounts) {
  ASSERT_EQ(nvmlInit(), NVML_SUCCESS);
  ASSERT_EQ(nvmlInitWithFlags(NVML_INIT_FLAG_NO_GPUS), NVML_SUCCESS);
  ASSERT_EQ(nvmlInitWithFlags(0), NVML_SUCCESS);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS) << i;
  EXPECT_EQ(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
}

TEST_F(InitTest, HandlesSurviveShutdownAndReinit) {
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  nvmlDevice_t before = Device(0);
  ASSERT_EQ(nvmlShutdown(), NVML_SUCCESS);
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  EXPECT_EQ(nvmlDeviceGetName(before, name, sizeof(name)), NVML_ERROR_UNINITIALIZED);
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  EXPECT_EQ(Device(0), before);
  EXPECT_EQ(nvmlDeviceGetName(before, name, sizeof(name)), NVML_SUCCESS);
}

TEST_F(InitTest, MissingConfigFailsInitWithOneStderrLine) {
  ASSERT_EQ(::setenv(kConfigEnv, "/nonexistent", 1), 0);
  StderrCapture capture;
  const nvmlReturn_t rc = nvmlInit_v2();
  const std::string err = capture.Finish();
  EXPECT_EQ(rc, NVML_ERROR_DRIVER_NOT_LOADED);
  EXPECT_EQ(CountLines(err), 1) << err;
  EXPECT_EQ(err.rfind("fgpu-sim: ", 0), 0u) << err;
  EXPECT_NE(err.find("/nonexistent"), std::string::npos) << err;
  unsigned int count = 0;
  EXPECT_EQ(nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvmlShutdown(), NVML_ERROR_UNINITIALIZED) << "a failed init is not counted";
}

TEST_F(InitTest, CorruptConfigFailsInitNamingTheProblem) {
  UseConfig("{\"devices\": [{\"name\": \"X\", \"memroy\": \"1GiB\"}]}");
  StderrCapture capture;
  const nvmlReturn_t rc = nvmlInit_v2();
  const std::string err = capture.Finish();
  EXPECT_EQ(rc, NVML_ERROR_DRIVER_NOT_LOADED);
  EXPECT_EQ(CountLines(err), 1) << err;
  EXPECT_EQ(err.rfind("fgpu-sim: ", 0), 0u) << err;
  EXPECT_NE(err.find("memroy"), std::string::npos) << err;

  UseConfig("{ not json");
  StderrCapture second;
  EXPECT_EQ(nvmlInit_v2(), NVML_ERROR_DRIVER_NOT_LOADED);
  EXPECT_EQ(CountLines(second.Finish()), 1);
}

TEST_F(InitTest, InitRetriesAfterTheEnvironmentIsFixed) {
  ASSERT_EQ(::setenv(kConfigEnv, "/nonexistent", 1), 0);
  {
    StderrCapture quiet;
    ASSERT_EQ(nvmlInit_v2(), NVML_ERROR_DRIVER_NOT_LOADED);
  }
  UseConfig("{\"devices\": [{\"count\": 2}]}");
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  unsigned int count = 0;
  EXPECT_EQ(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 2u);
}

TEST_F(InitTest, SegmentOfAnotherConfigurationIsRefused) {
  UseConfig("{\"devices\": [{\"count\": 1}]}");
  auto first = AttachFromEnvironment();  // keeps the segment alive with the first layout
  ASSERT_TRUE(first.ok()) << first.status().message();
  UseConfig("{\"devices\": [{\"count\": 2}]}");
  StderrCapture capture;
  const nvmlReturn_t rc = nvmlInit_v2();
  const std::string err = capture.Finish();
  EXPECT_EQ(rc, NVML_ERROR_DRIVER_NOT_LOADED);
  EXPECT_NE(err.find(segment()), std::string::npos) << "names the segment: " << err;
  EXPECT_EQ(CountLines(err), 1) << err;
  EXPECT_EQ(err.rfind("fgpu-sim: ", 0), 0u) << err;
}

TEST_F(InitTest, SegmentOfAnotherLayoutVersionIsAVersionMismatch) {
  {
    auto creator = AttachFromEnvironment();
    ASSERT_TRUE(creator.ok()) << creator.status().message();
  }
  // The first 16 bytes keep their offsets in every layout version (segment_layout.h).
  const uint32_t other_version = layout::kSegmentVersion + 1;
  ASSERT_TRUE(WriteSegmentBytes(segment(), offsetof(layout::SegmentHeader, layout_version), &other_version,
                                sizeof(other_version)));
  const InitFailure failure = InitCapturingStderr();
  EXPECT_EQ(failure.rc, NVML_ERROR_LIB_RM_VERSION_MISMATCH);
  EXPECT_EQ(CountLines(failure.stderr_text), 1) << failure.stderr_text;
  EXPECT_EQ(failure.stderr_text.rfind("fgpu-sim: ", 0), 0u) << failure.stderr_text;
  EXPECT_NE(failure.stderr_text.find(segment()), std::string::npos) << failure.stderr_text;
}

TEST_F(InitTest, GarbageSegmentFailsInitWithoutACrash) {
  const std::string garbage(8192, 'Z');
  ASSERT_TRUE(WriteSegmentBytes(segment(), 0, garbage.data(), garbage.size()));
  const InitFailure failure = InitCapturingStderr();
  EXPECT_EQ(failure.rc, NVML_ERROR_UNKNOWN);
  EXPECT_EQ(CountLines(failure.stderr_text), 1) << failure.stderr_text;
  EXPECT_EQ(failure.stderr_text.rfind("fgpu-sim: ", 0), 0u) << failure.stderr_text;
}

TEST_F(InitTest, InvalidSegmentNameFailsInit) {
  ASSERT_EQ(::setenv(kSegmentEnv, "no-leading-slash", 1), 0);
  const InitFailure failure = InitCapturingStderr();
  EXPECT_EQ(failure.rc, NVML_ERROR_DRIVER_NOT_LOADED);
  EXPECT_EQ(CountLines(failure.stderr_text), 1) << failure.stderr_text;
  EXPECT_NE(failure.stderr_text.find("no-leading-slash"), std::string::npos) << failure.stderr_text;
}

TEST_F(InitTest, ConcurrentInitQueryShutdownIsSafe) {
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);  // keeps the state attached throughout
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        if (nvmlInit_v2() != NVML_SUCCESS) ++failures;
        unsigned int count = 0;
        if (nvmlDeviceGetCount_v2(&count) != NVML_SUCCESS || count != 1) ++failures;
        nvmlDevice_t device = nullptr;
        nvmlMemory_t memory{};
        if (nvmlDeviceGetHandleByIndex_v2(0, &device) != NVML_SUCCESS ||
            nvmlDeviceGetMemoryInfo(device, &memory) != NVML_SUCCESS) {
          ++failures;
        }
        if (nvmlShutdown() != NVML_SUCCESS) ++failures;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS);
  EXPECT_EQ(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
}

TEST(ErrorStringTest, EveryCodeHasItsOwnString) {
  const nvmlReturn_t codes[] = {
      NVML_SUCCESS, NVML_ERROR_UNINITIALIZED, NVML_ERROR_INVALID_ARGUMENT, NVML_ERROR_NOT_SUPPORTED,
      NVML_ERROR_NO_PERMISSION, NVML_ERROR_ALREADY_INITIALIZED, NVML_ERROR_NOT_FOUND,
      NVML_ERROR_INSUFFICIENT_SIZE, NVML_ERROR_INSUFFICIENT_POWER, NVML_ERROR_DRIVER_NOT_LOADED,
      NVML_ERROR_TIMEOUT, NVML_ERROR_IRQ_ISSUE, NVML_ERROR_LIBRARY_NOT_FOUND, NVML_ERROR_FUNCTION_NOT_FOUND,
      NVML_ERROR_CORRUPTED_INFOROM, NVML_ERROR_GPU_IS_LOST, NVML_ERROR_RESET_REQUIRED,
      NVML_ERROR_OPERATING_SYSTEM, NVML_ERROR_LIB_RM_VERSION_MISMATCH, NVML_ERROR_IN_USE, NVML_ERROR_MEMORY,
      NVML_ERROR_NO_DATA, NVML_ERROR_VGPU_ECC_NOT_SUPPORTED, NVML_ERROR_INSUFFICIENT_RESOURCES,
      NVML_ERROR_FREQ_NOT_SUPPORTED, NVML_ERROR_ARGUMENT_VERSION_MISMATCH, NVML_ERROR_DEPRECATED,
      NVML_ERROR_NOT_READY, NVML_ERROR_GPU_NOT_FOUND, NVML_ERROR_INVALID_STATE, NVML_ERROR_UNKNOWN};
  std::set<std::string> seen;
  for (nvmlReturn_t code : codes) {
    const char* text = nvmlErrorString(code);
    ASSERT_NE(text, nullptr) << code;
    EXPECT_TRUE(seen.insert(text).second) << "duplicate string for " << code << ": " << text;
  }
  EXPECT_EQ(nvmlErrorString(NVML_SUCCESS), std::string("Success"));
  EXPECT_EQ(nvmlErrorString(static_cast<nvmlReturn_t>(1000)), std::string("Unknown Error"));
}

TEST(ExportsTest, EveryEntryPointIsExportedUnderItsOwnName) {
  void* library = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(library, nullptr) << "the test links the simulated library: " << ::dlerror();
  const char* names[] = {
      "nvmlInit", "nvmlInit_v2", "nvmlInitWithFlags", "nvmlShutdown", "nvmlErrorString",
      "nvmlSystemGetDriverVersion", "nvmlSystemGetNVMLVersion", "nvmlSystemGetCudaDriverVersion",
      "nvmlSystemGetCudaDriverVersion_v2", "nvmlDeviceGetCount", "nvmlDeviceGetCount_v2",
      "nvmlDeviceGetHandleByIndex", "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByUUID",
      "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetName", "nvmlDeviceGetUUID", "nvmlDeviceGetIndex",
      "nvmlDeviceGetMinorNumber", "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetCudaComputeCapability",
      "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetComputeRunningProcesses",
      "nvmlDeviceGetComputeRunningProcesses_v2", "nvmlDeviceGetComputeRunningProcesses_v3",
      "nvmlDeviceGetGraphicsRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses_v2",
      "nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetMPSComputeRunningProcesses",
      "nvmlDeviceGetMPSComputeRunningProcesses_v2", "nvmlDeviceGetMPSComputeRunningProcesses_v3",
      "nvmlDeviceGetUtilizationRates", "nvmlDeviceGetProcessUtilization",
      "nvmlDeviceGetProcessesUtilizationInfo", "nvmlDeviceGetMigMode", "nvmlDeviceGetTemperature",
      "nvmlDeviceGetPowerUsage", "nvmlDeviceGetClockInfo", "nvmlDeviceGetMaxClockInfo",
      "nvmlDeviceGetCurrPcieLinkGeneration", "nvmlDeviceGetCurrPcieLinkWidth", "nvmlDeviceGetMaxPcieLinkGeneration",
      "nvmlDeviceGetMaxPcieLinkWidth", "nvmlDeviceGetNumGpuCores", "nvmlDeviceGetArchitecture",
      "nvmlDeviceGetMultiGpuBoard", "nvmlEventSetCreate", "nvmlDeviceRegisterEvents",
      "nvmlDeviceGetSupportedEventTypes", "nvmlEventSetWait", "nvmlEventSetWait_v2", "nvmlEventSetFree"};
  std::set<void*> addresses;
  for (const char* name : names) {
    void* symbol = ::dlsym(library, name);
    EXPECT_NE(symbol, nullptr) << name;
    addresses.insert(symbol);
  }
  EXPECT_EQ(addresses.size(), std::size(names)) << "v1 and versioned variants are distinct functions";
  EXPECT_EQ(::dlsym(library, "_ZN4fgpu3sim4nvml7Library3GetEv"), nullptr) << "internals stay hidden";
  ::dlclose(library);
}

}  // namespace
}  // namespace fgpu::sim::nvml
