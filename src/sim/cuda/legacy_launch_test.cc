// Tests of the deprecated launch paths: cuParamSet* with cuFuncSetBlockShape/cuFuncSetSharedSize and
// cuLaunch / cuLaunchGrid / cuLaunchGridAsync, and cuLaunchCooperativeKernelMultiDevice. They take
// cuLaunchKernel's validation and device time. Each test runs in a forked child.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>

#include "core/abi/cuda_api.h"
#include "sim/cuda/child_process.h"
#include "sim/cuda/sim_test_env.h"

namespace fgpu::sim::testing {
namespace {

// 16 SMs: a grid of 32 blocks is two waves.
constexpr const char* kLegacyLaunchConfig = R"({
  "devices": [{"count": 2, "memory": "4GiB", "granularity": "2MiB", "sm_count": 16, "context_overhead": "300MiB"}],
  "default_kernel_wave_us": 10
})";
constexpr const char* kLegacyLaunchPtx =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry fgpu_spin(.param .u64 ns)\n{\n ret;\n}\n";

std::string RunLegacyLaunchSim(const std::function<std::string()>& body) {
  return RunWithConfig(kLegacyLaunchConfig, "legacy-launch-test", body);
}

CUfunction LoadLegacySpin() {
  CUmodule module = nullptr;
  CUfunction spin = nullptr;
  if (cuModuleLoadData(&module, kLegacyLaunchPtx) != CUDA_SUCCESS) return nullptr;
  return cuModuleGetFunction(&spin, module, "fgpu_spin") == CUDA_SUCCESS ? spin : nullptr;
}

// Device milliseconds between two events around `launch` on `stream`, or -1.
float LegacyTimedOn(CUstream stream, const std::function<CUresult()>& launch) {
  CUevent start = nullptr, stop = nullptr;
  float ms = -1;
  if (cuEventCreate(&start, 0) != CUDA_SUCCESS || cuEventCreate(&stop, 0) != CUDA_SUCCESS) return -1;
  if (cuEventRecord(start, stream) != CUDA_SUCCESS || launch() != CUDA_SUCCESS ||
      cuEventRecord(stop, stream) != CUDA_SUCCESS || cuEventSynchronize(stop) != CUDA_SUCCESS ||
      cuEventElapsedTime(&ms, start, stop) != CUDA_SUCCESS) {
    return -1;
  }
  cuEventDestroy_v2(start);
  cuEventDestroy_v2(stop);
  return ms;
}

TEST(SimLegacyLaunch, ParametersSetOneByOneReachTheKernel) {
  EXPECT_EQ(RunLegacyLaunchSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUfunction spin = LoadLegacySpin();
    FGPU_REQUIRE(spin != nullptr);
    // A shape never set is no shape: the launch is refused, as cuLaunchKernel refuses 0 threads.
    FGPU_REQUIRE_CU(cuLaunch(spin), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuFuncSetBlockShape(spin, 128, 1, 1), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuFuncSetSharedSize(spin, 1024), CUDA_SUCCESS);
    // The classic pattern: parameters at growing offsets, the size last. 1 ms per wave, as two
    // 32-bit halves of the u64 (little-endian).
    const uint64_t wave_ns = 1'000'000;
    FGPU_REQUIRE_CU(cuParamSeti(spin, 0, static_cast<unsigned>(wave_ns & 0xFFFFFFFF)), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuParamSeti(spin, 4, static_cast<unsigned>(wave_ns >> 32)), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuParamSetSize(spin, 8), CUDA_SUCCESS);
    // cuLaunch: one block, one wave, on the legacy stream.
    const float one = LegacyTimedOn(nullptr, [&] { return cuLaunch(spin); });
    FGPU_REQUIRE(one > 0.99f && one < 1.2f);
    // cuLaunchGrid: 8 x 4 = 32 blocks on 16 SMs, two waves.
    const float two = LegacyTimedOn(nullptr, [&] { return cuLaunchGrid(spin, 8, 4); });
    FGPU_REQUIRE(two > 1.99f && two < 2.2f);
    // cuParamSetv replaces the value; cuLaunchGridAsync runs on the given stream.
    const uint64_t longer_ns = 3'000'000;
    FGPU_REQUIRE_CU(cuParamSetv(spin, 0, const_cast<uint64_t*>(&longer_ns), sizeof longer_ns), CUDA_SUCCESS);
    CUstream stream = nullptr;
    FGPU_REQUIRE_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    const float async = LegacyTimedOn(stream, [&] { return cuLaunchGridAsync(spin, 16, 1, stream); });
    FGPU_REQUIRE(async > 2.99f && async < 3.2f);
    FGPU_REQUIRE_CU(cuParamSetf(spin, 8, 2.5f), CUDA_SUCCESS);  // beyond the size set: passed only once sized
    FGPU_REQUIRE_CU(cuParamSetSize(spin, 12), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuLaunchGridAsync(spin, 1, 1, stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSynchronize(stream), CUDA_SUCCESS);
    return std::string();
  }), "");
}

TEST(SimLegacyLaunch, RefusesWhatCuLaunchKernelRefuses) {
  EXPECT_EQ(RunLegacyLaunchSim([] {
    FGPU_REQUIRE_CU(cuLaunch(nullptr), CUDA_ERROR_NOT_INITIALIZED);
    FGPU_REQUIRE_CU(cuParamSetSize(nullptr, 8), CUDA_ERROR_NOT_INITIALIZED);
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUfunction spin = LoadLegacySpin();
    FGPU_REQUIRE(spin != nullptr);
    auto garbage = reinterpret_cast<CUfunction>(&ctx);
    FGPU_REQUIRE_CU(cuLaunch(garbage), CUDA_ERROR_INVALID_HANDLE);
    FGPU_REQUIRE_CU(cuParamSeti(garbage, 0, 1), CUDA_ERROR_INVALID_HANDLE);
    FGPU_REQUIRE_CU(cuParamSetSize(spin, 32765), CUDA_ERROR_INVALID_VALUE);  // past the largest buffer
    FGPU_REQUIRE_CU(cuParamSeti(spin, -4, 1), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuParamSeti(spin, 32764, 1), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuParamSetv(spin, 0, nullptr, 8), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuParamSetSize(spin, 8), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuFuncSetBlockShape(spin, 32, 1, 1), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuLaunchGrid(spin, 0, 1), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuLaunchGrid(spin, 1, -1), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuLaunchGrid(spin, 1, 65536), CUDA_ERROR_INVALID_VALUE);  // past the grid's Y limit
    FGPU_REQUIRE_CU(cuLaunchGridAsync(spin, 1, 1, reinterpret_cast<CUstream>(&ctx)), CUDA_ERROR_INVALID_HANDLE);
    FGPU_REQUIRE_CU(cuLaunchGrid(spin, 2, 2), CUDA_SUCCESS);
    // cuParamSetTexRef: the default unit and a live texture reference.
    CUtexref ref = nullptr;
    FGPU_REQUIRE_CU(cuTexRefCreate(&ref), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuParamSetTexRef(spin, 0, ref), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuParamSetTexRef(spin, CU_PARAM_TR_DEFAULT, ref), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuParamSetTexRef(garbage, CU_PARAM_TR_DEFAULT, ref), CUDA_ERROR_INVALID_HANDLE);
    FGPU_REQUIRE_CU(cuTexRefDestroy(ref), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuParamSetTexRef(spin, CU_PARAM_TR_DEFAULT, ref), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuCtxSynchronize(), CUDA_SUCCESS);
    return std::string();
  }), "");
}

TEST(SimLegacyLaunch, GridLaunchesAreCapturedLikeKernelLaunches) {
  EXPECT_EQ(RunLegacyLaunchSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUfunction spin = LoadLegacySpin();
    FGPU_REQUIRE(spin != nullptr);
    FGPU_REQUIRE_CU(cuFuncSetBlockShape(spin, 64, 1, 1), CUDA_SUCCESS);
    CUstream stream = nullptr;
    FGPU_REQUIRE_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuLaunchGridAsync(spin, 4, 1, stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuLaunchGridAsync(spin, 4, 1, stream), CUDA_SUCCESS);
    CUgraph graph = nullptr;
    FGPU_REQUIRE_CU(cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
    size_t nodes = 0;
    FGPU_REQUIRE_CU(cuGraphGetNodes(graph, nullptr, &nodes), CUDA_SUCCESS);
    FGPU_REQUIRE(nodes == 2);
    FGPU_REQUIRE_CU(cuGraphDestroy(graph), CUDA_SUCCESS);
    return std::string();
  }), "");
}

CUDA_LAUNCH_PARAMS SpinLaunch(CUfunction spin, CUstream stream, void** params) {
  CUDA_LAUNCH_PARAMS launch{};
  launch.function = spin;
  launch.gridDimX = 32;
  launch.gridDimY = 1;
  launch.gridDimZ = 1;
  launch.blockDimX = 256;
  launch.blockDimY = 1;
  launch.blockDimZ = 1;
  launch.hStream = stream;
  launch.kernelParams = params;
  return launch;
}

TEST(SimLegacyLaunch, MultiDeviceCooperativeLaunchRunsOnEachDevice) {
  EXPECT_EQ(RunLegacyLaunchSim([] {
    FGPU_REQUIRE_CU(cuLaunchCooperativeKernelMultiDevice(nullptr, 1, 0), CUDA_ERROR_NOT_INITIALIZED);
    PrimaryContext ctx0(0);
    FGPU_REQUIRE(ctx0.ok());
    int supported = 0;
    FGPU_REQUIRE_CU(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH, 0),
                    CUDA_SUCCESS);
    FGPU_REQUIRE(supported == 1);
    CUfunction spin0 = LoadLegacySpin();
    CUstream stream0 = nullptr;
    FGPU_REQUIRE(spin0 != nullptr);
    FGPU_REQUIRE_CU(cuStreamCreate(&stream0, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    PrimaryContext ctx1(1);
    FGPU_REQUIRE(ctx1.ok());
    CUfunction spin1 = LoadLegacySpin();
    CUstream stream1 = nullptr;
    FGPU_REQUIRE(spin1 != nullptr);
    FGPU_REQUIRE_CU(cuStreamCreate(&stream1, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);

    uint64_t wave_ns = 1'000'000;
    void* params[] = {&wave_ns};
    CUDA_LAUNCH_PARAMS both[2] = {SpinLaunch(spin0, stream0, params), SpinLaunch(spin1, stream1, params)};
    // Refused before anything runs: bad flags, default streams, two launches on one device, shapes
    // that differ, a function of another context, more launches than devices.
    FGPU_REQUIRE_CU(cuLaunchCooperativeKernelMultiDevice(both, 2, 4), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuLaunchCooperativeKernelMultiDevice(both, 0, 0), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuLaunchCooperativeKernelMultiDevice(both, 3, 0), CUDA_ERROR_INVALID_VALUE);
    CUDA_LAUNCH_PARAMS wrong[2] = {both[0], both[1]};
    wrong[1].hStream = CU_STREAM_LEGACY;
    FGPU_REQUIRE_CU(cuLaunchCooperativeKernelMultiDevice(wrong, 2, 0), CUDA_ERROR_INVALID_VALUE);
    wrong[1] = SpinLaunch(spin0, stream0, params);
    FGPU_REQUIRE_CU(cuLaunchCooperativeKernelMultiDevice(wrong, 2, 0), CUDA_ERROR_INVALID_VALUE);
    wrong[1] = both[1];
    wrong[1].gridDimX = 16;
    FGPU_REQUIRE_CU(cuLaunchCooperativeKernelMultiDevice(wrong, 2, 0), CUDA_ERROR_INVALID_VALUE);
    wrong[1] = both[1];
    wrong[1].function = spin0;
    FGPU_REQUIRE_CU(cuLaunchCooperativeKernelMultiDevice(wrong, 2, 0), CUDA_ERROR_INVALID_VALUE);
    // Past the cooperative limit: 16 SMs x 8 resident blocks of 256 threads.
    CUDA_LAUNCH_PARAMS too_large[1] = {both[1]};
    too_large[0].gridDimX = 16 * 8 + 1;
    FGPU_REQUIRE_CU(cuLaunchCooperativeKernelMultiDevice(too_large, 1, 0), CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
    FGPU_REQUIRE_CU(cuStreamQuery(stream0), CUDA_SUCCESS);  // nothing was queued

    // Both devices: each stream runs its two waves of 1 ms.
    const float ms = LegacyTimedOn(stream1, [&] {
      return cuLaunchCooperativeKernelMultiDevice(both, 2, CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_POST_LAUNCH_SYNC);
    });
    FGPU_REQUIRE(ms > 1.99f && ms < 2.2f);
    FGPU_REQUIRE_CU(cuStreamSynchronize(stream0), CUDA_SUCCESS);
    // The launch replaced the function's legacy shape: cuLaunch now runs 256-thread blocks, no parameters.
    FGPU_REQUIRE_CU(cuLaunch(spin1), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxSynchronize(), CUDA_SUCCESS);
    return std::string();
  }), "");
}

}  // namespace
}  // namespace fgpu::sim::testing
