// Contention and crashes THROUGH the hook: fgpu_hook_alloc_storm_helper (testdata/
// alloc_storm_helper.cc) processes × threads calling cuMemAlloc_v2 / cuMemFree_v2 under
// LD_PRELOAD=libfgpu.so on a simulated 8 GiB GPU (2 MiB granularity, 16 MiB per context) with a
// 1 GiB slice. The ledger-level bars (src/slice/ledger_{contention,crash}_test.cc) hold for the
// protocol alone; these hold for what a workload really gets:
// - while they race, a sampler in this process reads the ledger AND the simulator's physical
//   usage of the device: neither may pass the cap (physical: plus one granule and the contexts,
//   which exist before the hook can measure and charge them);
// - processes SIGKILLed at random moments leave nothing charged, on the ledger or the device,
//   and the next process gets the whole cap.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "hook/memory/memory_process_support.h"
#include "sim/state/shared_devices.h"
#include "slice/slice.h"

namespace fgpu::hook {
namespace {

using testing::BackgroundProcess;
using testing::kMiBytes;
using testing::SimMachine;
using Clock = std::chrono::steady_clock;

constexpr const char* kContentionUuid = "GPU-53544f52-4d00-4000-8000-000000000001";
constexpr uint64_t kContentionCap = 1024 * kMiBytes;
constexpr uint64_t kContentionGranule = 2 * kMiBytes;
constexpr uint64_t kContentionContext = 16 * kMiBytes;
constexpr uint64_t kAlloc = 300 * kMiBytes;
// (kContentionCap - kContentionContext) / kAlloc: what one process alone on the slice can hold.
constexpr int kFitAlone = 3;

std::string OneContentionDevice() {
  return std::string(R"([{"uuid": ")") + kContentionUuid +
         R"(", "memory": "8GiB", "granularity": "2MiB", "context_overhead": "16MiB"}])";
}

// The value of `name` in a list of "NAME=value" entries ("" if absent).
std::string EnvValue(const std::vector<std::string>& env, const std::string& name) {
  for (const std::string& entry : env) {
    if (entry.rfind(name + "=", 0) == 0) return entry.substr(name.size() + 1);
  }
  return "";
}

// The simulated device as the simulator itself accounts it, read from this process (which
// never loads the hook): physical usage, whatever the ledger says.
class PhysicalDevice {
 public:
  explicit PhysicalDevice(const SimMachine& machine) {
    const std::vector<std::string> env = machine.SimEnv();
    Result<sim::SimConfig> config = sim::LoadSimConfig(EnvValue(env, sim::kConfigEnv));
    EXPECT_TRUE(config.ok()) << config.status().message();
    if (!config.ok()) return;
    Result<std::unique_ptr<sim::SharedDevices>> devices =
        sim::SharedDevices::Attach(*config, EnvValue(env, sim::kSegmentEnv));
    EXPECT_TRUE(devices.ok()) << devices.status().message();
    if (devices.ok()) devices_ = std::move(*devices);
  }
  bool ok() const { return devices_ != nullptr; }
  // Bytes in use on the device after reaping dead processes.
  uint64_t Used() { return devices_ != nullptr ? devices_->Memory(0).used : UINT64_MAX; }

 private:
  std::unique_ptr<sim::SharedDevices> devices_;
};

uint64_t LedgerUsed(const slice::SliceAdmin& admin) {
  const slice::UsageSnapshot usage = admin.Usage();
  return usage.used.empty() ? UINT64_MAX : usage.used[0];
}

// Samples the ledger and the device, back to back as fast as it can, on a thread of its own
// until Stop(); keeps the peaks. Only this thread touches `admin` and `physical` meanwhile.
class Sampler {
 public:
  struct Peaks {
    uint64_t ledger = 0;
    uint64_t physical = 0;
    int64_t samples = 0;
  };
  Sampler(const slice::SliceAdmin& admin, PhysicalDevice& physical)
      : thread_([this, &admin, &physical] {
          while (!stop_.load(std::memory_order_relaxed)) {
            peaks_.ledger = std::max(peaks_.ledger, LedgerUsed(admin));
            peaks_.physical = std::max(peaks_.physical, physical.Used());
            ++peaks_.samples;
          }
        }) {}
  ~Sampler() { Stop(); }
  Peaks Stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
    return peaks_;
  }

 private:
  std::atomic<bool> stop_{false};
  Peaks peaks_;
  std::thread thread_;
};

// Waits for `process` to end, until `deadline` at the latest (then kills it: nothing may hang).
// Its exit code (128 + signal when killed), -1 on timeout.
int WaitUntil(BackgroundProcess& process, Clock::time_point deadline) {
  if (process.pid() <= 0) return -1;
  for (;;) {
    siginfo_t info{};
    // WNOWAIT: only look; BackgroundProcess::Wait reaps and decodes the status.
    if (waitid(P_PID, static_cast<id_t>(process.pid()), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == process.pid()) {
      return process.Wait();
    }
    if (Clock::now() > deadline) {
      process.Kill();
      process.Wait();
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

class HookContentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "LD_PRELOAD of a ThreadSanitizer-instrumented libfgpu.so is not supported";
#endif
    slice_dir_ = machine_.CreateSlice("storm", kContentionUuid, kContentionCap);
    Result<slice::SliceAdmin> admin = slice::SliceAdmin::Open(slice_dir_);
    ASSERT_TRUE(admin.ok()) << admin.status().message();
    admin_ = std::make_unique<slice::SliceAdmin>(std::move(*admin));
    physical_ = std::make_unique<PhysicalDevice>(machine_);
    ASSERT_TRUE(physical_->ok());
  }

  std::unique_ptr<BackgroundProcess> Helper(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {FGPU_HOOK_ALLOC_STORM_HELPER_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    return std::make_unique<BackgroundProcess>(
        argv, machine_.HookedEnv(slice_dir_),
        ::testing::TempDir() + "/fgpu-storm-" + std::to_string(getpid()) + "-" + std::to_string(runs_++));
  }

  SimMachine machine_{OneContentionDevice()};
  std::string slice_dir_;
  std::unique_ptr<slice::SliceAdmin> admin_;
  std::unique_ptr<PhysicalDevice> physical_;
  int runs_ = 0;
};

TEST_F(HookContentionTest, ProcessesAndThreadsNeverPassTheCap) {
  constexpr int kProcesses = 8;
  constexpr int kThreads = 4;
  constexpr int kRounds = 2500;  // 8 × 4 × 2500 = 80000 cuMemAlloc_v2 calls
  // Every allocation is reserved before the driver sees it and credited after the driver freed
  // it; only a context exists before its (measured) charge, at most one per process.
  constexpr uint64_t kPhysicalBound = kContentionCap + kContentionGranule + kProcesses * kContentionContext;

  const auto start = Clock::now();
  Sampler sampler(*admin_, *physical_);
  std::vector<std::unique_ptr<BackgroundProcess>> helpers;
  for (int p = 0; p < kProcesses; ++p) {
    helpers.push_back(Helper({"--threads", std::to_string(kThreads), "--rounds", std::to_string(kRounds),
                              "--size", std::to_string(kAlloc)}));
  }
  const auto deadline = start + std::chrono::seconds(60);
  std::vector<int> exit_codes;
  for (auto& helper : helpers) exit_codes.push_back(WaitUntil(*helper, deadline));
  const Sampler::Peaks peaks = sampler.Stop();

  int64_t successes = 0, ooms = 0;
  for (size_t p = 0; p < helpers.size(); ++p) {
    EXPECT_EQ(exit_codes[p], 0) << "helper " << p << ": " << helpers[p]->Stderr();
    const nlohmann::json storm = helpers[p]->Event("storm");
    ASSERT_FALSE(storm.is_null()) << "helper " << p << ": " << helpers[p]->Stderr();
    successes += storm["successes"].get<int64_t>();
    ooms += storm["ooms"].get<int64_t>();
  }
  std::printf("contention: %lld successes, %lld OOMs, peak ledger %llu MiB, peak physical %llu MiB, "
              "%lld samples, %.2f s\n",
              static_cast<long long>(successes), static_cast<long long>(ooms),
              static_cast<unsigned long long>(peaks.ledger / kMiBytes),
              static_cast<unsigned long long>(peaks.physical / kMiBytes), static_cast<long long>(peaks.samples),
              std::chrono::duration<double>(Clock::now() - start).count());

  EXPECT_EQ(successes + ooms, int64_t{kProcesses} * kThreads * kRounds);
  EXPECT_GT(successes, 0);
  EXPECT_GT(ooms, 0) << "no contention: the test proves nothing";
  EXPECT_LE(peaks.ledger, kContentionCap) << "the ledger admitted past the cap";
  EXPECT_LE(peaks.physical, kPhysicalBound) << "the device held more than the slice allows";
  // The sampler really watched the storm (not only before or after it).
  EXPECT_GE(peaks.ledger, kAlloc + kContentionContext);
  EXPECT_GE(peaks.physical, kAlloc + kContentionContext);
  // Clean exits (frees, then the primary context released) give everything back: no reaping.
  EXPECT_EQ(LedgerUsed(*admin_), 0u);
  for (const slice::ProcessUsage& process : admin_->Usage().processes) {
    EXPECT_EQ(process.charged.at(0), 0u) << "pid " << process.pid;
  }
  EXPECT_EQ(physical_->Used(), 0u);
}

TEST_F(HookContentionTest, KilledProcessesLeaveNothingCharged) {
  constexpr int kIterations = 50;
  constexpr int kStorms = 4;
  constexpr int kHolders = 2;
  constexpr int kMaxKillMs = 50;
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 random(seed);
  const std::vector<std::string> storm_args = {"--threads", "4", "--rounds", "200", "--size",
                                               std::to_string(kAlloc)};
  const std::vector<std::string> hold_args = {"--hold-forever", "--size", std::to_string(kAlloc)};

  const auto start = Clock::now();
  int killed = 0, killed_holding = 0, killed_before_ready = 0, attach_reaps = 0, dead_charges_found = 0;
  std::vector<double> reap_ms;
  // Stops at the first failing iteration: the seed and iteration in the trace reproduce it.
  int iterations = 0;
  for (; iterations < kIterations && !HasFailure(); ++iterations) {
    const int iteration = iterations;
    SCOPED_TRACE("iteration " + std::to_string(iteration));
    std::vector<std::unique_ptr<BackgroundProcess>> helpers;
    for (int i = 0; i < kStorms; ++i) helpers.push_back(Helper(storm_args));
    for (int i = 0; i < kHolders; ++i) helpers.push_back(Helper(hold_args));
    const auto spawned = Clock::now();

    // A random subset, each victim at its own random moment since the spawn: some die starting
    // up, some inside the context's measurement, most mid-storm or holding.
    std::vector<std::pair<int, size_t>> kills;  // (ms, helper)
    for (size_t i = 0; i < helpers.size(); ++i) {
      if (random() % 2 == 0) kills.emplace_back(static_cast<int>(random() % (kMaxKillMs + 1)), i);
    }
    std::sort(kills.begin(), kills.end());
    for (const auto& [ms, index] : kills) {
      std::this_thread::sleep_until(spawned + std::chrono::milliseconds(ms));
      if (index >= kStorms && !helpers[index]->Event("holding").is_null()) ++killed_holding;
      if (index < kStorms && helpers[index]->Event("ready").is_null()) ++killed_before_ready;
      helpers[index]->Kill();
      ++killed;
    }
    // Storms that were spared run to the end; holders never end, so the spared ones are killed
    // too — once they hold, so that they die with memory charged.
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    for (size_t i = 0; i < helpers.size(); ++i) {
      const bool victim = std::any_of(kills.begin(), kills.end(), [i](const auto& k) { return k.second == i; });
      if (i >= kStorms && !victim) {
        EXPECT_TRUE(helpers[i]->WaitForEvent("holding", 20000)) << helpers[i]->Stderr();
        helpers[i]->Kill();
        ++killed;
        ++killed_holding;
      }
      const int code = WaitUntil(*helpers[i], deadline);
      if (i < kStorms && !victim) {
        EXPECT_EQ(code, 0) << "spared storm " << i << ": " << helpers[i]->Stderr();
      } else {
        // A victim may have finished before its signal (storm) — never failed.
        EXPECT_TRUE(code == 128 + SIGKILL || (code == 0 && i < kStorms))
            << "helper " << i << " exit " << code << ": " << helpers[i]->Stderr();
      }
    }

    // Every helper is reaped (waitpid): their pids are gone. Half the iterations the creator
    // reaps, half the next hooked process does it when it attaches.
    const bool admin_reaps = iteration % 2 == 0;
    if (admin_reaps) {
      const auto reap_start = Clock::now();
      const auto reap_deadline = reap_start + std::chrono::milliseconds(100);
      uint64_t used = LedgerUsed(*admin_);
      if (used != 0) ++dead_charges_found;  // else spared storms reaped them (a refusal reaps)
      while (used != 0 && Clock::now() < reap_deadline) {
        admin_->ReapDeadProcesses();
        used = LedgerUsed(*admin_);
      }
      reap_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - reap_start).count());
      EXPECT_EQ(used, 0u) << "charges of killed processes still on the ledger after 100 ms";
      EXPECT_EQ(physical_->Used(), 0u);
    } else {
      ++attach_reaps;
    }

    // The whole cap is there again: alone on the slice, a process gets cap - its context.
    std::unique_ptr<BackgroundProcess> fill = Helper({"--fill", "--size", std::to_string(kAlloc)});
    EXPECT_EQ(WaitUntil(*fill, Clock::now() + std::chrono::seconds(20)), 0) << fill->Stderr();
    const nlohmann::json filled = fill->Event("fill");
    ASSERT_FALSE(filled.is_null()) << fill->Stderr();
    // It found the ledger empty on arrival: only its own context charged.
    EXPECT_EQ(filled["free_before"].get<uint64_t>(), kContentionCap - kContentionContext);
    EXPECT_EQ(filled["successes"].get<int>(), kFitAlone);
    EXPECT_EQ(filled["context_ooms"].get<int>(), 0);
    EXPECT_EQ(LedgerUsed(*admin_), 0u) << "the fill process exited cleanly: nothing may stay";
    EXPECT_EQ(physical_->Used(), 0u);
  }

  double max_reap_ms = 0, sum_reap_ms = 0;
  for (double ms : reap_ms) max_reap_ms = std::max(max_reap_ms, ms), sum_reap_ms += ms;
  std::printf("kill: %d iterations, %d SIGKILLs (%d holders holding, %d storms not yet ready), reaps by the "
              "creator: %zu (%d found dead charges; mean %.2f ms, max %.2f ms), by an attaching process: %d, %.2f s\n",
              iterations, killed, killed_holding, killed_before_ready, reap_ms.size(), dead_charges_found,
              reap_ms.empty() ? 0.0 : sum_reap_ms / static_cast<double>(reap_ms.size()), max_reap_ms, attach_reaps,
              std::chrono::duration<double>(Clock::now() - start).count());
}

}  // namespace
}  // namespace fgpu::hook
