// Tests of the tensor-map encoders: the documented requirements are enforced, valid requests
// fill the 128-byte map deterministically, and the address can be replaced.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

#include "core/abi/cuda_api.h"
#include "sim/cuda/child_process.h"
#include "sim/cuda/sim_test_env.h"

namespace fgpu::sim::testing {
namespace {

constexpr const char* kTensorMapConfig = R"({
  "devices": [{"count": 1, "memory": "4GiB", "granularity": "2MiB", "sm_count": 16, "context_overhead": "300MiB"}]
})";

std::string RunTensorMapSim(const std::function<std::string()>& body) {
  return RunWithConfig(kTensorMapConfig, "tensor-map-test", body);
}

// A 2D float tensor of 1024 x 512 with rows 4,096 bytes apart, boxes of 32 x 16.
struct TiledArgs {
  CUtensorMapDataType type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  cuuint32_t rank = 2;
  cuuint64_t dims[5] = {1024, 512, 1, 1, 1};
  cuuint64_t strides[4] = {4096, 0, 0, 0};
  cuuint32_t box[5] = {32, 16, 1, 1, 1};
  cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};
  CUtensorMapInterleave interleave = CU_TENSOR_MAP_INTERLEAVE_NONE;
  CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
  CUtensorMapL2promotion l2 = CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
  CUtensorMapFloatOOBfill oob = CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
};

CUresult EncodeTiledMap(CUtensorMap* map, void* address, const TiledArgs& a) {
  return cuTensorMapEncodeTiled(map, a.type, a.rank, address, a.dims, a.strides, a.box, a.element_strides,
                                a.interleave, a.swizzle, a.l2, a.oob);
}

TEST(SimTensorMaps, TiledMapsFollowTheDocumentedRules) {
  EXPECT_EQ(RunTensorMapSim([] {
    alignas(128) CUtensorMap map{}, again{};
    TiledArgs args;
    FGPU_REQUIRE_CU(EncodeTiledMap(&map, nullptr, args), CUDA_ERROR_NOT_INITIALIZED);
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUdeviceptr memory = 0;
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&memory, 4 << 20), CUDA_SUCCESS);
    void* address = reinterpret_cast<void*>(memory);
    FGPU_REQUIRE_CU(EncodeTiledMap(&map, address, args), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(EncodeTiledMap(&again, address, args), CUDA_SUCCESS);
    FGPU_REQUIRE(std::memcmp(&map, &again, sizeof map) == 0);  // deterministic
    FGPU_REQUIRE(map.opaque[0] == memory);
    // Another box gives another map.
    args.box[1] = 8;
    FGPU_REQUIRE_CU(EncodeTiledMap(&again, address, args), CUDA_SUCCESS);
    FGPU_REQUIRE(std::memcmp(&map, &again, sizeof map) != 0);
    args.box[1] = 16;

    // Each documented requirement, one at a time.
    auto refused = [&](const std::function<void(TiledArgs&)>& change, void* where = nullptr) {
      TiledArgs bad = args;
      change(bad);
      return EncodeTiledMap(&again, where != nullptr ? where : address, bad) == CUDA_ERROR_INVALID_VALUE;
    };
    FGPU_REQUIRE(refused([](TiledArgs& a) { a.rank = 0; }));
    FGPU_REQUIRE(refused([](TiledArgs& a) { a.rank = 6; }));
    FGPU_REQUIRE(refused([](TiledArgs& a) { a.interleave = CU_TENSOR_MAP_INTERLEAVE_16B; }));  // rank < 3
    FGPU_REQUIRE(refused([](TiledArgs& a) { a.dims[1] = 0; }));
    FGPU_REQUIRE(refused([](TiledArgs& a) { a.dims[0] = (1ull << 32) + 1; }));
    FGPU_REQUIRE(refused([](TiledArgs& a) { a.strides[0] = 4100; }));  // not a multiple of 16
    FGPU_REQUIRE(refused([](TiledArgs& a) { a.strides[0] = 1ull << 40; }));
    FGPU_REQUIRE(refused([](TiledArgs& a) { a.box[0] = 257; }));
    FGPU_REQUIRE(refused([](TiledArgs& a) { a.box[0] = 3; }));  // 12 bytes: not a multiple of 16
    FGPU_REQUIRE(refused([](TiledArgs& a) { a.box[0] = 64; }));  // 256 bytes: wider than the 128-byte swizzle
    FGPU_REQUIRE(refused([](TiledArgs& a) { a.element_strides[0] = 9; }));
    FGPU_REQUIRE(refused([](TiledArgs& a) {
      const int no_such_type = 16;
      std::memcpy(&a.type, &no_such_type, sizeof no_such_type);
    }));
    FGPU_REQUIRE(refused([](TiledArgs& a) {
      a.type = CU_TENSOR_MAP_DATA_TYPE_INT32;
      a.oob = CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA;  // NaN fill for an integer type
    }));
    FGPU_REQUIRE(refused([](TiledArgs& a) {
      a.rank = 3;
      a.strides[1] = 4096 * 512;
      a.interleave = CU_TENSOR_MAP_INTERLEAVE_32B;  // needs the 32-byte swizzle
    }));
    FGPU_REQUIRE(refused([](TiledArgs&) {}, reinterpret_cast<void*>(memory + 8)));  // 16-byte alignment
    alignas(128) unsigned char storage[sizeof(CUtensorMap) + 64];
    FGPU_REQUIRE_CU(EncodeTiledMap(reinterpret_cast<CUtensorMap*>(storage + 32), address, args),
                    CUDA_ERROR_INVALID_VALUE);  // the map itself 64-byte aligned
    FGPU_REQUIRE_CU(EncodeTiledMap(nullptr, address, args), CUDA_ERROR_INVALID_VALUE);
    // 32-byte interleave with its swizzle, rank 3.
    TiledArgs interleaved = args;
    interleaved.rank = 3;
    interleaved.strides[1] = 4096 * 512;
    interleaved.interleave = CU_TENSOR_MAP_INTERLEAVE_32B;
    interleaved.swizzle = CU_TENSOR_MAP_SWIZZLE_32B;
    FGPU_REQUIRE_CU(EncodeTiledMap(&again, address, interleaved), CUDA_SUCCESS);

    // Replacing the address: the same alignment rules; only maps these calls made.
    FGPU_REQUIRE_CU(cuTensorMapReplaceAddress(&map, reinterpret_cast<void*>(memory + 4096)), CUDA_SUCCESS);
    FGPU_REQUIRE(map.opaque[0] == memory + 4096);
    FGPU_REQUIRE_CU(cuTensorMapReplaceAddress(&again, reinterpret_cast<void*>(memory + 16)), CUDA_ERROR_INVALID_VALUE);
    alignas(128) CUtensorMap blank{};
    FGPU_REQUIRE_CU(cuTensorMapReplaceAddress(&blank, address), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemFree_v2(memory), CUDA_SUCCESS);
    return std::string();
  }), "");
}

TEST(SimTensorMaps, Im2colMapsAndTheWideFormOfNewerDevices) {
  EXPECT_EQ(RunTensorMapSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUdeviceptr memory = 0;
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&memory, 4 << 20), CUDA_SUCCESS);
    void* address = reinterpret_cast<void*>(memory);
    alignas(128) CUtensorMap map{};
    // NHWC half tensor: C 64, W 32, H 32, N 4.
    const cuuint64_t dims[4] = {64, 32, 32, 4};
    const cuuint64_t strides[3] = {128, 128 * 32, 128 * 32 * 32};
    const cuuint32_t element_strides[4] = {1, 1, 1, 1};
    int lower[2] = {-1, -1}, upper[2] = {-1, -1};
    FGPU_REQUIRE_CU(cuTensorMapEncodeIm2col(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4, address, dims, strides, lower,
                                            upper, 64, 128, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA),
                    CUDA_SUCCESS);
    lower[0] = -129;  // rank 4: offsets within [-128, 127]
    FGPU_REQUIRE_CU(cuTensorMapEncodeIm2col(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4, address, dims, strides, lower,
                                            upper, 64, 128, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                    CUDA_ERROR_INVALID_VALUE);
    lower[0] = -1;
    FGPU_REQUIRE_CU(cuTensorMapEncodeIm2col(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4, address, dims, strides, lower,
                                            upper, 64, 1025, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                    CUDA_ERROR_INVALID_VALUE);  // pixels per column <= 1024
    FGPU_REQUIRE_CU(cuTensorMapEncodeIm2col(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, address, dims, strides, lower,
                                            upper, 64, 128, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                            CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                    CUDA_ERROR_INVALID_VALUE);  // rank 3 to 5
    // The wide form needs compute capability 10.0.
    FGPU_REQUIRE_CU(cuTensorMapEncodeIm2colWide(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4, address, dims, strides, -1,
                                                -1, 64, 128, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                                CU_TENSOR_MAP_IM2COL_WIDE_MODE_W, CU_TENSOR_MAP_SWIZZLE_128B,
                                                CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                    CUDA_ERROR_NOT_SUPPORTED);
    FGPU_REQUIRE_CU(cuMemFree_v2(memory), CUDA_SUCCESS);
    return std::string();
  }), "");
}

}  // namespace
}  // namespace fgpu::sim::testing
