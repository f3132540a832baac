// The memory hook end to end: the real fgpu-probe under LD_PRELOAD=libfgpu.so on a simulated
// 8 GiB GPU (2 MiB granularity, 300 MiB per context) with a 1 GiB slice of it. Every allocation
// API x every way of reaching the driver must stop at the cap minus the measured context
// overhead, the simulator (read without the hook) must agree, and the virtual view must show
// the slice.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hook/memory/memory_process_support.h"
#include "slice/slice.h"

namespace fgpu::hook {
namespace {

using testing::BackgroundProcess;
using testing::FindEvent;
using testing::kMiBytes;
using testing::PhysicalUsage;
using testing::SimMachine;
using testing::SliceUsed;

constexpr const char* kMatrixUuid = "GPU-4d454d4f-5259-4d41-5452-495800000001";
constexpr const char* kOtherUuid = "GPU-4d454d4f-5259-4d41-5452-495800000002";
constexpr uint64_t kMatrixCap = 1024 * kMiBytes;
constexpr uint64_t kMatrixContext = 300 * kMiBytes;
constexpr uint64_t kMatrixGranule = 2 * kMiBytes;
constexpr uint64_t kChunk = 64 * kMiBytes;
constexpr uint64_t kDeviceMemory = 8192 * kMiBytes;
constexpr int kHoldMs = 30000;  // holders are killed once observed

std::string OneMatrixDevice() {
  return std::string(R"([{"uuid": ")") + kMatrixUuid +
         R"(", "memory": "8GiB", "granularity": "2MiB", "context_overhead": "300MiB"}])";
}

// What a fill of 64 MiB chunks gets into `room` bytes.
uint64_t Fill(uint64_t room) { return room / kChunk * kChunk; }

class MemoryMatrixTest : public ::testing::Test {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_THREAD__)
    // A ThreadSanitizer runtime must start before anything else in the process, which a
    // preloaded library cannot arrange: the probe would crash before the hook ran.
    GTEST_SKIP() << "LD_PRELOAD of a ThreadSanitizer-instrumented libfgpu.so is not supported";
#endif
  }
};

TEST_F(MemoryMatrixTest, EveryApiThroughEveryLookupStopsAtTheCap) {
  const std::vector<std::string> apis = {"mem_alloc", "pitch",   "managed",   "vmm",     "async",
                                         "pool",      "array",   "array3d",   "mipmapped", "external"};
  const std::vector<std::string> lookups = {"direct", "dlsym", "procaddress", "procaddress_v2"};
  const uint64_t allocated = Fill(kMatrixCap - kMatrixContext);
  for (const std::string& api : apis) {
    for (const std::string& lookup : lookups) {
      SCOPED_TRACE("--api " + api + " --lookup " + lookup);
      SimMachine machine(OneMatrixDevice());
      const std::string slice_dir = machine.CreateSlice("slice", kMatrixUuid, kMatrixCap);
      std::unique_ptr<BackgroundProcess> holder =
          machine.Probe({"--lookup", lookup, "fill", "--api", api, "--chunk", "64MiB", "--hold-ms",
                         std::to_string(kHoldMs)},
                        machine.HookedEnv(slice_dir));
      ASSERT_TRUE(holder->WaitForEvent("mem_get_info")) << holder->Stderr();
      const nlohmann::json fill = holder->Event("fill");
      EXPECT_EQ(fill["stop_error"], "CUDA_ERROR_OUT_OF_MEMORY") << fill.dump();
      EXPECT_EQ(fill["allocated_bytes"].get<uint64_t>(), allocated) << fill.dump();
      // The view from inside the filled slice.
      const nlohmann::json view = holder->Event("mem_get_info");
      EXPECT_EQ(view["total"].get<uint64_t>(), kMatrixCap);
      EXPECT_EQ(view["free"].get<uint64_t>(), kMatrixCap - kMatrixContext - allocated);
      // What the simulated GPU really gave the process.
      const uint64_t physical = PhysicalUsage(machine, holder->pid());
      EXPECT_LE(physical, kMatrixCap + kMatrixGranule + kMatrixContext);
      EXPECT_EQ(physical, kMatrixContext + allocated);
      EXPECT_EQ(SliceUsed(slice_dir), kMatrixContext + allocated) << "the ledger agrees with the device";
      holder->Kill();
    }
  }
}

TEST_F(MemoryMatrixTest, EveryViewShowsTheSlice) {
  SimMachine machine(OneMatrixDevice());
  const std::string slice_dir = machine.CreateSlice("slice", kMatrixUuid, kMatrixCap);
  int exit_code = -1;
  nlohmann::json info =
      FindEvent(machine.RunProbe({"info"}, machine.HookedEnv(slice_dir), &exit_code), "info");
  ASSERT_EQ(exit_code, 0);
  EXPECT_EQ(info["total_mem"].get<uint64_t>(), kMatrixCap) << "cuDeviceTotalMem_v2";
  EXPECT_EQ(info["mem_get_info"]["total"].get<uint64_t>(), kMatrixCap);
  EXPECT_EQ(info["mem_get_info"]["free"].get<uint64_t>(), kMatrixCap - kMatrixContext) << "its own context is used";
  ASSERT_TRUE(info["nvml"]["available"].get<bool>()) << info.dump();
  EXPECT_EQ(info["nvml"]["memory"]["total"].get<uint64_t>(), kMatrixCap);
  EXPECT_EQ(info["nvml"]["memory"]["used"].get<uint64_t>(), kMatrixContext);
  EXPECT_EQ(info["nvml"]["memory"]["free"].get<uint64_t>(), kMatrixCap - kMatrixContext);

  // Another process of the slice holds 4 x 64 MiB: every view counts it.
  std::unique_ptr<BackgroundProcess> holder =
      machine.Probe({"alloc", "--bytes", "64MiB", "--count", "4", "--hold-ms", std::to_string(kHoldMs)},
                    machine.HookedEnv(slice_dir));
  ASSERT_TRUE(holder->WaitForEvent("mem_get_info")) << holder->Stderr();
  const uint64_t held = kMatrixContext + 4 * kChunk;
  EXPECT_EQ(holder->Event("mem_get_info")["free"].get<uint64_t>(), kMatrixCap - held);
  info = FindEvent(machine.RunProbe({"info"}, machine.HookedEnv(slice_dir), &exit_code), "info");
  ASSERT_EQ(exit_code, 0);
  EXPECT_EQ(info["mem_get_info"]["total"].get<uint64_t>(), kMatrixCap);
  EXPECT_EQ(info["mem_get_info"]["free"].get<uint64_t>(), kMatrixCap - held - kMatrixContext);
  EXPECT_EQ(info["nvml"]["memory"]["used"].get<uint64_t>(), held + kMatrixContext);
  EXPECT_EQ(info["nvml"]["memory"]["free"].get<uint64_t>(), kMatrixCap - held - kMatrixContext);

  // Without the hook: the whole device.
  info = FindEvent(machine.RunProbe({"info"}, machine.SimEnv(), &exit_code), "info");
  EXPECT_EQ(info["total_mem"].get<uint64_t>(), kDeviceMemory);
  EXPECT_EQ(info["nvml"]["memory"]["total"].get<uint64_t>(), kDeviceMemory);
}

TEST_F(MemoryMatrixTest, ProcessesOfOneSliceShareTheCap) {
  SimMachine machine(OneMatrixDevice());
  const std::string slice_dir = machine.CreateSlice("slice", kMatrixUuid, kMatrixCap);
  std::unique_ptr<BackgroundProcess> holder =
      machine.Probe({"alloc", "--bytes", "64MiB", "--count", "4", "--hold-ms", std::to_string(kHoldMs)},
                    machine.HookedEnv(slice_dir));
  ASSERT_TRUE(holder->WaitForEvent("mem_get_info")) << holder->Stderr();
  const uint64_t held = kMatrixContext + 4 * kChunk;
  int exit_code = -1;
  const std::vector<nlohmann::json> events =
      machine.RunProbe({"fill", "--chunk", "64MiB"}, machine.HookedEnv(slice_dir), &exit_code);
  EXPECT_EQ(exit_code, 0);
  const nlohmann::json fill = FindEvent(events, "fill");
  EXPECT_EQ(fill["allocated_bytes"].get<uint64_t>(), Fill(kMatrixCap - held - kMatrixContext)) << fill.dump();
  EXPECT_EQ(FindEvent(events, "mem_get_info")["free"].get<uint64_t>(),
            kMatrixCap - held - kMatrixContext - Fill(kMatrixCap - held - kMatrixContext));
}

TEST_F(MemoryMatrixTest, LiveResize) {
  SimMachine machine(OneMatrixDevice());
  const std::string slice_dir = machine.CreateSlice("slice", kMatrixUuid, kMatrixCap);
  std::unique_ptr<BackgroundProcess> holder =
      machine.Probe({"alloc", "--bytes", "64MiB", "--count", "4", "--hold-ms", std::to_string(kHoldMs)},
                    machine.HookedEnv(slice_dir));
  ASSERT_TRUE(holder->WaitForEvent("mem_get_info")) << holder->Stderr();
  const uint64_t held = kMatrixContext + 4 * kChunk;
  Result<slice::SliceAdmin> admin = slice::SliceAdmin::Open(slice_dir);
  ASSERT_TRUE(admin.ok()) << admin.status().message();

  // Shrunk to leave a newcomer room for its context but not for one more chunk.
  const uint64_t shrunk = held + kMatrixContext + kChunk - kMatrixGranule;
  ASSERT_TRUE(admin->SetMemoryCap(0, shrunk).ok());
  int exit_code = -1;
  std::vector<nlohmann::json> events =
      machine.RunProbe({"fill", "--chunk", "64MiB"}, machine.HookedEnv(slice_dir), &exit_code);
  nlohmann::json fill = FindEvent(events, "fill");
  EXPECT_EQ(fill["allocations"].get<uint64_t>(), 0u) << fill.dump();
  EXPECT_EQ(fill["stop_error"], "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(fill["stop_call"], "cuMemAlloc_v2");
  EXPECT_EQ(FindEvent(events, "mem_get_info")["total"].get<uint64_t>(), shrunk);

  // Grown: the next allocations succeed at once.
  const uint64_t grown = 2048 * kMiBytes;
  ASSERT_TRUE(admin->SetMemoryCap(0, grown).ok());
  events = machine.RunProbe({"fill", "--chunk", "64MiB"}, machine.HookedEnv(slice_dir), &exit_code);
  fill = FindEvent(events, "fill");
  EXPECT_EQ(exit_code, 0);
  EXPECT_EQ(fill["allocated_bytes"].get<uint64_t>(), Fill(grown - held - kMatrixContext)) << fill.dump();
  EXPECT_EQ(FindEvent(events, "mem_get_info")["total"].get<uint64_t>(), grown);
}

TEST_F(MemoryMatrixTest, KillSwitchLiftsTheCap) {
  SimMachine machine(OneMatrixDevice());
  const std::string slice_dir = machine.CreateSlice("slice", kMatrixUuid, kMatrixCap);
  int exit_code = -1;
  const std::vector<nlohmann::json> events =
      machine.RunProbe({"fill", "--chunk", "64MiB", "--hold-ms", "0"},
                       machine.HookedEnv(slice_dir, {"FGPU_DISABLE=1"}), &exit_code);
  EXPECT_EQ(exit_code, 0);
  EXPECT_EQ(FindEvent(events, "fill")["allocated_bytes"].get<uint64_t>(), Fill(kDeviceMemory - kMatrixContext));
  EXPECT_EQ(FindEvent(events, "mem_get_info")["total"].get<uint64_t>(), kDeviceMemory);
  EXPECT_EQ(SliceUsed(slice_dir), 0u) << "nothing charged";
}

TEST_F(MemoryMatrixTest, ChargesReturnWhenAProcessFreesAndExits) {
  SimMachine machine(OneMatrixDevice());
  const std::string slice_dir = machine.CreateSlice("slice", kMatrixUuid, kMatrixCap);
  for (const std::string api : {"mem_alloc", "vmm", "pool", "mipmapped"}) {
    int exit_code = -1;
    machine.RunProbe({"alloc", "--api", api, "--bytes", "100MiB", "--count", "3"},
                     machine.HookedEnv(slice_dir), &exit_code);
    EXPECT_EQ(exit_code, 0) << api;
    EXPECT_EQ(SliceUsed(slice_dir), 0u)
        << api << ": frees and the primary context's release credited everything";
  }
}

// CUDA ordinals are translated by UUID: with the devices reordered, ordinal 0 is the slice's GPU
// and ordinal 1 a GPU outside the slice, on which nothing can be allocated (fail closed).
TEST_F(MemoryMatrixTest, ReorderedAndUuidVisibleDevicesChargeTheRightGpu) {
  SimMachine machine(std::string(R"([{"uuid": ")") + kOtherUuid +
                     R"(", "memory": "8GiB", "context_overhead": "300MiB"}, {"uuid": ")" + kMatrixUuid +
                     R"(", "memory": "8GiB", "context_overhead": "300MiB"}])");
  const std::string slice_dir = machine.CreateSlice("slice", kMatrixUuid, kMatrixCap);
  for (const std::string& visible : {std::string("1,0"), std::string(kMatrixUuid)}) {
    SCOPED_TRACE("CUDA_VISIBLE_DEVICES=" + visible);
    int exit_code = -1;
    std::vector<nlohmann::json> events =
        machine.RunProbe({"--device", "0", "fill", "--chunk", "64MiB"},
                         machine.HookedEnv(slice_dir, {"CUDA_VISIBLE_DEVICES=" + visible}), &exit_code);
    EXPECT_EQ(exit_code, 0);
    EXPECT_EQ(FindEvent(events, "fill")["allocated_bytes"].get<uint64_t>(), Fill(kMatrixCap - kMatrixContext));
  }
  int exit_code = -1;
  std::vector<nlohmann::json> events =
      machine.RunProbe({"--device", "1", "fill", "--chunk", "64MiB"},
                       machine.HookedEnv(slice_dir, {"CUDA_VISIBLE_DEVICES=1,0"}), &exit_code);
  EXPECT_EQ(exit_code, 1);
  const nlohmann::json error = FindEvent(events, "error");
  EXPECT_EQ(error["call"], "cuDevicePrimaryCtxRetain") << error.dump();
  EXPECT_EQ(error["name"], "CUDA_ERROR_OUT_OF_MEMORY");
}

}  // namespace
}  // namespace fgpu::hook
