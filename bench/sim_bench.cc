// Per-call cost of the simulated driver itself, so later interposer overhead numbers
// (hook → simulated driver vs. direct) have a base. Baseline in the same run:
// cuDriverGetVersion, a call that does no work.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "core/abi/cuda_api.h"
#include "sim/state/shared_devices.h"

namespace {

constexpr const char* kSpinPtx =
    ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry fgpu_spin(.param .u64 ns)\n{\n ret;\n}\n";

struct Session {
  CUcontext ctx = nullptr;
  CUfunction spin = nullptr;
  std::string segment;

  Session() {
    // 4 KiB granularity so 10^5 live allocations fit on the device.
    segment = "/fgpu-bench-" + std::to_string(getpid());
    const std::string config = "/tmp/fgpu-bench-" + std::to_string(getpid()) + ".json";
    std::ofstream(config) << R"({"devices": [{"granularity": "4KiB"}]})";
    setenv(fgpu::sim::kConfigEnv, config.c_str(), 1);
    setenv(fgpu::sim::kSegmentEnv, segment.c_str(), 1);
    if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
      std::abort();
    }
    CUmodule module = nullptr;
    if (cuModuleLoadData(&module, kSpinPtx) != CUDA_SUCCESS ||
        cuModuleGetFunction(&spin, module, "fgpu_spin") != CUDA_SUCCESS) {
      std::abort();
    }
  }
  ~Session() { fgpu::sim::SharedDevices::Remove(segment).ok(); }
};

Session& GetSession() {
  static Session session;
  return session;
}

void BM_Baseline_DriverGetVersion(benchmark::State& state) {
  GetSession();
  int version = 0;
  for (auto _ : state) benchmark::DoNotOptimize(cuDriverGetVersion(&version));
}
BENCHMARK(BM_Baseline_DriverGetVersion);

// Allocation cost with `state.range(0)` other allocations live (the registry lookup grows).
void BM_MemAllocFree(benchmark::State& state) {
  GetSession();
  std::vector<CUdeviceptr> live(static_cast<size_t>(state.range(0)));
  for (auto& ptr : live) {
    if (cuMemAlloc_v2(&ptr, 256) != CUDA_SUCCESS) state.SkipWithError("setup allocation failed");
  }
  for (auto _ : state) {
    CUdeviceptr ptr = 0;
    if (cuMemAlloc_v2(&ptr, 1 << 20) != CUDA_SUCCESS) state.SkipWithError("allocation failed");
    cuMemFree_v2(ptr);
  }
  for (CUdeviceptr ptr : live) cuMemFree_v2(ptr);
}
BENCHMARK(BM_MemAllocFree)->Arg(0)->Arg(100000)->Unit(benchmark::kMicrosecond);

void BM_LaunchKernel(benchmark::State& state) {
  Session& session = GetSession();
  unsigned long long ns = 0;  // zero device time: measures the launch path only
  void* params[] = {&ns};
  for (auto _ : state) {
    benchmark::DoNotOptimize(cuLaunchKernel(session.spin, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr));
  }
  cuCtxSynchronize();
}
BENCHMARK(BM_LaunchKernel);

void BM_MemGetInfo(benchmark::State& state) {
  GetSession();
  size_t free = 0, total = 0;
  for (auto _ : state) benchmark::DoNotOptimize(cuMemGetInfo_v2(&free, &total));
}
BENCHMARK(BM_MemGetInfo);

}  // namespace

BENCHMARK_MAIN();
