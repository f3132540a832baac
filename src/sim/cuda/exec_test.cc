// Tests of the simulated driver's init, devices, contexts, streams, events,
// launches, graphs and entry-point lookup, through the exported C ABI.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/abi/cuda_api.h"
#include "sim/cuda/child_process.h"
#include "sim/cuda/sim_test_env.h"

namespace fgpu::sim::testing {
namespace {

// 16 SMs keep wave arithmetic readable; k100us occupies the device 100 µs per wave.
constexpr const char* kExecConfig = R"({
  "devices": [{"count": 2, "memory": "8GiB", "sm_count": 16, "context_overhead": "500MiB"}],
  "kernels": {"k100us": {"wave_us": 100}},
  "default_kernel_wave_us": 10
})";

constexpr const char* kExecPtx =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry k100us()\n{\n ret;\n}\n"
    ".visible .entry fgpu_spin(.param .u64 ns)\n{\n ret;\n}\n";

std::string RunExecSim(const std::function<std::string()>& body) { return RunWithConfig(kExecConfig, "exec-test", body); }

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Kernels {
  CUmodule module = nullptr;
  CUfunction k100us = nullptr;
  CUfunction spin = nullptr;
  bool Load() {
    return cuModuleLoadData(&module, kExecPtx) == CUDA_SUCCESS &&
           cuModuleGetFunction(&k100us, module, "k100us") == CUDA_SUCCESS &&
           cuModuleGetFunction(&spin, module, "fgpu_spin") == CUDA_SUCCESS;
  }
};

TEST(SimInit, ApisFailBeforeCuInit) {
  EXPECT_EQ(RunExecSim([] {
    int count = 0;
    FGPU_REQUIRE_CU(cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
    int version = 0;
    FGPU_REQUIRE_CU(cuDriverGetVersion(&version), CUDA_SUCCESS);
    FGPU_REQUIRE(version == 13000);
    FGPU_REQUIRE_CU(cuInit(1), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuInit(0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuDeviceGetCount(&count), CUDA_SUCCESS);
    FGPU_REQUIRE(count == 2);
    return std::string();
  }), "");
}

TEST(SimInit, MissingConfigFailsClosedWithMessage) {
  EXPECT_EQ(RunInChild([] {
    setenv(kConfigEnv, "/nonexistent/fgpu.json", 1);
    FGPU_REQUIRE_CU(cuInit(0), CUDA_ERROR_NO_DEVICE);
    FGPU_REQUIRE_CU(cuInit(0), CUDA_ERROR_NO_DEVICE);  // sticky, as the driver's init failure
    int count = 0;
    FGPU_REQUIRE_CU(cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
    return std::string();
  }), "");
}

TEST(SimInit, ErrorNamesAndStrings) {
  const char* text = nullptr;
  ASSERT_EQ(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &text), CUDA_SUCCESS);
  EXPECT_STREQ(text, "CUDA_ERROR_OUT_OF_MEMORY");
  ASSERT_EQ(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &text), CUDA_SUCCESS);
  EXPECT_STREQ(text, "out of memory");
  ASSERT_EQ(cuGetErrorString(CUDA_SUCCESS, &text), CUDA_SUCCESS);
  EXPECT_STREQ(text, "no error");
  EXPECT_EQ(cuGetErrorName(static_cast<CUresult>(777), &text), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGetErrorName(CUDA_SUCCESS, nullptr), CUDA_ERROR_INVALID_VALUE);
}

// --- cuGetProcAddress --------------------------------------------------------------------

void* Exported(const char* name) {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return handle != nullptr ? dlsym(handle, name) : nullptr;
}

struct Lookup {
  CUresult rc;
  void* pfn;
  CUdriverProcAddressQueryResult status;
};

Lookup LookUp(const char* name, int version, cuuint64_t flags) {
  Lookup result{};
  result.rc = cuGetProcAddress_v2(name, &result.pfn, version, flags, &result.status);
  return result;
}

TEST(SimProcAddress, EveryTableSymbolIsExported) {
#define FGPU_CUDA_SYMBOL(base, exported, version, per_thread) EXPECT_NE(Exported(#exported), nullptr) << #exported;
#include "core/abi/cuda_symbols.inc"
#undef FGPU_CUDA_SYMBOL
}

TEST(SimProcAddress, PicksNewestVariantAtOrBelowVersion) {
  for (int version : {11030, 12000, 13000}) {
    const Lookup alloc = LookUp("cuMemAlloc", version, CU_GET_PROC_ADDRESS_DEFAULT);
    EXPECT_EQ(alloc.rc, CUDA_SUCCESS);
    EXPECT_EQ(alloc.pfn, Exported("cuMemAlloc_v2")) << version;
    EXPECT_EQ(alloc.status, CU_GET_PROC_ADDRESS_SUCCESS);
  }
  EXPECT_EQ(LookUp("cuCtxCreate", 11030, 0).pfn, Exported("cuCtxCreate_v2"));
  EXPECT_EQ(LookUp("cuCtxCreate", 12000, 0).pfn, Exported("cuCtxCreate_v3"));
  EXPECT_EQ(LookUp("cuCtxCreate", 13000, 0).pfn, Exported("cuCtxCreate_v4"));
  EXPECT_EQ(LookUp("cuCtxSynchronize", 12000, 0).pfn, Exported("cuCtxSynchronize"));
  EXPECT_EQ(LookUp("cuCtxSynchronize", 13000, 0).pfn, Exported("cuCtxSynchronize_v2"));
  EXPECT_EQ(LookUp("cuGetProcAddress", 11030, 0).pfn, Exported("cuGetProcAddress"));
  EXPECT_EQ(LookUp("cuGetProcAddress", 12000, 0).pfn, Exported("cuGetProcAddress_v2"));
}

TEST(SimProcAddress, HonoursTheStreamFlag) {
  for (int version : {11030, 12000, 13000}) {
    EXPECT_EQ(LookUp("cuLaunchKernel", version, CU_GET_PROC_ADDRESS_LEGACY_STREAM).pfn, Exported("cuLaunchKernel"));
    EXPECT_EQ(LookUp("cuLaunchKernel", version, CU_GET_PROC_ADDRESS_DEFAULT).pfn, Exported("cuLaunchKernel"));
    EXPECT_EQ(LookUp("cuLaunchKernel", version, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM).pfn,
              Exported("cuLaunchKernel_ptsz"));
    EXPECT_EQ(LookUp("cuMemcpyHtoD", version, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM).pfn,
              Exported("cuMemcpyHtoD_v2_ptds"));
    // No per-thread variant exists: the legacy one is returned.
    EXPECT_EQ(LookUp("cuMemAlloc", version, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM).pfn,
              Exported("cuMemAlloc_v2"));
  }
}

TEST(SimProcAddress, UnknownAndTooNewSymbolsSucceedWithNull) {
  Lookup unknown = LookUp("cuNoSuchFunction", 12000, 0);
  EXPECT_EQ(unknown.rc, CUDA_SUCCESS);
  EXPECT_EQ(unknown.pfn, nullptr);
  EXPECT_EQ(unknown.status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  Lookup too_new = LookUp("cuMemCreate", 10000, 0);  // introduced in 10.2
  EXPECT_EQ(too_new.rc, CUDA_SUCCESS);
  EXPECT_EQ(too_new.pfn, nullptr);
  EXPECT_EQ(too_new.status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  void* pfn = reinterpret_cast<void*>(1);
  EXPECT_EQ(cuGetProcAddress("cuMemAlloc", &pfn, 14000, 0), CUDA_ERROR_INVALID_VALUE);  // newer than the driver
  EXPECT_EQ(cuGetProcAddress("cuMemAlloc", &pfn, 12000, 1u << 7), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGetProcAddress(nullptr, &pfn, 12000, 0), CUDA_ERROR_INVALID_VALUE);
}

TEST(SimProcAddress, WorksBeforeCuInit) {
  EXPECT_EQ(RunExecSim([] {
    void* pfn = nullptr;
    FGPU_REQUIRE_CU(cuGetProcAddress("cuInit", &pfn, 12000, 0), CUDA_SUCCESS);
    FGPU_REQUIRE(pfn == Exported("cuInit"));
    FGPU_REQUIRE_CU(reinterpret_cast<CUresult (*)(unsigned)>(pfn)(0), CUDA_SUCCESS);
    return std::string();
  }), "");
}

// --- devices and contexts ------------------------------------------------------------------

TEST(SimDevice, QueriesMatchTheConfig) {
  EXPECT_EQ(RunExecSim([] {
    FGPU_REQUIRE_CU(cuInit(0), CUDA_SUCCESS);
    char name[128];
    FGPU_REQUIRE_CU(cuDeviceGetName(name, sizeof(name), 1), CUDA_SUCCESS);
    FGPU_REQUIRE(std::string(name) == "NVIDIA H100 80GB HBM3");
    size_t total = 0;
    FGPU_REQUIRE_CU(cuDeviceTotalMem_v2(&total, 0), CUDA_SUCCESS);
    FGPU_REQUIRE(total == 8ull << 30);
    int sms = 0;
    FGPU_REQUIRE_CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0), CUDA_SUCCESS);
    FGPU_REQUIRE(sms == 16);
    int major = 0, minor = 0;
    FGPU_REQUIRE_CU(cuDeviceComputeCapability(&major, &minor, 0), CUDA_SUCCESS);
    FGPU_REQUIRE(major == 9 && minor == 0);
    CUuuid uuid0{}, uuid1{};
    FGPU_REQUIRE_CU(cuDeviceGetUuid_v2(&uuid0, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuDeviceGetUuid_v2(&uuid1, 1), CUDA_SUCCESS);
    FGPU_REQUIRE(std::memcmp(uuid0.bytes, uuid1.bytes, 16) != 0);
    char bus[32];
    FGPU_REQUIRE_CU(cuDeviceGetPCIBusId(bus, sizeof(bus), 1), CUDA_SUCCESS);
    CUdevice found = -1;
    FGPU_REQUIRE_CU(cuDeviceGetByPCIBusId(&found, bus), CUDA_SUCCESS);
    FGPU_REQUIRE(found == 1);
    FGPU_REQUIRE_CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 2),
                    CUDA_ERROR_INVALID_DEVICE);
    FGPU_REQUIRE_CU(cuDeviceGetAttribute(&sms, static_cast<CUdevice_attribute>(200), 0), CUDA_ERROR_INVALID_VALUE);
    CUdevice dev = 0;
    FGPU_REQUIRE_CU(cuDeviceGet(&dev, 7), CUDA_ERROR_INVALID_DEVICE);
    return std::string();
  }), "");
}

TEST(SimContext, ContextsChargeTheirOverhead) {
  EXPECT_EQ(RunExecSim([] {
    FGPU_REQUIRE_CU(cuInit(0), CUDA_SUCCESS);
    CUcontext primary = nullptr;
    FGPU_REQUIRE_CU(cuDevicePrimaryCtxRetain(&primary, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxSetCurrent(primary), CUDA_SUCCESS);
    size_t free0 = 0, total = 0;
    FGPU_REQUIRE_CU(cuMemGetInfo_v2(&free0, &total), CUDA_SUCCESS);
    FGPU_REQUIRE(total - free0 == 500 * kMiB);
    CUcontext created = nullptr;
    FGPU_REQUIRE_CU(cuCtxCreate_v4(&created, nullptr, 0, 0), CUDA_SUCCESS);
    size_t free1 = 0;
    FGPU_REQUIRE_CU(cuMemGetInfo_v2(&free1, &total), CUDA_SUCCESS);
    FGPU_REQUIRE(free0 - free1 == 500 * kMiB);
    CUcontext current = nullptr;
    FGPU_REQUIRE_CU(cuCtxGetCurrent(&current), CUDA_SUCCESS);
    FGPU_REQUIRE(current == created);  // cuCtxCreate pushes the new context
    FGPU_REQUIRE_CU(cuCtxDestroy_v2(created), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxDestroy_v2(created), CUDA_ERROR_INVALID_CONTEXT);
    FGPU_REQUIRE_CU(cuCtxGetCurrent(&current), CUDA_SUCCESS);
    FGPU_REQUIRE(current == primary);
    FGPU_REQUIRE_CU(cuMemGetInfo_v2(&free1, &total), CUDA_SUCCESS);
    FGPU_REQUIRE(free1 == free0);
    unsigned flags = 0;
    int active = 0;
    FGPU_REQUIRE_CU(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
    FGPU_REQUIRE(active == 1);
    FGPU_REQUIRE_CU(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
    FGPU_REQUIRE(active == 0);
    FGPU_REQUIRE_CU(cuDevicePrimaryCtxRelease_v2(0), CUDA_ERROR_INVALID_CONTEXT);
    FGPU_REQUIRE_CU(cuCtxSetCurrent(reinterpret_cast<CUcontext>(0x1234)), CUDA_ERROR_INVALID_CONTEXT);
    CUexecAffinityParam affinity{};
    FGPU_REQUIRE_CU(cuCtxCreate_v3(&created, &affinity, 1, 0, 0), CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY);
    return std::string();
  }), "");
}

TEST(SimContext, PushPopAndPerContextDevice) {
  EXPECT_EQ(RunExecSim([] {
    FGPU_REQUIRE_CU(cuInit(0), CUDA_SUCCESS);
    CUcontext a = nullptr, b = nullptr, popped = nullptr;
    FGPU_REQUIRE_CU(cuCtxCreate_v2(&a, 0, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxCreate_v2(&b, 0, 1), CUDA_SUCCESS);
    CUdevice dev = -1;
    FGPU_REQUIRE_CU(cuCtxGetDevice(&dev), CUDA_SUCCESS);
    FGPU_REQUIRE(dev == 1);
    FGPU_REQUIRE_CU(cuCtxGetDevice_v2(&dev, a), CUDA_SUCCESS);
    FGPU_REQUIRE(dev == 0);
    FGPU_REQUIRE_CU(cuCtxPopCurrent_v2(&popped), CUDA_SUCCESS);
    FGPU_REQUIRE(popped == b);
    FGPU_REQUIRE_CU(cuCtxGetDevice(&dev), CUDA_SUCCESS);
    FGPU_REQUIRE(dev == 0);
    FGPU_REQUIRE_CU(cuCtxPopCurrent_v2(&popped), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxPopCurrent_v2(&popped), CUDA_ERROR_INVALID_CONTEXT);
    FGPU_REQUIRE_CU(cuCtxGetDevice(&dev), CUDA_ERROR_INVALID_CONTEXT);
    return std::string();
  }), "");
}

// cuCtxGetCurrent is a thread-local read, as in the real driver: a context destroyed by another
// thread while bound here is still reported, and the calls that use it say it is destroyed.
TEST(SimContext, GetCurrentReportsTheBoundContextUnvalidated) {
  EXPECT_EQ(RunExecSim([] {
    FGPU_REQUIRE_CU(cuInit(0), CUDA_SUCCESS);
    CUcontext bound = nullptr, current = nullptr;
    FGPU_REQUIRE_CU(cuCtxCreate_v2(&bound, 0, 0), CUDA_SUCCESS);
    std::atomic<CUresult> destroyed{CUDA_ERROR_UNKNOWN};
    std::thread([&] { destroyed = cuCtxDestroy_v2(bound); }).join();
    FGPU_REQUIRE_CU(destroyed.load(), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxGetCurrent(&current), CUDA_SUCCESS);
    FGPU_REQUIRE(current == bound);
    FGPU_REQUIRE_CU(cuCtxSynchronize(), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    FGPU_REQUIRE_CU(cuCtxPopCurrent_v2(&current), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxGetCurrent(&current), CUDA_SUCCESS);
    FGPU_REQUIRE(current == nullptr);
    return std::string();
  }), "");
}

// --- time: streams, events, launches ---------------------------------------------------------

TEST(SimTime, KernelsTakeDeviceTimeScaledByWaves) {
  EXPECT_EQ(RunExecSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    Kernels k;
    FGPU_REQUIRE(k.Load());
    CUevent start = nullptr, stop = nullptr;
    FGPU_REQUIRE_CU(cuEventCreate(&start, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuEventCreate(&stop, 0), CUDA_SUCCESS);
    // A 50 ms kernel first holds the stream, so the launches below queue behind it with no
    // idle gaps however slowly this (possibly sanitized, loaded) host issues them.
    unsigned long long hold_ns = 50'000'000;
    void* hold_params[] = {&hold_ns};
    FGPU_REQUIRE_CU(cuLaunchKernel(k.spin, 1, 1, 1, 1, 1, 1, 0, nullptr, hold_params, nullptr), CUDA_SUCCESS);
    // 20 launches of 2 waves (32 blocks on 16 SMs) of 100 µs = 4 ms.
    FGPU_REQUIRE_CU(cuEventRecord(start, nullptr), CUDA_SUCCESS);
    for (int i = 0; i < 20; ++i) {
      FGPU_REQUIRE_CU(cuLaunchKernel(k.k100us, 32, 1, 1, 128, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_SUCCESS);
    }
    FGPU_REQUIRE_CU(cuEventRecord(stop, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuEventQuery(stop), CUDA_ERROR_NOT_READY);
    float ms = 0;
    FGPU_REQUIRE_CU(cuEventElapsedTime(&ms, start, stop), CUDA_ERROR_NOT_READY);
    const auto before = std::chrono::steady_clock::now();
    FGPU_REQUIRE_CU(cuEventSynchronize(stop), CUDA_SUCCESS);
    FGPU_REQUIRE(SecondsSince(before) > 0.003);  // synchronisation waits real time
    FGPU_REQUIRE_CU(cuEventElapsedTime(&ms, start, stop), CUDA_SUCCESS);
    FGPU_REQUIRE(ms > 3.99f && ms < 4.2f);
    return std::string();
  }), "");
}

TEST(SimTime, SpinKernelTakesItsParameter) {
  EXPECT_EQ(RunExecSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    Kernels k;
    FGPU_REQUIRE(k.Load());
    CUstream stream = nullptr;
    FGPU_REQUIRE_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    unsigned long long ns = 20'000'000;  // 20 ms
    void* params[] = {&ns};
    const auto before = std::chrono::steady_clock::now();
    FGPU_REQUIRE_CU(cuLaunchKernel(k.spin, 16, 1, 1, 1, 1, 1, 0, stream, params, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamQuery(stream), CUDA_ERROR_NOT_READY);
    FGPU_REQUIRE_CU(cuStreamSynchronize(stream), CUDA_SUCCESS);
    const double waited = SecondsSince(before);
    FGPU_REQUIRE(waited > 0.019 && waited < 0.2);
    FGPU_REQUIRE_CU(cuStreamQuery(stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(stream), CUDA_ERROR_INVALID_HANDLE);
    return std::string();
  }), "");
}

TEST(SimTime, HostFunctionRunsAfterPriorWork) {
  EXPECT_EQ(RunExecSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    Kernels k;
    FGPU_REQUIRE(k.Load());
    unsigned long long ns = 10'000'000;
    void* params[] = {&ns};
    FGPU_REQUIRE_CU(cuLaunchKernel(k.spin, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
    static std::atomic<bool> ran{false};
    const auto before = std::chrono::steady_clock::now();
    static std::atomic<double> ran_after{0};
    static std::chrono::steady_clock::time_point t0;
    t0 = before;
    FGPU_REQUIRE_CU(cuLaunchHostFunc(nullptr, [](void*) {
      ran_after = SecondsSince(t0);
      ran = true;
    }, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE(ran.load());
    FGPU_REQUIRE(ran_after.load() >= 0.009);
    return std::string();
  }), "");
}

TEST(SimLaunch, InvalidLaunchesGetTheDriverCodes) {
  EXPECT_EQ(RunExecSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    Kernels k;
    FGPU_REQUIRE(k.Load());
    FGPU_REQUIRE_CU(cuLaunchKernel(k.k100us, 0, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuLaunchKernel(k.k100us, 1, 1, 1, 1025, 1, 1, 0, nullptr, nullptr, nullptr),
                    CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuLaunchKernel(k.k100us, 1, 1, 1, 1, 1, 1, 64 * 1024, nullptr, nullptr, nullptr),
                    CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuFuncSetAttribute(k.k100us, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 * 1024),
                    CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuLaunchKernel(k.k100us, 1, 1, 1, 1, 1, 1, 64 * 1024, nullptr, nullptr, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuLaunchKernel(reinterpret_cast<CUfunction>(0x42), 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr),
                    CUDA_ERROR_INVALID_HANDLE);
    FGPU_REQUIRE_CU(cuLaunchKernel(k.k100us, 1, 1, 1, 1, 1, 1, 0, reinterpret_cast<CUstream>(0x42), nullptr, nullptr),
                    CUDA_ERROR_INVALID_HANDLE);
    FGPU_REQUIRE_CU(cuLaunchCooperativeKernel(k.k100us, 16 * 33, 1, 1, 1, 1, 1, 0, nullptr, nullptr),
                    CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
    FGPU_REQUIRE_CU(cuLaunchCooperativeKernel(k.k100us, 16, 1, 1, 1, 1, 1, 0, nullptr, nullptr), CUDA_SUCCESS);
    CUfunction missing = nullptr;
    FGPU_REQUIRE_CU(cuModuleGetFunction(&missing, k.module, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
    CUmodule bad = nullptr;
    FGPU_REQUIRE_CU(cuModuleLoadData(&bad, "not ptx at all"), CUDA_ERROR_INVALID_PTX);
    FGPU_REQUIRE_CU(cuModuleUnload(k.module), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuLaunchKernel(k.k100us, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr), CUDA_ERROR_INVALID_HANDLE);
    return std::string();
  }), "");
}

TEST(SimLaunch, LaunchKernelExHonoursItsConfig) {
  EXPECT_EQ(RunExecSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    Kernels k;
    FGPU_REQUIRE(k.Load());
    CUlaunchAttribute cooperative{};
    cooperative.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    cooperative.value.cooperative = 1;
    CUlaunchConfig config{};
    config.gridDimX = 16 * 33;
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = config.blockDimY = config.blockDimZ = 1;
    config.attrs = &cooperative;
    config.numAttrs = 1;
    FGPU_REQUIRE_CU(cuLaunchKernelEx(&config, k.k100us, nullptr, nullptr), CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
    config.numAttrs = 0;
    FGPU_REQUIRE_CU(cuLaunchKernelEx_ptsz(&config, k.k100us, nullptr, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSynchronize_ptsz(nullptr), CUDA_SUCCESS);
    return std::string();
  }), "");
}

// --- graphs ---------------------------------------------------------------------------------

TEST(SimGraph, CapturedLaunchesReplayOnTheTimeline) {
  EXPECT_EQ(RunExecSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    Kernels k;
    FGPU_REQUIRE(k.Load());
    CUstream stream = nullptr;
    FGPU_REQUIRE_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
    for (int i = 0; i < 10; ++i) {
      FGPU_REQUIRE_CU(cuLaunchKernel(k.k100us, 16, 1, 1, 32, 1, 1, 0, stream, nullptr, nullptr), CUDA_SUCCESS);
    }
    CUstreamCaptureStatus status{};
    FGPU_REQUIRE_CU(cuStreamIsCapturing(stream, &status), CUDA_SUCCESS);
    FGPU_REQUIRE(status == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CUgraph graph = nullptr;
    FGPU_REQUIRE_CU(cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
    size_t nodes = 0;
    FGPU_REQUIRE_CU(cuGraphGetNodes(graph, nullptr, &nodes), CUDA_SUCCESS);
    FGPU_REQUIRE(nodes == 10);
    CUgraphExec exec = nullptr;
    FGPU_REQUIRE_CU(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
    CUevent start = nullptr, stop = nullptr;
    FGPU_REQUIRE_CU(cuEventCreate(&start, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuEventCreate(&stop, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuEventRecord(start, stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphLaunch(exec, stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuEventRecord(stop, stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSynchronize(stream), CUDA_SUCCESS);
    float ms = 0;
    FGPU_REQUIRE_CU(cuEventElapsedTime(&ms, start, stop), CUDA_SUCCESS);
    FGPU_REQUIRE(ms > 0.99f && ms < 1.2f);  // 10 × 100 µs
    FGPU_REQUIRE_CU(cuGraphExecDestroy(exec), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphLaunch(exec, stream), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuGraphDestroy(graph), CUDA_SUCCESS);
    return std::string();
  }), "");
}

TEST(SimGraph, MemoryNodesAreChargedWhileResident) {
  EXPECT_EQ(RunExecSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUgraph graph = nullptr;
    FGPU_REQUIRE_CU(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
    CUDA_MEM_ALLOC_NODE_PARAMS params{};
    params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    params.poolProps.location.id = 0;
    params.bytesize = 1000 * kMiB;
    CUgraphNode alloc = nullptr, release = nullptr;
    FGPU_REQUIRE_CU(cuGraphAddMemAllocNode(&alloc, graph, nullptr, 0, &params), CUDA_SUCCESS);
    FGPU_REQUIRE(params.dptr != 0);
    FGPU_REQUIRE_CU(cuGraphAddMemFreeNode(&release, graph, &alloc, 1, params.dptr), CUDA_SUCCESS);
    CUgraphExec exec = nullptr;
    FGPU_REQUIRE_CU(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
    size_t free0 = 0, free1 = 0, total = 0;
    FGPU_REQUIRE_CU(cuMemGetInfo_v2(&free0, &total), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxSynchronize(), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemGetInfo_v2(&free1, &total), CUDA_SUCCESS);
    FGPU_REQUIRE(free0 - free1 == 1000 * kMiB);
    cuuint64_t reserved = 0;
    FGPU_REQUIRE_CU(cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved), CUDA_SUCCESS);
    FGPU_REQUIRE(reserved == 1000 * kMiB);
    FGPU_REQUIRE_CU(cuDeviceGraphMemTrim(0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemGetInfo_v2(&free1, &total), CUDA_SUCCESS);
    FGPU_REQUIRE(free1 == free0);
    // A graph whose allocation does not fit fails to launch with OUT_OF_MEMORY.
    params.bytesize = 9ull << 30;
    CUgraph big = nullptr;
    FGPU_REQUIRE_CU(cuGraphCreate(&big, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphAddMemAllocNode(&alloc, big, nullptr, 0, &params), CUDA_SUCCESS);
    CUgraphExec big_exec = nullptr;
    FGPU_REQUIRE_CU(cuGraphInstantiateWithFlags(&big_exec, big, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphLaunch(big_exec, nullptr), CUDA_ERROR_OUT_OF_MEMORY);
    FGPU_REQUIRE_CU(cuMemGetInfo_v2(&free1, &total), CUDA_SUCCESS);
    FGPU_REQUIRE(free1 == free0);
    return std::string();
  }), "");
}

}  // namespace
}  // namespace fgpu::sim::testing

namespace fgpu::sim::testing {
namespace {

TEST(SimVisibleDevices, ReorderedIndicesBecomeOrdinals) {
  EXPECT_EQ(RunExecSim([] {
    setenv("CUDA_VISIBLE_DEVICES", "1,0", 1);
    FGPU_REQUIRE_CU(cuInit(0), CUDA_SUCCESS);
    int count = 0;
    FGPU_REQUIRE_CU(cuDeviceGetCount(&count), CUDA_SUCCESS);
    FGPU_REQUIRE(count == 2);
    auto all = SharedDevices::Attach(LoadSimConfig(getenv(kConfigEnv)).value(), getenv(kSegmentEnv));
    FGPU_REQUIRE(all.ok());
    // Ordinal 0 is physical device 1: its memory is what an allocation on ordinal 0 charges.
    PrimaryContext ctx(0);
    FGPU_REQUIRE(ctx.ok());
    CUdeviceptr ptr = 0;
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&ptr, 64 * kMiB), CUDA_SUCCESS);
    FGPU_REQUIRE((*all)->Memory(1).used == 564 * kMiB);  // context + allocation
    FGPU_REQUIRE((*all)->Memory(0).used == 0);
    return std::string();
  }), "");
}

TEST(SimVisibleDevices, UuidPrefixesInvalidEntriesAndEmpty) {
  EXPECT_EQ(RunExecSim([] {
    auto config = LoadSimConfig(getenv(kConfigEnv));
    FGPU_REQUIRE(config.ok());
    const std::string uuid1 = config->devices[1].uuid;
    setenv("CUDA_VISIBLE_DEVICES", uuid1.substr(0, 12).c_str(), 1);  // "GPU-" + 8 hex digits
    FGPU_REQUIRE_CU(cuInit(0), CUDA_SUCCESS);
    int count = 0;
    FGPU_REQUIRE_CU(cuDeviceGetCount(&count), CUDA_SUCCESS);
    FGPU_REQUIRE(count == 1);
    char bus[32];
    FGPU_REQUIRE_CU(cuDeviceGetPCIBusId(bus, sizeof(bus), 0), CUDA_SUCCESS);
    FGPU_REQUIRE(std::string(config->devices[1].pci_bus_id).find(bus) != std::string::npos);
    return std::string();
  }), "");
  EXPECT_EQ(RunExecSim([] {
    setenv("CUDA_VISIBLE_DEVICES", "1,7,0", 1);  // stops at the invalid entry
    FGPU_REQUIRE_CU(cuInit(0), CUDA_SUCCESS);
    int count = 0;
    FGPU_REQUIRE_CU(cuDeviceGetCount(&count), CUDA_SUCCESS);
    FGPU_REQUIRE(count == 1);
    return std::string();
  }), "");
  EXPECT_EQ(RunExecSim([] {
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    FGPU_REQUIRE_CU(cuInit(0), CUDA_ERROR_NO_DEVICE);
    return std::string();
  }), "");
}

}  // namespace
}  // namespace fgpu::sim::testing
