// What libfgpu.so adds to a driver call: the same entry points called directly on the
// driver and through the interposer's wrappers, in one process and one run.
//
// Built twice from this file: fgpu_hook_bench links the simulated libcuda.so.1 (every
// benchmark), fgpu_hook_stub_bench (FGPU_HOOK_BENCH_STUB) links bench/stub_driver.cc, a
// lock-free stand-in, and runs the launch benchmarks only. On the simulator hook − direct for a
// gated launch also holds the simulator's own event and handle locking, which the gate's
// completion thread contends for; on the stub it is the interposer's own added latency.
// fgpu_hook_bench runs the stub binary after its own benchmarks and prints both summaries.
//
// The process links the driver, creates a slice with a large cap, points
// FGPU_SLICE at it, and dlopens libfgpu.so RTLD_LOCAL (so its dlsym override does not
// interpose on this program); the wrappers are then taken from that handle. Goals
// (reference/hami.md §6 item 6): cuLaunchKernel < 30 ns added with no compute share set and
// < 100 ns with the compute limiter active but under budget (docs/compute.md "Cost");
// cuMemAlloc_v2 + cuMemFree_v2 < 1 µs added with 10^5 live allocations. The summary at the end
// prints both sides' medians and the difference.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compute/board.h"
#include "core/abi/cuda_api.h"
#include "slice/slice.h"

namespace {

constexpr const char* kUuid = "GPU-b3ac4b3a-0000-4000-8000-0000000be4c1";
constexpr const char* kSpinPtx =
    ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry fgpu_spin(.param .u64 ns)\n{\n ret;\n}\n";

// One set of entry points: the simulated driver's, or libfgpu's wrappers of them.
struct Api {
  decltype(&::cuLaunchKernel) launch = nullptr;
  decltype(&::cuMemAlloc_v2) alloc = nullptr;
  decltype(&::cuMemFree_v2) free = nullptr;
  decltype(&::cuMemGetInfo_v2) mem_get_info = nullptr;
};

template <typename Fn>
Fn Lookup(void* library, const char* name) {
  void* address = dlsym(library, name);
  if (address == nullptr) {
    std::fprintf(stderr, "hook_bench: %s: %s\n", name, dlerror());
    std::exit(1);
  }
  return reinterpret_cast<Fn>(address);
}

Api LookupApi(void* library) {
  return {Lookup<decltype(&::cuLaunchKernel)>(library, "cuLaunchKernel"),
          Lookup<decltype(&::cuMemAlloc_v2)>(library, "cuMemAlloc_v2"),
          Lookup<decltype(&::cuMemFree_v2)>(library, "cuMemFree_v2"),
          Lookup<decltype(&::cuMemGetInfo_v2)>(library, "cuMemGetInfo_v2")};
}

void Check(CUresult rc, const char* what) {
  if (rc == CUDA_SUCCESS) return;
  std::fprintf(stderr, "hook_bench: %s failed (%d)\n", what, static_cast<int>(rc));
  std::exit(1);
}

struct Session {
  std::string dir;
  std::string segment;
  Api direct;
  Api hook;
  CUfunction spin = nullptr;

  Session() {
    char pattern[] = "/tmp/fgpu-hook-bench-XXXXXX";
    if (mkdtemp(pattern) == nullptr) std::exit(1);
    dir = pattern;
#ifndef FGPU_HOOK_BENCH_STUB
    // 4 KiB granularity so 10^5 live allocations fit; the slice's cap is the whole device.
    std::ofstream(dir + "/sim.json") << R"({"devices": [{"uuid": ")" << kUuid
                                     << R"(", "granularity": "4KiB"}]})";
    segment = "/fgpu-hook-bench-" + std::to_string(getpid());
    setenv("FGPU_SIM_CONFIG", (dir + "/sim.json").c_str(), 1);
    setenv("FGPU_SIM_SEGMENT", segment.c_str(), 1);
#endif
    fgpu::slice::SliceSpec spec;
    spec.id = "hook-bench";
    spec.devices.push_back({kUuid, uint64_t{64} << 30, 100});
    auto admin = fgpu::slice::SliceAdmin::Create(dir + "/slice", spec);
    if (!admin.ok()) {
      std::fprintf(stderr, "hook_bench: %s\n", admin.status().message().c_str());
      std::exit(1);
    }
    setenv(fgpu::slice::kSliceEnv, (dir + "/slice").c_str(), 1);
    setenv("FGPU_COMPUTE_DIR", (dir + "/boards").c_str(), 1);
    unsetenv("FGPU_DISABLE");

    // The hook finds the driver and NVML by soname: both are already loaded from the
    // simulator's directory (libcuda by this program's link, NVML here). The stub has no NVML.
#ifndef FGPU_HOOK_BENCH_STUB
    dlopen(FGPU_SIM_LIBDIR "/libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
#endif
    void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    // FGPU_HOOK_BENCH_LIBFGPU: another build of libfgpu.so, for A/B runs against one binary.
    const char* hook_path = std::getenv("FGPU_HOOK_BENCH_LIBFGPU");
    void* interposer = dlopen(hook_path != nullptr ? hook_path : FGPU_HOOK_PATH, RTLD_NOW | RTLD_LOCAL);
    if (driver == nullptr || interposer == nullptr) {
      std::fprintf(stderr, "hook_bench: dlopen: %s\n", dlerror());
      std::exit(1);
    }
    direct = LookupApi(driver);
    hook = LookupApi(interposer);
    if (hook.launch == direct.launch || hook.alloc == direct.alloc) {
      std::fprintf(stderr, "hook_bench: libfgpu.so returned the driver's own functions\n");
      std::exit(1);
    }

    // Initialise and create the context through the hook, as a workload would.
    Check(Lookup<decltype(&::cuInit)>(interposer, "cuInit")(0), "cuInit");
    CUcontext ctx = nullptr;
    Check(Lookup<decltype(&::cuDevicePrimaryCtxRetain)>(interposer, "cuDevicePrimaryCtxRetain")(&ctx, 0),
          "cuDevicePrimaryCtxRetain");
    Check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    CUmodule module = nullptr;
    Check(cuModuleLoadData(&module, kSpinPtx), "cuModuleLoadData");
    Check(cuModuleGetFunction(&spin, module, "fgpu_spin"), "cuModuleGetFunction");
  }
};

Session& GetSession() {
  static Session* session = new Session;  // lives until exit; the segment is removed in main
  return *session;
}

const Api& PathApi(int path) { return path == 0 ? GetSession().direct : GetSession().hook; }

#ifndef FGPU_HOOK_BENCH_STUB  // the stub backs no memory: nothing to compare
// One 1 MiB allocation and its free, with `state.range(0)` other allocations live (made
// through the same path, so the hook's pointer table holds them too).
void BM_MemAllocFree(benchmark::State& state, int path) {
  const Api& api = PathApi(path);
  std::vector<CUdeviceptr> live(static_cast<size_t>(state.range(0)));
  for (CUdeviceptr& ptr : live) Check(api.alloc(&ptr, 256), "live allocation");
  for (auto _ : state) {
    CUdeviceptr ptr = 0;
    if (api.alloc(&ptr, 1 << 20) != CUDA_SUCCESS) state.SkipWithError("allocation failed");
    api.free(ptr);
  }
  for (CUdeviceptr ptr : live) api.free(ptr);
}
BENCHMARK_CAPTURE(BM_MemAllocFree, direct, 0)->Arg(0)->Arg(100000)->Repetitions(5)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_MemAllocFree, hook, 1)->Arg(0)->Arg(100000)->Repetitions(5)->Unit(benchmark::kMicrosecond);

void BM_MemGetInfo(benchmark::State& state, int path) {
  const Api& api = PathApi(path);
  size_t free = 0, total = 0;
  for (auto _ : state) benchmark::DoNotOptimize(api.mem_get_info(&free, &total));
}
BENCHMARK_CAPTURE(BM_MemGetInfo, direct, 0)->Repetitions(5);
BENCHMARK_CAPTURE(BM_MemGetInfo, hook, 1)->Repetitions(5);
#endif

// Last: the simulated driver's allocations slow down several-fold once millions of kernels
// have gone through its timeline, which would inflate the memory numbers above.
unsigned long long g_spin_ns = 0;  // zero device time: the launch path only
void* g_spin_params[] = {&g_spin_ns};

CUresult LaunchSpin(const Api& api, CUfunction function) {
  return api.launch(function, 1, 1, 1, 1, 1, 1, 0, nullptr, g_spin_params, nullptr);
}

void BM_LaunchKernel(benchmark::State& state, int path) {
  const Api& api = PathApi(path);
  const CUfunction spin = GetSession().spin;
  for (auto _ : state) benchmark::DoNotOptimize(LaunchSpin(api, spin));
  cuCtxSynchronize();
}
BENCHMARK_CAPTURE(BM_LaunchKernel, direct, 0)->Repetitions(5);
BENCHMARK_CAPTURE(BM_LaunchKernel, hook, 1)->Repetitions(5);

// Time launches of the bench's slice have waited in the compute gate, from its board row.
uint64_t ThrottledNs() {
  auto board = fgpu::compute::Board::Open(GetSession().dir + "/boards", kUuid);
  if (!board.ok()) return 0;  // no gated launch yet
  std::unique_ptr<fgpu::compute::Board> owned(*board);
  uint64_t total = 0;
  for (int row = 0; row < static_cast<int>(fgpu::compute::layout::kEntryCount); ++row) {
    total += __atomic_load_n(&owned->entry(row)->throttled_ns, __ATOMIC_RELAXED);
  }
  return total;
}

// Sets the slice's compute share for one benchmark (the hook rereads its limits live), and
// puts the default back after.
class ScopedComputeShare {
 public:
  explicit ScopedComputeShare(uint32_t share) { Set(share); }
  ~ScopedComputeShare() { Set(100); }
  ScopedComputeShare(const ScopedComputeShare&) = delete;
  ScopedComputeShare& operator=(const ScopedComputeShare&) = delete;

 private:
  static void Set(uint32_t share) {
    auto admin = fgpu::slice::SliceAdmin::Open(GetSession().dir + "/slice");
    if (!admin.ok() ||
        !admin->SetCompute(0, share, fgpu::slice::ComputeMode::kShare, fgpu::slice::Tier::kStandard).ok()) {
      std::fprintf(stderr, "hook_bench: cannot set the compute share\n");
      std::exit(1);
    }
  }
};

// The slice has a 50 % share, alone on the GPU: every launch goes through the compute gate
// (admission, booking into the thread's batch, a completion marker every ~200 µs) and none waits.
// Also reports how long launches waited in the gate (the board row's counter): "under budget"
// holds when that is a negligible part of the run.
void BM_LaunchKernelShared(benchmark::State& state, int path) {
  ScopedComputeShare share(50);
  const uint64_t throttled_before = ThrottledNs();
  BM_LaunchKernel(state, path);
  state.counters["throttled_ms"] = static_cast<double>(ThrottledNs() - throttled_before) / 1e6;
}
BENCHMARK_CAPTURE(BM_LaunchKernelShared, direct, 0)->Repetitions(5);
BENCHMARK_CAPTURE(BM_LaunchKernelShared, hook, 1)->Repetitions(5);

// The same call with a NULL function, which the driver rejects at once: a short, steady
// base against which the wrapper's few instructions are visible above the noise.
void BM_LaunchKernelRejected(benchmark::State& state, int path) {
  const Api& api = PathApi(path);
  for (auto _ : state) benchmark::DoNotOptimize(LaunchSpin(api, nullptr));
}
BENCHMARK_CAPTURE(BM_LaunchKernelRejected, direct, 0)->Repetitions(5);
BENCHMARK_CAPTURE(BM_LaunchKernelRejected, hook, 1)->Repetitions(5);

// The gate's own path (limits check, admission, the clock) without the booking and the
// completion thread: a rejected launch books nothing, so no batch is ever closed.
void BM_LaunchKernelRejectedShared(benchmark::State& state, int path) {
  ScopedComputeShare share(50);
  BM_LaunchKernelRejected(state, path);
}
BENCHMARK_CAPTURE(BM_LaunchKernelRejectedShared, direct, 0)->Repetitions(5);
BENCHMARK_CAPTURE(BM_LaunchKernelRejectedShared, hook, 1)->Repetitions(5);

// Console output as usual, plus the median of each benchmark, in nanoseconds, for the summary.
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Aggregate || run.aggregate_name != "median") continue;
      const std::string& args = run.run_name.args;
      medians_[run.run_name.function_name + (args.empty() ? "" : "/" + args)] =
          run.GetAdjustedRealTime() * 1e9 / benchmark::GetTimeUnitMultiplier(run.time_unit);
    }
    ConsoleReporter::ReportRuns(runs);
  }

  // "name median_ns" lines: how the stub binary hands its medians to fgpu_hook_bench.
  void WriteMedians(const char* path) const {
    std::ofstream out(path);
    for (const auto& [name, ns] : medians_) out << name << ' ' << ns << '\n';
  }
  void ReadMedians(const std::string& path, const std::string& prefix) {
    std::ifstream in(path);
    std::string name;
    double ns = 0;
    while (in >> name >> ns) medians_[prefix + name] = ns;
  }

  void PrintSummary() const {
    std::printf("\nlibfgpu overhead (medians; added = hook - direct in the same run):\n");
#ifdef FGPU_HOOK_BENCH_STUB
    std::printf("%s", kStubHeading);
    PrintSection("");
#else
    std::printf(" on the simulated driver (a gated launch's figure includes the simulator's event and handle\n"
                " locking, which the gate's completion thread contends for):\n");
    PrintSection("");
    if (HasSection(kStubPrefix)) {
      std::printf("%s", kStubHeading);
      PrintSection(kStubPrefix);
    }
#endif
  }

  static constexpr const char* kStubPrefix = "stub:";
  static constexpr const char* kStubHeading =
      " on the lock-free stub driver (bench/stub_driver.cc; the interposer's own added latency):\n";

 private:
  bool HasSection(const std::string& prefix) const {
    const auto it = medians_.lower_bound(prefix);
    return it != medians_.end() && it->first.compare(0, prefix.size(), prefix) == 0;
  }

  void PrintSection(const std::string& prefix) const {
    struct Pair {
      const char* label;
      const char* direct;
      const char* hook;
      double goal_ns;
    };
    const Pair pairs[] = {
        {"cuLaunchKernel", "BM_LaunchKernel/direct", "BM_LaunchKernel/hook", 30},
        {"cuLaunchKernel, 50 % compute share (gated)", "BM_LaunchKernelShared/direct", "BM_LaunchKernelShared/hook",
         100},
        {"cuLaunchKernel (rejected: NULL function)", "BM_LaunchKernelRejected/direct", "BM_LaunchKernelRejected/hook",
         30},
        {"cuLaunchKernel, 50 % share, rejected", "BM_LaunchKernelRejectedShared/direct",
         "BM_LaunchKernelRejectedShared/hook", 100},
        {"cuMemAlloc_v2+cuMemFree_v2 (0 live)", "BM_MemAllocFree/direct/0", "BM_MemAllocFree/hook/0", 0},
        {"cuMemAlloc_v2+cuMemFree_v2 (10^5 live)", "BM_MemAllocFree/direct/100000", "BM_MemAllocFree/hook/100000",
         1000},
        {"cuMemGetInfo_v2", "BM_MemGetInfo/direct", "BM_MemGetInfo/hook", 0},
    };
    for (const Pair& pair : pairs) {
      const auto direct = medians_.find(prefix + pair.direct), hook = medians_.find(prefix + pair.hook);
      if (direct == medians_.end() || hook == medians_.end()) continue;
      const double added = hook->second - direct->second;
      std::printf("  %-44s direct %10.1f ns  hook %10.1f ns  added %+8.1f ns (x%.2f)", pair.label, direct->second,
                  hook->second, added, hook->second / direct->second);
      if (pair.goal_ns > 0) std::printf("  goal < %.0f ns: %s", pair.goal_ns, added < pair.goal_ns ? "met" : "MISSED");
      std::printf("\n");
    }
  }

  std::map<std::string, double> medians_;
};

#ifdef FGPU_HOOK_STUB_BENCH_PATH
// Runs fgpu_hook_stub_bench with this run's arguments, after this binary's benchmarks (one at a
// time: they share the cores), and adds its medians to the summary.
void RunStubBench(char** argv, SummaryReporter* reporter) {
  const std::string medians = GetSession().dir + "/stub-medians.txt";
  setenv("FGPU_HOOK_BENCH_MEDIANS", medians.c_str(), 1);
  std::vector<char*> args(argv, argv + 1);
  std::string program = FGPU_HOOK_STUB_BENCH_PATH;
  args[0] = program.data();
  for (char** arg = argv + 1; *arg != nullptr; ++arg) args.push_back(*arg);
  args.push_back(nullptr);
  std::printf("\n== the same launches on the lock-free stub driver (%s)\n", FGPU_HOOK_STUB_BENCH_PATH);
  std::fflush(stdout);
  pid_t child = 0;
  int status = 0;
  if (posix_spawn(&child, args[0], nullptr, nullptr, args.data(), environ) != 0 ||
      waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "hook_bench: %s failed\n", FGPU_HOOK_STUB_BENCH_PATH);
    return;
  }
  reporter->ReadMedians(medians, SummaryReporter::kStubPrefix);
}
#endif

// CPU time of each thread of this process (/proc/self/task/*/schedstat), by "tid (name)".
std::map<std::string, uint64_t> ThreadCpuNs() {
  std::map<std::string, uint64_t> threads;
  std::error_code error;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", error)) {
    uint64_t ns = 0;
    std::string name;
    std::ifstream(task.path() / "schedstat") >> ns;
    std::getline(std::ifstream(task.path() / "comm"), name);
    threads[task.path().filename().string() + " (" + name + ")"] = ns;
  }
  return threads;
}

// --fgpu_loop=<direct|hook>,<share>,<launches>[,rejected]: the launches in a plain loop, no
// Google Benchmark, for instruction counts (valgrind --tool=callgrind; run two launch counts and
// take the difference, which leaves out the setup). `share` < 100 arms the compute gate.
int RunLoop(const char* spec) {
  char path[16] = "";
  unsigned share = 100;
  long launches = 0;
  char variant[16] = "";
  if (std::sscanf(spec, "%15[a-z],%u,%ld,%15s", path, &share, &launches, variant) < 3 || launches < 0) {
    std::fprintf(stderr, "hook_bench: --fgpu_loop=<direct|hook>,<share>,<launches>[,rejected]\n");
    return 2;
  }
  const Api& api = PathApi(std::strcmp(path, "hook") == 0 ? 1 : 0);
  const CUfunction function = std::strcmp(variant, "rejected") == 0 ? nullptr : GetSession().spin;
  std::optional<ScopedComputeShare> scoped;
  if (share < 100) scoped.emplace(share);
  benchmark::DoNotOptimize(LaunchSpin(api, function));  // the gate's first launch resolves it
  const std::map<std::string, uint64_t> before = ThreadCpuNs();
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < launches; ++i) benchmark::DoNotOptimize(LaunchSpin(api, function));
  const double wall_ns = static_cast<double>(std::chrono::nanoseconds(std::chrono::steady_clock::now() - start).count());
  const std::map<std::string, uint64_t> after = ThreadCpuNs();
  cuCtxSynchronize();
  // Natively (not under valgrind): wall and per-thread CPU time per launch, the completion
  // thread's included, which an instruction count cannot show (futex wake-ups, scheduling).
  const double per = 1.0 / static_cast<double>(std::max(launches, 1L));
  std::printf("loop %s: %.1f ns wall per launch\n", spec, wall_ns * per);
  for (const auto& [thread, ns] : after) {
    const auto it = before.find(thread);
    const uint64_t used = ns - (it != before.end() ? it->second : 0);
    std::printf("  thread %-24s %8.1f ns CPU per launch\n", thread.c_str(), static_cast<double>(used) * per);
  }
  return 0;
}

void RemoveSession() {
  Session& session = GetSession();
  if (!session.segment.empty()) shm_unlink(session.segment.c_str());
  std::error_code ignored;
  std::filesystem::remove_all(session.dir, ignored);
}

}  // namespace

int main(int argc, char** argv) {
  constexpr std::string_view kLoopFlag = "--fgpu_loop=";
  if (argc == 2 && std::string_view(argv[1]).substr(0, kLoopFlag.size()) == kLoopFlag) {
    const int rc = RunLoop(argv[1] + kLoopFlag.size());
    RemoveSession();
    return rc;
  }
  [[maybe_unused]] std::vector<char*> original(argv, argv + argc + 1);  // Initialize removes the flags it takes
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  SummaryReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
#ifdef FGPU_HOOK_BENCH_STUB
  if (const char* medians = std::getenv("FGPU_HOOK_BENCH_MEDIANS"); medians != nullptr) {
    reporter.WriteMedians(medians);  // run by fgpu_hook_bench, which prints the summary
  } else {
    reporter.PrintSummary();
  }
#else
#ifdef FGPU_HOOK_STUB_BENCH_PATH
  RunStubBench(original.data(), &reporter);
#endif
  reporter.PrintSummary();
#endif
  RemoveSession();
  return 0;
}
