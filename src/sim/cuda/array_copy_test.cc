// Tests of copies from and to CUDA arrays (copy_3d.h) through the exported C ABI: arrays hold
// real data, 2D and 3D copies move it between every kind of memory, and the documented
// validation refuses what does not fit. Each test runs in a forked child.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "core/abi/cuda_api.h"
#include "core/units.h"
#include "sim/cuda/child_process.h"
#include "sim/cuda/sim_test_env.h"

namespace fgpu::sim::testing {
namespace {

constexpr const char* kArrayCopyConfig = R"({
  "devices": [{"memory": "8GiB", "granularity": "2MiB", "context_overhead": "300MiB"},
              {"memory": "8GiB", "granularity": "2MiB", "context_overhead": "300MiB"}]
})";

std::string RunArrayCopy(const std::function<std::string()>& body) {
  return RunWithConfig(kArrayCopyConfig, "array-copy-test", body);
}

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(seed + i * 7);
  return bytes;
}

TEST(SimArrayCopy, TwoDimensionalCopiesRoundTripThroughAnArray) {
  EXPECT_EQ(RunArrayCopy([] {
              PrimaryContext ctx;
              FGPU_REQUIRE(ctx.ok());
              CUDA_ARRAY_DESCRIPTOR desc{16, 8, CU_AD_FORMAT_UNSIGNED_INT16, 2};  // 4-byte texels, 64-byte rows
              CUarray array = nullptr;
              FGPU_REQUIRE_CU(cuArrayCreate_v2(&array, &desc), CUDA_SUCCESS);
              const std::vector<uint8_t> host = Pattern(100 * 8, 3);  // pitch 100
              CUDA_MEMCPY2D in{};
              in.srcMemoryType = CU_MEMORYTYPE_HOST;
              in.srcHost = host.data();
              in.srcPitch = 100;
              in.dstMemoryType = CU_MEMORYTYPE_ARRAY;
              in.dstArray = array;
              in.WidthInBytes = 64;
              in.Height = 8;
              FGPU_REQUIRE_CU(cuMemcpy2D_v2(&in), CUDA_SUCCESS);
              // Back out of a sub-rectangle into device memory, then to the host.
              CUdeviceptr dev = 0;
              FGPU_REQUIRE_CU(cuMemAlloc_v2(&dev, 4096), CUDA_SUCCESS);
              CUDA_MEMCPY2D out{};
              out.srcMemoryType = CU_MEMORYTYPE_ARRAY;
              out.srcArray = array;
              out.srcXInBytes = 8;
              out.srcY = 2;
              out.dstMemoryType = CU_MEMORYTYPE_DEVICE;
              out.dstDevice = dev;
              out.dstPitch = 32;
              out.WidthInBytes = 32;
              out.Height = 6;
              FGPU_REQUIRE_CU(cuMemcpy2D_v2(&out), CUDA_SUCCESS);
              std::vector<uint8_t> back(32 * 6);
              FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(back.data(), dev, back.size()), CUDA_SUCCESS);
              for (size_t row = 0; row < 6; ++row) {
                FGPU_REQUIRE(std::memcmp(&back[row * 32], &host[(row + 2) * 100 + 8], 32) == 0);
              }
              // Refusals: past the array's rows, an offset or a width that is not whole texels.
              out.srcY = 3;
              FGPU_REQUIRE_CU(cuMemcpy2D_v2(&out), CUDA_ERROR_INVALID_VALUE);
              out.srcY = 2;
              out.srcXInBytes = 6;
              FGPU_REQUIRE_CU(cuMemcpy2D_v2(&out), CUDA_ERROR_INVALID_VALUE);
              out.srcXInBytes = 36;  // 36 + 32 > 64
              FGPU_REQUIRE_CU(cuMemcpy2D_v2(&out), CUDA_ERROR_INVALID_VALUE);
              out.srcXInBytes = 8;
              out.WidthInBytes = 30;
              FGPU_REQUIRE_CU(cuMemcpy2D_v2(&out), CUDA_ERROR_INVALID_VALUE);
              out.WidthInBytes = 32;
              out.srcArray = reinterpret_cast<CUarray>(0x1234);  // copies document no INVALID_HANDLE
              FGPU_REQUIRE_CU(cuMemcpy2D_v2(&out), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuArrayDestroy(array), CUDA_SUCCESS);
              out.srcArray = array;
              FGPU_REQUIRE_CU(cuMemcpy2D_v2(&out), CUDA_ERROR_INVALID_VALUE);  // destroyed
              FGPU_REQUIRE_CU(cuMemFree_v2(dev), CUDA_SUCCESS);
              return std::string();
            }),
            "");
}

}  // namespace
}  // namespace fgpu::sim::testing
