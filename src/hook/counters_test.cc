// The slice ledger's counters as the interposer keeps them (docs/hook.md "Counters"): real
// programs under LD_PRELOAD=libfgpu.so on the simulated GPU (or, for unknown variants, a driver
// newer than this fgpu), each counter proven to move in the case it names and to stay 0 in the
// others.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/abi/cuda_types.h"
#include "hook/memory/memory_process_support.h"
#include "slice/ledger_counters_print.h"
#include "slice/process_liveness.h"
#include "slice/slice.h"

namespace fgpu::hook {
namespace {

using slice::LedgerCounters;
using testing::BackgroundProcess;
using testing::FindEvent;
using testing::kMiBytes;
using testing::SimMachine;

constexpr const char* kUuid = "GPU-636f756e-7465-7273-0000-000000000001";
constexpr uint64_t kCap = 1024 * kMiBytes;

std::string OneDevice() {
  return std::string(R"([{"uuid": ")") + kUuid +
         R"(", "memory": "8GiB", "granularity": "2MiB", "context_overhead": "300MiB"}])";
}

LedgerCounters Counters(const std::string& slice_dir) {
  Result<slice::SliceAdmin> admin = slice::SliceAdmin::Open(slice_dir);
  EXPECT_TRUE(admin.ok()) << admin.status().message();
  if (!admin.ok()) return {};
  Result<LedgerCounters> counters = admin->Counters();
  EXPECT_TRUE(counters.ok()) << counters.status().message();
  return counters.ok() ? *counters : LedgerCounters{};
}

LedgerCounters Expected(uint64_t oom, uint32_t fail_closed, uint32_t compute_unenforced, uint32_t no_free_slot,
                        uint32_t pass_through) {
  return LedgerCounters{oom, fail_closed, compute_unenforced, no_free_slot, pass_through};
}

class HookCountersTest : public ::testing::Test {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_THREAD__)
    // A ThreadSanitizer runtime must start before anything else in the process, which a
    // preloaded library cannot arrange.
    GTEST_SKIP() << "LD_PRELOAD of a ThreadSanitizer-instrumented libfgpu.so is not supported";
#endif
  }
  // Runs fgpu-probe `args` under the hook in `slice_dir` (plus `extra` env); its exit code.
  int Probe(const std::vector<std::string>& args, const std::string& slice_dir,
            const std::vector<std::string>& extra = {}, std::vector<nlohmann::json>* events = nullptr,
            std::string* err = nullptr) {
    int exit_code = -1;
    std::vector<nlohmann::json> printed = machine_.RunProbe(args, machine_.HookedEnv(slice_dir, extra), &exit_code, err);
    if (events != nullptr) *events = std::move(printed);
    return exit_code;
  }

  SimMachine machine_{OneDevice()};
  std::string slice_ = machine_.CreateSlice("slice", kUuid, kCap);
};

TEST_F(HookCountersTest, AnAllocationOverTheCapCountsOneOomRefusal) {
  EXPECT_EQ(Probe({"alloc", "--bytes", "256MiB"}, slice_), 0);
  EXPECT_EQ(Counters(slice_), Expected(0, 0, 0, 0, 0)) << "what fits counts nothing";

  std::vector<nlohmann::json> events;
  EXPECT_EQ(Probe({"alloc", "--bytes", "2GiB"}, slice_, {}, &events), 1);
  const nlohmann::json alloc = FindEvent(events, "alloc");
  ASSERT_TRUE(alloc.is_object());
  EXPECT_EQ(alloc["result"], "CUDA_ERROR_OUT_OF_MEMORY") << alloc.dump();
  EXPECT_EQ(Counters(slice_), Expected(1, 0, 0, 0, 0));

  // A fill stops at its first refusal, on every allocation path: one count each.
  for (const char* api : {"mem_alloc", "vmm", "pool", "array"}) {
    EXPECT_EQ(Probe({"fill", "--api", api, "--chunk", "64MiB"}, slice_, {}, &events), 0) << api;
    EXPECT_EQ(FindEvent(events, "fill")["stop_error"], "CUDA_ERROR_OUT_OF_MEMORY") << api;
  }
  EXPECT_EQ(Counters(slice_), Expected(5, 0, 0, 0, 0));
}

TEST_F(HookCountersTest, AContextTheCapCannotHoldCountsOneOomRefusal) {
  Result<slice::SliceAdmin> admin = slice::SliceAdmin::Open(slice_);
  ASSERT_TRUE(admin.ok());
  ASSERT_TRUE(admin->SetMemoryCap(0, 200 * kMiBytes).ok());  // below the 300 MiB a context takes
  std::vector<nlohmann::json> events;
  EXPECT_EQ(Probe({"info"}, slice_, {}, &events), 1);
  EXPECT_EQ(FindEvent(events, "error")["name"], "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(Counters(slice_), Expected(1, 0, 0, 0, 0));
}

TEST_F(HookCountersTest, PassThroughInAValidSliceIsCountedOncePerProcess) {
  for (int run = 1; run <= 2; ++run) {
    std::string err;
    EXPECT_EQ(Probe({"alloc", "--bytes", "2GiB"}, slice_, {"FGPU_DISABLE=1"}, nullptr, &err), 0) << err;
    EXPECT_EQ(err, "") << "pass-through stays silent";
    EXPECT_EQ(Counters(slice_), Expected(0, 0, 0, 0, run)) << "unenforced, so nothing refused either";
  }
  // Pass-through in a slice that cannot be used still runs, and counts nowhere.
  std::string err;
  EXPECT_EQ(Probe({"info"}, slice_ + "-no-such-slice", {"FGPU_DISABLE=1"}, nullptr, &err), 0) << err;
  EXPECT_EQ(err, "");
  // Enforcing again: not counted as pass-through.
  EXPECT_EQ(Probe({"info"}, slice_), 0);
  EXPECT_EQ(Counters(slice_).pass_through, 2u);
}

TEST_F(HookCountersTest, AProcessThatFindsEverySlotHeldIsCountedAsNoFreeSlot) {
  Result<slice::SliceAdmin> admin = slice::SliceAdmin::Open(slice_);
  ASSERT_TRUE(admin.ok());
  // Every slot names this test process, alive for the whole test: none can be reaped.
  const uint64_t start_time = slice::ReadStartTime(::getpid());
  for (int i = 0; i < slice::kMaxProcesses; ++i) ASSERT_TRUE(admin->TEST_PlantProcess(::getpid(), start_time, {0}).ok());
  std::vector<nlohmann::json> events;
  std::string err;
  EXPECT_EQ(Probe({"info"}, slice_, {}, &events, &err), 1);
  EXPECT_EQ(FindEvent(events, "error")["name"], "CUDA_ERROR_NOT_INITIALIZED") << "fails closed at cuInit";
  EXPECT_NE(err.find("256 process slots"), std::string::npos) << err;
  EXPECT_EQ(Counters(slice_), Expected(0, 0, 0, 1, 0));
}

TEST_F(HookCountersTest, AComputeBoardThatCannotBeOpenedIsCountedOncePerProcessAndGpu) {
  // A slice with a compute share, so that launches go through the gate.
  const std::string shared = slice_ + "-compute";
  slice::SliceSpec spec;
  spec.id = "compute";
  spec.devices.push_back({kUuid, kCap, 30});
  ASSERT_TRUE(slice::SliceAdmin::Create(shared, spec).ok());
  const std::vector<std::string> spin = {"spin", "--duty", "100", "--seconds", "0.2", "--kernel-us", "1000"};

  // Boards under a regular file: the directory cannot be made.
  const std::string blocker = slice_ + "-not-a-directory";
  std::ofstream(blocker) << "x";
  std::string err;
  EXPECT_EQ(Probe(spin, shared, {"FGPU_COMPUTE_DIR=" + blocker + "/boards"}, nullptr, &err), 0) << err;
  EXPECT_NE(err.find("compute shares are not enforced"), std::string::npos) << err;
  EXPECT_EQ(Counters(shared), Expected(0, 0, 1, 0, 0)) << "many launches, one process, one GPU: one count";

  // A usable board: enforced, nothing counted.
  const std::string boards = slice_ + "-boards";
  EXPECT_EQ(Probe(spin, shared, {"FGPU_COMPUTE_DIR=" + boards}, nullptr, &err), 0) << err;
  EXPECT_EQ(err, "");
  EXPECT_EQ(Counters(shared).compute_unenforced, 1u);
  std::filesystem::remove_all(boards);
  std::filesystem::remove(blocker);
}

// A driver newer than this fgpu answers cuGetProcAddress with variants the hook does not know:
// each refusal (the bases the hook accounts memory on) is one fail-closed count; the answers it
// hands out untouched (launches, names it does not hook) count nothing.
TEST_F(HookCountersTest, EveryUnknownVariantRefusedIsCountedAsFailClosed) {
  // The future driver first on the library path; the simulated NVML behind it.
  std::vector<std::string> env = machine_.HookedEnv(slice_);
  for (std::string& entry : env) {
    if (entry.starts_with("LD_LIBRARY_PATH=")) entry = std::string("LD_LIBRARY_PATH=") + FGPU_HOOK_FUTURE_DRIVER_DIR + ":" + FGPU_SIM_LIBDIR;
  }
  BackgroundProcess helper({FGPU_HOOK_UNLINKED_HELPER_PATH, "--getter", "dlsym"}, env, slice_ + "-helper");
  ASSERT_EQ(helper.Wait(), 0) << helper.Stderr();
  std::ifstream out(slice_ + "-helper.out");
  int refused = 0, handed_out = 0;
  for (std::string line; std::getline(out, line);) {
    std::istringstream fields(line);
    std::string how, name, version, flags, rc;
    fields >> how >> name >> version >> flags >> rc;
    if (how != "getter" && how != "getter_v2" && how != "chained") continue;
    if (rc == std::to_string(CUDA_ERROR_NOT_SUPPORTED)) ++refused;
    if (rc == "0") ++handed_out;
  }
  EXPECT_GT(refused, 100);
  EXPECT_GT(handed_out, 10);
  // Plus the helper's two bootstrap lookups of "cuGetProcAddress" itself (refused too: the
  // getter is a base the hook must own), which print nothing when refused.
  EXPECT_EQ(Counters(slice_), Expected(0, static_cast<uint32_t>(refused) + 2, 0, 0, 0));
}

}  // namespace
}  // namespace fgpu::hook
