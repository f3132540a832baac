// CUDA on a MIG compute instance: CUDA_VISIBLE_DEVICES=MIG-<uuid> shows exactly that instance,
// with its GPU instance's memory and its SMs, and allocations stop at the instance's memory.
// Each test runs in a forked child with its own cuInit and shared segment.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/abi/cuda_api.h"
#include "sim/cuda/child_process.h"
#include "sim/cuda/sim_test_env.h"
#include "sim/state/shared_devices.h"

namespace fgpu::sim::testing {
namespace {

constexpr const char* kH100 = R"({"devices": [{"name": "NVIDIA H100 80GB HBM3",
  "uuid": "GPU-11111111-2222-3333-4444-555555555555"}]})";
constexpr uint32_t k1g10gb = 19, k3g40gb = 9;
constexpr uint32_t kCiFull1 = 0, kCiFull3 = 2;  // NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE / _3_SLICE

TEST(SimMig, MigUuidShowsOneInstanceWithItsMemoryAndSms) {
  EXPECT_EQ(RunWithConfig(kH100, "mig-test", [] {
              auto attached = AttachFromEnvironment();
              FGPU_REQUIRE(attached.ok());
              SharedDevices& gpu = **attached;
              FGPU_REQUIRE(gpu.SetMigMode(0, true) == MigResult::kOk);
              uint32_t small = 0, big = 0, small_ci = 0, big_ci = 0;
              FGPU_REQUIRE(gpu.CreateGpuInstance(0, k1g10gb, -1, &small) == MigResult::kOk);
              FGPU_REQUIRE(gpu.CreateComputeInstance(0, small, kCiFull1, -1, &small_ci) == MigResult::kOk);
              FGPU_REQUIRE(gpu.CreateGpuInstance(0, k3g40gb, -1, &big) == MigResult::kOk);
              FGPU_REQUIRE(gpu.CreateComputeInstance(0, big, kCiFull3, -1, &big_ci) == MigResult::kOk);
              const std::string uuid = MigUuid(gpu.spec(0).uuid, small, small_ci);
              ::setenv("CUDA_VISIBLE_DEVICES", ("0," + uuid).c_str(), 1);  // the MIG device wins

              FGPU_REQUIRE_CU(cuInit(0), CUDA_SUCCESS);
              int count = 0;
              FGPU_REQUIRE_CU(cuDeviceGetCount(&count), CUDA_SUCCESS);
              FGPU_REQUIRE(count == 1);
              size_t total = 0;
              FGPU_REQUIRE_CU(cuDeviceTotalMem_v2(&total, 0), CUDA_SUCCESS);
              FGPU_REQUIRE(total == 9984 * kMiB);
              int sms = 0;
              FGPU_REQUIRE_CU(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0), CUDA_SUCCESS);
              FGPU_REQUIRE(sms == 16);
              CUuuid bytes{};
              FGPU_REQUIRE_CU(cuDeviceGetUuid(&bytes, 0), CUDA_SUCCESS);
              FGPU_REQUIRE(static_cast<unsigned char>(bytes.bytes[0]) == std::stoul(uuid.substr(4, 2), nullptr, 16));

              PrimaryContext ctx;
              FGPU_REQUIRE(ctx.ok());
              size_t free = 0;
              FGPU_REQUIRE_CU(cuMemGetInfo_v2(&free, &total), CUDA_SUCCESS);
              FGPU_REQUIRE(total == 9984 * kMiB && free < total);
              CUdeviceptr most = 0, more = 0;
              FGPU_REQUIRE_CU(cuMemAlloc_v2(&most, free - 4 * kMiB), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemAlloc_v2(&more, 64 * kMiB), CUDA_ERROR_OUT_OF_MEMORY);
              // The other instance and the GPU as a whole are untouched.
              FGPU_REQUIRE(gpu.GpuInstanceMemory(0, big).used == 0);
              FGPU_REQUIRE(gpu.Memory(0).free > 60 * 1024 * kMiB);
              // A process on the instance keeps it from being destroyed.
              FGPU_REQUIRE(gpu.DestroyComputeInstance(0, small, small_ci) == MigResult::kInUse);
              FGPU_REQUIRE_CU(cuMemFree_v2(most), CUDA_SUCCESS);
              return std::string();
            }),
            "");
}

TEST(SimMig, GpuInMigModeIsNotEnumeratedWithoutMigUuid) {
  EXPECT_EQ(RunWithConfig(kH100, "mig-test", [] {
              auto attached = AttachFromEnvironment();
              FGPU_REQUIRE(attached.ok());
              FGPU_REQUIRE((*attached)->SetMigMode(0, true) == MigResult::kOk);
              ::unsetenv("CUDA_VISIBLE_DEVICES");
              FGPU_REQUIRE_CU(cuInit(0), CUDA_ERROR_NO_DEVICE);
              return std::string();
            }),
            "");
}

}  // namespace
}  // namespace fgpu::sim::testing
