// Tests of copies from and to CUDA arrays (copy_3d.h) through the exported C ABI: arrays hold
// real data, 2D and 3D copies move it between every kind of memory, and the documented
// validation refuses what does not fit. Each test runs in a forked child.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <algorithm>
#include <cstdint>
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

TEST(SimArrayCopy, ThreeDimensionalCopiesCheckPitchHeightLodAndExtents) {
  EXPECT_EQ(RunArrayCopy([] {
              PrimaryContext ctx;
              FGPU_REQUIRE(ctx.ok());
              CUDA_ARRAY3D_DESCRIPTOR desc{8, 4, 3, CU_AD_FORMAT_FLOAT, 1, 0};  // 32-byte rows, 4 rows, 3 slices
              CUarray volume = nullptr;
              FGPU_REQUIRE_CU(cuArray3DCreate_v2(&volume, &desc), CUDA_SUCCESS);
              const std::vector<uint8_t> host = Pattern(40 * 5 * 3, 11);  // pitch 40, 5 rows a slice
              CUDA_MEMCPY3D in{};
              in.srcMemoryType = CU_MEMORYTYPE_HOST;
              in.srcHost = host.data();
              in.srcPitch = 40;
              in.srcHeight = 5;
              in.dstMemoryType = CU_MEMORYTYPE_ARRAY;
              in.dstArray = volume;
              in.WidthInBytes = 32;
              in.Height = 4;
              in.Depth = 3;
              FGPU_REQUIRE_CU(cuMemcpy3D_v2(&in), CUDA_SUCCESS);
              // A 2x2x2-texel box out of the middle, to unified (managed) memory, asynchronously.
              CUdeviceptr managed = 0;
              FGPU_REQUIRE_CU(cuMemAllocManaged(&managed, 64, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
              CUstream stream = nullptr;
              FGPU_REQUIRE_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
              CUDA_MEMCPY3D out{};
              out.srcMemoryType = CU_MEMORYTYPE_ARRAY;
              out.srcArray = volume;
              out.srcXInBytes = 4;
              out.srcY = 1;
              out.srcZ = 1;
              out.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
              out.dstDevice = managed;
              out.dstPitch = 8;
              out.dstHeight = 2;
              out.WidthInBytes = 8;
              out.Height = 2;
              out.Depth = 2;
              FGPU_REQUIRE_CU(cuMemcpy3DAsync_v2(&out, stream), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuStreamSynchronize(stream), CUDA_SUCCESS);
              const auto* box = reinterpret_cast<const uint8_t*>(managed);
              for (size_t z = 0; z < 2; ++z) {
                for (size_t y = 0; y < 2; ++y) {
                  FGPU_REQUIRE(std::memcmp(box + (z * 2 + y) * 8, &host[((z + 1) * 5 + y + 1) * 40 + 4], 8) == 0);
                }
              }
              // Documented refusals, each leaving the destination untouched.
              CUDA_MEMCPY3D bad = out;
              bad.srcLOD = 1;
              FGPU_REQUIRE_CU(cuMemcpy3D_v2(&bad), CUDA_ERROR_INVALID_VALUE);
              bad = out;
              bad.reserved1 = &bad;
              FGPU_REQUIRE_CU(cuMemcpy3D_v2(&bad), CUDA_ERROR_INVALID_VALUE);
              bad = out;
              bad.dstPitch = 7;  // < WidthInBytes + dstXInBytes
              FGPU_REQUIRE_CU(cuMemcpy3D_v2(&bad), CUDA_ERROR_INVALID_VALUE);
              bad = out;
              bad.dstHeight = 1;  // < Height + dstY with Depth > 1
              FGPU_REQUIRE_CU(cuMemcpy3D_v2(&bad), CUDA_ERROR_INVALID_VALUE);
              bad = out;
              bad.dstPitch = size_t{1} << 31;  // above CU_DEVICE_ATTRIBUTE_MAX_PITCH
              FGPU_REQUIRE_CU(cuMemcpy3D_v2(&bad), CUDA_ERROR_INVALID_VALUE);
              bad = out;
              bad.srcZ = 2;  // slices 2..3 of 3
              FGPU_REQUIRE_CU(cuMemcpy3D_v2(&bad), CUDA_ERROR_INVALID_VALUE);
              bad = out;
              bad.dstHeight = 64;  // the touched extent leaves the 64-byte allocation
              FGPU_REQUIRE_CU(cuMemcpy3D_v2(&bad), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemcpy3D_v2(nullptr), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemcpy3DAsync_v2(&out, reinterpret_cast<CUstream>(0x1234)), CUDA_ERROR_INVALID_HANDLE);
              // The legacy 32-bit struct and the per-thread form move the same data.
              std::vector<uint8_t> row(32);
              CUDA_MEMCPY3D_v1 legacy{};
              legacy.srcMemoryType = CU_MEMORYTYPE_ARRAY;
              legacy.srcArray = volume;
              legacy.srcY = 3;
              legacy.srcZ = 2;
              legacy.dstMemoryType = CU_MEMORYTYPE_HOST;
              legacy.dstHost = row.data();
              legacy.WidthInBytes = 32;
              legacy.Height = 1;
              legacy.Depth = 1;
              FGPU_REQUIRE_CU(cuMemcpy3D(&legacy), CUDA_SUCCESS);
              FGPU_REQUIRE(std::memcmp(row.data(), &host[(2 * 5 + 3) * 40], 32) == 0);
              std::fill(row.begin(), row.end(), 0);
              CUDA_MEMCPY3D per_thread{};
              per_thread.srcMemoryType = CU_MEMORYTYPE_ARRAY;
              per_thread.srcArray = volume;
              per_thread.srcY = 3;
              per_thread.srcZ = 2;
              per_thread.dstMemoryType = CU_MEMORYTYPE_HOST;
              per_thread.dstHost = row.data();
              per_thread.WidthInBytes = 32;
              per_thread.Height = 1;
              per_thread.Depth = 1;
              FGPU_REQUIRE_CU(cuMemcpy3D_v2_ptds(&per_thread), CUDA_SUCCESS);
              FGPU_REQUIRE(std::memcmp(row.data(), &host[(2 * 5 + 3) * 40], 32) == 0);
              FGPU_REQUIRE_CU(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemFree_v2(managed), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuArrayDestroy(volume), CUDA_SUCCESS);
              return std::string();
            }),
            "");
}

TEST(SimArrayCopy, OneDimensionalArrayCopiesCrossRowsAndCheckElements) {
  EXPECT_EQ(RunArrayCopy([] {
              PrimaryContext ctx;
              FGPU_REQUIRE(ctx.ok());
              CUDA_ARRAY_DESCRIPTOR desc{4, 3, CU_AD_FORMAT_UNSIGNED_INT32, 1};  // 16-byte rows, 48 bytes
              CUarray a = nullptr, b = nullptr, narrow = nullptr;
              FGPU_REQUIRE_CU(cuArrayCreate_v2(&a, &desc), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuArrayCreate_v2(&b, &desc), CUDA_SUCCESS);
              CUDA_ARRAY_DESCRIPTOR bytes_desc{48, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1};
              FGPU_REQUIRE_CU(cuArrayCreate_v2(&narrow, &bytes_desc), CUDA_SUCCESS);
              const std::vector<uint8_t> host = Pattern(48, 5);
              FGPU_REQUIRE_CU(cuMemcpyHtoA_v2(a, 0, host.data(), 48), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemcpyAtoA_v2(b, 4, a, 8, 36), CUDA_SUCCESS);  // crosses rows on both sides
              CUdeviceptr dev = 0;
              FGPU_REQUIRE_CU(cuMemAlloc_v2(&dev, 64), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemcpyAtoD_v2(dev, b, 4, 36), CUDA_SUCCESS);
              std::vector<uint8_t> back(36);
              FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(back.data(), dev, 36), CUDA_SUCCESS);
              FGPU_REQUIRE(std::memcmp(back.data(), &host[8], 36) == 0);
              FGPU_REQUIRE_CU(cuMemcpyDtoA_v2(a, 12, dev, 36), CUDA_SUCCESS);
              std::vector<uint8_t> whole(48);
              FGPU_REQUIRE_CU(cuMemcpyAtoH_v2(whole.data(), a, 0, 48), CUDA_SUCCESS);
              FGPU_REQUIRE(std::memcmp(whole.data(), host.data(), 12) == 0 &&
                           std::memcmp(&whole[12], &host[8], 36) == 0);
              CUstream stream = nullptr;
              FGPU_REQUIRE_CU(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
              std::vector<uint8_t> async_back(16);
              FGPU_REQUIRE_CU(cuMemcpyHtoAAsync_v2(a, 32, host.data(), 16, stream), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemcpyAtoHAsync_v2(async_back.data(), a, 32, 16, stream), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuStreamSynchronize(stream), CUDA_SUCCESS);
              FGPU_REQUIRE(std::memcmp(async_back.data(), host.data(), 16) == 0);
              FGPU_REQUIRE_CU(cuMemcpyAtoH_v2_ptds(async_back.data(), a, 32, 16), CUDA_SUCCESS);
              // Refusals: past the end, not whole elements, a misaligned device pointer, element sizes
              // that differ, a bad array, a NULL host pointer.
              FGPU_REQUIRE_CU(cuMemcpyHtoA_v2(a, 40, host.data(), 16), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemcpyHtoA_v2(a, 0, host.data(), 6), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemcpyHtoA_v2(a, 2, host.data(), 4), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemcpyAtoD_v2(dev + 2, a, 0, 4), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemcpyAtoA_v2(narrow, 0, a, 0, 4), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemcpyAtoH_v2(whole.data(), reinterpret_cast<CUarray>(0x10), 0, 4),
                              CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemcpyAtoH_v2(nullptr, a, 0, 4), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemcpyDtoA_v2(a, 0, dev, 0), CUDA_SUCCESS);  // zero bytes
              // A 1D array through the legacy 32-bit entry points.
              FGPU_REQUIRE_CU(cuMemcpyHtoA(narrow, 3, host.data(), 45), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemcpyAtoH(whole.data(), narrow, 3, 45), CUDA_SUCCESS);
              FGPU_REQUIRE(std::memcmp(whole.data(), host.data(), 45) == 0);
              FGPU_REQUIRE_CU(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemFree_v2(dev), CUDA_SUCCESS);
              for (CUarray x : {a, b, narrow}) FGPU_REQUIRE_CU(cuArrayDestroy(x), CUDA_SUCCESS);
              return std::string();
            }),
            "");
}

TEST(SimArrayCopy, PeerThreeDimensionalCopiesUseEachSidesContext) {
  EXPECT_EQ(RunArrayCopy([] {
              FGPU_REQUIRE_CU(cuInit(0), CUDA_SUCCESS);
              CUcontext zero = nullptr, one = nullptr;
              FGPU_REQUIRE_CU(cuDevicePrimaryCtxRetain(&zero, 0), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuDevicePrimaryCtxRetain(&one, 1), CUDA_SUCCESS);
              CUdeviceptr on_one = 0;
              FGPU_REQUIRE_CU(cuCtxSetCurrent(one), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemAlloc_v2(&on_one, 256), CUDA_SUCCESS);
              const std::vector<uint8_t> host = Pattern(256, 9);
              FGPU_REQUIRE_CU(cuMemcpyHtoD_v2(on_one, host.data(), 256), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuCtxSetCurrent(zero), CUDA_SUCCESS);
              CUDA_ARRAY3D_DESCRIPTOR desc{16, 4, 4, CU_AD_FORMAT_UNSIGNED_INT8, 1, 0};
              CUarray volume = nullptr;
              FGPU_REQUIRE_CU(cuArray3DCreate_v2(&volume, &desc), CUDA_SUCCESS);
              CUDA_MEMCPY3D_PEER copy{};
              copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
              copy.srcDevice = on_one;
              copy.srcContext = one;
              copy.srcPitch = 16;
              copy.srcHeight = 4;
              copy.dstMemoryType = CU_MEMORYTYPE_ARRAY;
              copy.dstArray = volume;
              copy.WidthInBytes = 16;
              copy.Height = 4;
              copy.Depth = 4;
              FGPU_REQUIRE_CU(cuMemcpy3DPeer(&copy), CUDA_SUCCESS);
              std::vector<uint8_t> back(256);
              FGPU_REQUIRE_CU(cuMemcpyAtoH_v2(back.data(), volume, 0, 256), CUDA_SUCCESS);
              FGPU_REQUIRE(back == host);
              FGPU_REQUIRE_CU(cuMemcpy3DPeerAsync_ptsz(&copy, nullptr), CUDA_SUCCESS);
              copy.srcContext = reinterpret_cast<CUcontext>(0x77);
              FGPU_REQUIRE_CU(cuMemcpy3DPeer(&copy), CUDA_ERROR_INVALID_CONTEXT);
              FGPU_REQUIRE_CU(cuMemcpy3DPeer(nullptr), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuArrayDestroy(volume), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemFree_v2(on_one), CUDA_SUCCESS);
              return std::string();
            }),
            "");
}

TEST(SimArrayCopy, BatchesValidateEveryCopyAndReportTheFailingIndex) {
  EXPECT_EQ(RunArrayCopy([] {
              PrimaryContext ctx;
              FGPU_REQUIRE(ctx.ok());
              CUstream stream = nullptr;
              FGPU_REQUIRE_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
              CUdeviceptr a = 0, b = 0;
              FGPU_REQUIRE_CU(cuMemAlloc_v2(&a, 4096), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemAlloc_v2(&b, 4096), CUDA_SUCCESS);
              std::vector<uint8_t> host = Pattern(512, 2), back(512);
              CUdeviceptr dsts[3] = {a, b, reinterpret_cast<CUdeviceptr>(back.data())};
              CUdeviceptr srcs[3] = {reinterpret_cast<CUdeviceptr>(host.data()), a, b};
              size_t sizes[3] = {512, 512, 512};
              CUmemcpyAttributes attrs[2]{};
              attrs[0].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
              attrs[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_ANY;
              size_t idxs[2] = {0, 1};
              size_t fail = 0;
              FGPU_REQUIRE_CU(cuMemcpyBatchAsync(dsts, srcs, sizes, 1, attrs, idxs, 1, &fail, stream), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemcpyBatchAsync_v2(dsts + 1, srcs + 1, sizes + 1, 2, attrs, idxs, 2, stream),
                              CUDA_SUCCESS);
              FGPU_REQUIRE(back == host);
              // Attribute rules: first index 0, increasing, below count; a valid access order.
              size_t bad_idxs[2] = {0, 3};
              FGPU_REQUIRE_CU(cuMemcpyBatchAsync(dsts, srcs, sizes, 3, attrs, bad_idxs, 2, &fail, stream),
                              CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE(fail == SIZE_MAX);
              attrs[0].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_INVALID;
              FGPU_REQUIRE_CU(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 3, attrs, idxs, 1, stream),
                              CUDA_ERROR_INVALID_VALUE);
              attrs[0].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
              // The legacy NULL stream is refused; under _ptsz NULL is the per-thread stream.
              FGPU_REQUIRE_CU(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 1, attrs, idxs, 1, nullptr),
                              CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 1, attrs, idxs, 1, CU_STREAM_LEGACY),
                              CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemcpyBatchAsync_v2_ptsz(dsts, srcs, sizes, 1, attrs, idxs, 1, nullptr), CUDA_SUCCESS);
              // A copy that does not fit: its index, and nothing before it copied.
              std::fill(back.begin(), back.end(), 0);
              size_t sizes_bad[3] = {512, 512, 8192};
              CUdeviceptr dsts2[3] = {reinterpret_cast<CUdeviceptr>(back.data()), b, a};
              CUdeviceptr srcs2[3] = {a, a, b};
              FGPU_REQUIRE_CU(cuMemcpyBatchAsync(dsts2, srcs2, sizes_bad, 3, attrs, idxs, 1, &fail, stream),
                              CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE(fail == 2 && back[0] == 0 && back[511] == 0);
              // 3D batch: host pointer -> array -> device pointer, in elements of the array (4 bytes).
              CUDA_ARRAY3D_DESCRIPTOR desc{8, 4, 0, CU_AD_FORMAT_FLOAT, 1, 0};
              CUarray array = nullptr;
              FGPU_REQUIRE_CU(cuArray3DCreate_v2(&array, &desc), CUDA_SUCCESS);
              CUDA_MEMCPY3D_BATCH_OP ops[2]{};
              ops[0].src.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
              ops[0].src.op.ptr.ptr = reinterpret_cast<CUdeviceptr>(host.data());
              ops[0].src.op.ptr.rowLength = 10;  // 40-byte rows in the source
              ops[0].dst.type = CU_MEMCPY_OPERAND_TYPE_ARRAY;
              ops[0].dst.op.array.array = array;
              ops[0].extent = CUextent3D{8, 4, 1};
              ops[0].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
              ops[1].src.type = CU_MEMCPY_OPERAND_TYPE_ARRAY;
              ops[1].src.op.array.array = array;
              ops[1].src.op.array.offset = CUoffset3D{2, 1, 0};
              ops[1].dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
              ops[1].dst.op.ptr.ptr = b;
              ops[1].extent = CUextent3D{6, 3, 1};  // tightly packed: 24-byte rows
              ops[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
              FGPU_REQUIRE_CU(cuMemcpy3DBatchAsync(1, ops, &fail, 0, stream), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemcpy3DBatchAsync_v2(1, ops + 1, 0, stream), CUDA_SUCCESS);
              std::vector<uint8_t> box(72);
              FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(box.data(), b, 72), CUDA_SUCCESS);
              for (size_t row = 0; row < 3; ++row) {
                FGPU_REQUIRE(std::memcmp(&box[row * 24], &host[(row + 1) * 40 + 8], 24) == 0);
              }
              ops[1].extent.width = 7;  // 2 + 7 > 8 texels
              FGPU_REQUIRE_CU(cuMemcpy3DBatchAsync(2, ops, &fail, 0, stream), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE(fail == 1);
              ops[1].extent = CUextent3D{6, 3, 0};  // zero extents are refused
              FGPU_REQUIRE_CU(cuMemcpy3DBatchAsync(2, ops, &fail, 0, stream), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE(fail == 1);
              ops[1].extent = CUextent3D{6, 3, 1};
              ops[0].src.op.ptr.rowLength = 4;  // shorter than the copy's width
              FGPU_REQUIRE_CU(cuMemcpy3DBatchAsync(2, ops, &fail, 0, stream), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE(fail == 0);
              FGPU_REQUIRE_CU(cuMemcpy3DBatchAsync(2, ops, &fail, 1, stream), CUDA_ERROR_INVALID_VALUE);  // flags
              FGPU_REQUIRE(fail == SIZE_MAX);
              FGPU_REQUIRE_CU(cuArrayDestroy(array), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemFree_v2(a), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemFree_v2(b), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
              return std::string();
            }),
            "");
}

TEST(SimArrayCopy, Nv12PlanesShareTheirArraysStorage) {
  EXPECT_EQ(RunArrayCopy([] {
              PrimaryContext ctx;
              FGPU_REQUIRE(ctx.ok());
              const uint64_t start = FreeBytes();
              CUDA_ARRAY3D_DESCRIPTOR desc{64, 32, 0, CU_AD_FORMAT_NV12, 3, CUDA_ARRAY3D_SURFACE_LDST};
              CUarray frame = nullptr, luma = nullptr, chroma = nullptr, none = nullptr;
              FGPU_REQUIRE_CU(cuArray3DCreate_v2(&frame, &desc), CUDA_SUCCESS);
              FGPU_REQUIRE(FreeBytes() == start - 2 * kMiB);  // 64 * 32 * 3 / 2 bytes, one granule
              FGPU_REQUIRE_CU(cuArrayGetPlane(&luma, frame, 0), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuArrayGetPlane(&chroma, frame, 1), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuArrayGetPlane(&none, frame, 2), CUDA_ERROR_INVALID_VALUE);
              CUDA_ARRAY3D_DESCRIPTOR seen{};
              FGPU_REQUIRE_CU(cuArray3DGetDescriptor_v2(&seen, luma), CUDA_SUCCESS);
              FGPU_REQUIRE(seen.Width == 64 && seen.Height == 32 && seen.Format == CU_AD_FORMAT_UNSIGNED_INT8 &&
                           seen.NumChannels == 1);
              FGPU_REQUIRE_CU(cuArray3DGetDescriptor_v2(&seen, chroma), CUDA_SUCCESS);
              FGPU_REQUIRE(seen.Width == 32 && seen.Height == 16 && seen.Format == CU_AD_FORMAT_UNSIGNED_INT8 &&
                           seen.NumChannels == 2);
              // Write Y and UV through the planes, read the frame back as Y rows then UV rows.
              const std::vector<uint8_t> y = Pattern(64 * 32, 1), uv = Pattern(64 * 16, 100);
              FGPU_REQUIRE_CU(cuMemcpyHtoA_v2(luma, 0, y.data(), y.size()), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemcpyHtoA_v2(chroma, 0, uv.data(), uv.size()), CUDA_SUCCESS);
              std::vector<uint8_t> all(64 * 48);
              CUDA_MEMCPY2D out{};
              out.srcMemoryType = CU_MEMORYTYPE_ARRAY;
              out.srcArray = frame;
              out.dstMemoryType = CU_MEMORYTYPE_HOST;
              out.dstHost = all.data();
              out.dstPitch = 64;
              out.WidthInBytes = 64;
              out.Height = 48;
              FGPU_REQUIRE_CU(cuMemcpy2D_v2(&out), CUDA_SUCCESS);
              FGPU_REQUIRE(std::memcmp(all.data(), y.data(), y.size()) == 0 &&
                           std::memcmp(&all[y.size()], uv.data(), uv.size()) == 0);
              // Planes are not arrays of their own to destroy, and a plain array has no planes.
              FGPU_REQUIRE_CU(cuArrayDestroy(luma), CUDA_ERROR_INVALID_HANDLE);
              FGPU_REQUIRE_CU(cuArrayGetPlane(&none, luma, 0), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuArrayGetPlane(nullptr, frame, 0), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuArrayGetPlane(&none, reinterpret_cast<CUarray>(0x99), 0), CUDA_ERROR_INVALID_HANDLE);
              CUDA_ARRAY3D_DESCRIPTOR odd{63, 32, 0, CU_AD_FORMAT_NV12, 3, 0};
              FGPU_REQUIRE_CU(cuArray3DCreate_v2(&none, &odd), CUDA_ERROR_INVALID_VALUE);
              CUDA_ARRAY3D_DESCRIPTOR channels{64, 32, 0, CU_AD_FORMAT_NV12, 1, 0};
              FGPU_REQUIRE_CU(cuArray3DCreate_v2(&none, &channels), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuArrayDestroy(frame), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemcpyHtoA_v2(luma, 0, y.data(), 16), CUDA_ERROR_INVALID_VALUE);  // gone with it
              FGPU_REQUIRE(FreeBytes() == start);
              return std::string();
            }),
            "");
}

TEST(SimArrayCopy, DeferredMappingArraysLiveInVmmMemory) {
  EXPECT_EQ(RunArrayCopy([] {
              PrimaryContext ctx;
              FGPU_REQUIRE(ctx.ok());
              int supported = 0;
              FGPU_REQUIRE_CU(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED, 0),
                              CUDA_SUCCESS);
              FGPU_REQUIRE(supported == 1);
              const uint64_t start = FreeBytes();
              CUDA_ARRAY3D_DESCRIPTOR desc{256, 256, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_DEFERRED_MAPPING};
              CUarray array = nullptr;
              FGPU_REQUIRE_CU(cuArray3DCreate_v2(&array, &desc), CUDA_SUCCESS);
              FGPU_REQUIRE(FreeBytes() == start);  // its memory comes from a VMM handle
              CUDA_ARRAY_MEMORY_REQUIREMENTS req{};
              FGPU_REQUIRE_CU(cuArrayGetMemoryRequirements(&req, array, 0), CUDA_SUCCESS);
              FGPU_REQUIRE(req.size == 256 * 256 * 4 && req.alignment == 64 * 1024);
              std::vector<uint8_t> texels = Pattern(64, 4), back(64);
              FGPU_REQUIRE_CU(cuMemcpyHtoA_v2(array, 0, texels.data(), 64), CUDA_ERROR_INVALID_VALUE);  // unmapped
              CUmemAllocationProp prop{};
              prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
              prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
              prop.location.id = 0;
              CUmemGenericAllocationHandle handle = 0;
              FGPU_REQUIRE_CU(cuMemCreate(&handle, 2 * kMiB, &prop, 0), CUDA_SUCCESS);
              FGPU_REQUIRE(FreeBytes() == start - 2 * kMiB);
              CUstream stream = nullptr;
              FGPU_REQUIRE_CU(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
              CUarrayMapInfo info{};
              info.resourceType = CU_RESOURCE_TYPE_ARRAY;
              info.resource.array = array;
              info.memOperationType = CU_MEM_OPERATION_TYPE_MAP;
              info.memHandleType = CU_MEM_HANDLE_TYPE_GENERIC;
              info.memHandle.memHandle = handle;
              info.offset = 1 * kMiB;  // 256 KiB of the array from the handle's second MiB
              info.deviceBitMask = 1;
              CUarrayMapInfo bad = info;
              bad.offset = 1 * kMiB + 4096;  // not aligned
              FGPU_REQUIRE_CU(cuMemMapArrayAsync(&bad, 1, stream), CUDA_ERROR_INVALID_VALUE);
              bad = info;
              bad.offset = 2 * kMiB - 64 * 1024;  // the array does not fit in what is left
              FGPU_REQUIRE_CU(cuMemMapArrayAsync(&bad, 1, stream), CUDA_ERROR_INVALID_VALUE);
              bad = info;
              bad.deviceBitMask = 2;
              FGPU_REQUIRE_CU(cuMemMapArrayAsync(&bad, 1, stream), CUDA_ERROR_INVALID_VALUE);
              bad = info;
              bad.resource.array = reinterpret_cast<CUarray>(0x55);
              FGPU_REQUIRE_CU(cuMemMapArrayAsync(&bad, 1, stream), CUDA_ERROR_INVALID_HANDLE);
              FGPU_REQUIRE_CU(cuMemMapArrayAsync(&info, 1, stream), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemMapArrayAsync(&info, 1, stream), CUDA_ERROR_INVALID_VALUE);  // already mapped
              FGPU_REQUIRE_CU(cuMemcpyHtoA_v2(array, 0, texels.data(), 64), CUDA_SUCCESS);
              // The texels are the handle's memory: map it at an address and read them there.
              CUdeviceptr va = 0;
              FGPU_REQUIRE_CU(cuMemAddressReserve(&va, 2 * kMiB, 0, 0, 0), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemMap(va, 2 * kMiB, 0, handle, 0), CUDA_SUCCESS);
              CUmemAccessDesc access{};
              access.location = prop.location;
              access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
              FGPU_REQUIRE_CU(cuMemSetAccess(va, 2 * kMiB, &access, 1), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(back.data(), va + 1 * kMiB, 64), CUDA_SUCCESS);
              FGPU_REQUIRE(back == texels);
              FGPU_REQUIRE_CU(cuMemUnmap(va, 2 * kMiB), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemAddressFree(va, 2 * kMiB), CUDA_SUCCESS);
              // Released while the array maps it: the memory stays until the array lets go.
              FGPU_REQUIRE_CU(cuMemRelease(handle), CUDA_SUCCESS);
              FGPU_REQUIRE(FreeBytes() == start - 2 * kMiB);
              FGPU_REQUIRE_CU(cuMemcpyAtoH_v2(back.data(), array, 0, 64), CUDA_SUCCESS);
              FGPU_REQUIRE(back == texels);
              CUarrayMapInfo unmap = info;
              unmap.memOperationType = CU_MEM_OPERATION_TYPE_UNMAP;
              FGPU_REQUIRE_CU(cuMemMapArrayAsync_ptsz(&unmap, 1, stream), CUDA_ERROR_INVALID_VALUE);  // handle not NULL
              unmap.memHandle.memHandle = 0;
              FGPU_REQUIRE_CU(cuMemMapArrayAsync_ptsz(&unmap, 1, stream), CUDA_SUCCESS);
              FGPU_REQUIRE(FreeBytes() == start);
              FGPU_REQUIRE_CU(cuMemcpyAtoH_v2(back.data(), array, 0, 64), CUDA_ERROR_INVALID_VALUE);
              // Plain arrays have no requirements and no sparse properties.
              CUDA_ARRAY3D_DESCRIPTOR plain_desc{64, 64, 0, CU_AD_FORMAT_FLOAT, 1, 0};
              CUarray plain = nullptr;
              FGPU_REQUIRE_CU(cuArray3DCreate_v2(&plain, &plain_desc), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuArrayGetMemoryRequirements(&req, plain, 0), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuArrayGetMemoryRequirements(&req, array, 9), CUDA_ERROR_INVALID_VALUE);
              CUDA_ARRAY_SPARSE_PROPERTIES sparse{};
              FGPU_REQUIRE_CU(cuArrayGetSparseProperties(&sparse, plain), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuArrayGetSparseProperties(&sparse, reinterpret_cast<CUarray>(0x5)),
                              CUDA_ERROR_INVALID_HANDLE);
              // A deferred-mapping mipmap: its levels lie one after another in the mapped memory.
              CUDA_ARRAY3D_DESCRIPTOR mip_desc{64, 64, 0, CU_AD_FORMAT_UNSIGNED_INT8, 1, CUDA_ARRAY3D_DEFERRED_MAPPING};
              CUmipmappedArray mipmap = nullptr;
              FGPU_REQUIRE_CU(cuMipmappedArrayCreate(&mipmap, &mip_desc, 3), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMipmappedArrayGetMemoryRequirements(&req, mipmap, 0), CUDA_SUCCESS);
              FGPU_REQUIRE(req.size == 64 * 1024);  // 4096 + 1024 + 256 bytes, rounded up
              FGPU_REQUIRE_CU(cuMipmappedArrayGetSparseProperties(&sparse, mipmap), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemCreate(&handle, 2 * kMiB, &prop, 0), CUDA_SUCCESS);
              CUarrayMapInfo mip_info = info;
              mip_info.resourceType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
              mip_info.resource.mipmap = mipmap;
              mip_info.memHandle.memHandle = handle;
              mip_info.offset = 0;
              FGPU_REQUIRE_CU(cuMemMapArrayAsync(&mip_info, 1, stream), CUDA_SUCCESS);
              CUarray level = nullptr;
              FGPU_REQUIRE_CU(cuMipmappedArrayGetLevel(&level, mipmap, 1), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemcpyHtoA_v2(level, 0, texels.data(), 64), CUDA_SUCCESS);
              CUarrayMapInfo level_info = info;
              level_info.resource.array = level;  // levels are mapped through their mipmap
              FGPU_REQUIRE_CU(cuMemMapArrayAsync(&level_info, 1, stream), CUDA_ERROR_INVALID_VALUE);
              FGPU_REQUIRE_CU(cuMemRelease(handle), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMipmappedArrayDestroy(mipmap), CUDA_SUCCESS);  // unmaps, frees the handle
              FGPU_REQUIRE_CU(cuArrayDestroy(plain), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuArrayDestroy(array), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
              FGPU_REQUIRE(FreeBytes() == start);
              return std::string();
            }),
            "");
}

TEST(SimArrayCopy, MipmapLevelsHoldTheirOwnData) {
  EXPECT_EQ(RunArrayCopy([] {
              PrimaryContext ctx;
              FGPU_REQUIRE(ctx.ok());
              CUDA_ARRAY3D_DESCRIPTOR desc{16, 16, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0};
              CUmipmappedArray mipmap = nullptr;
              FGPU_REQUIRE_CU(cuMipmappedArrayCreate(&mipmap, &desc, 3), CUDA_SUCCESS);
              CUarray zero = nullptr, one = nullptr;
              FGPU_REQUIRE_CU(cuMipmappedArrayGetLevel(&zero, mipmap, 0), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMipmappedArrayGetLevel(&one, mipmap, 1), CUDA_SUCCESS);
              const std::vector<uint8_t> a = Pattern(16 * 16 * 4, 1), b = Pattern(8 * 8 * 4, 77);
              FGPU_REQUIRE_CU(cuMemcpyHtoA_v2(zero, 0, a.data(), a.size()), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemcpyHtoA_v2(one, 0, b.data(), b.size()), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemcpyHtoA_v2(one, 0, b.data(), b.size() + 4), CUDA_ERROR_INVALID_VALUE);
              std::vector<uint8_t> back(a.size());
              FGPU_REQUIRE_CU(cuMemcpyAtoH_v2(back.data(), zero, 0, a.size()), CUDA_SUCCESS);
              FGPU_REQUIRE(back == a);
              back.resize(b.size());
              FGPU_REQUIRE_CU(cuMemcpyAtoH_v2(back.data(), one, 0, b.size()), CUDA_SUCCESS);
              FGPU_REQUIRE(back == b);
              FGPU_REQUIRE_CU(cuMipmappedArrayDestroy(mipmap), CUDA_SUCCESS);
              return std::string();
            }),
            "");
}

TEST(SimArrayCopy, LargeArraysCostHostMemoryOnlyWhereWritten) {
  EXPECT_EQ(RunArrayCopy([] {
              PrimaryContext ctx;
              FGPU_REQUIRE(ctx.ok());
              auto resident_bytes = [] {
                std::ifstream statm("/proc/self/statm");
                uint64_t size = 0, resident = 0;
                statm >> size >> resident;
                return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
              };
              const uint64_t start = FreeBytes();
              const uint64_t resident_before = resident_bytes();
              CUDA_ARRAY3D_DESCRIPTOR desc{16384, 16384, 0, CU_AD_FORMAT_FLOAT, 4, 0};  // 4 GiB of texels
              CUarray big = nullptr;
              FGPU_REQUIRE_CU(cuArray3DCreate_v2(&big, &desc), CUDA_SUCCESS);
              FGPU_REQUIRE(FreeBytes() == start - 4 * kGiB);
              const std::vector<uint8_t> row = Pattern(16384 * 16, 8);
              CUDA_MEMCPY2D in{};
              in.srcMemoryType = CU_MEMORYTYPE_HOST;
              in.srcHost = row.data();
              in.dstMemoryType = CU_MEMORYTYPE_ARRAY;
              in.dstArray = big;
              in.dstY = 16383;  // the last row
              in.WidthInBytes = row.size();
              in.Height = 1;
              FGPU_REQUIRE_CU(cuMemcpy2D_v2(&in), CUDA_SUCCESS);
              std::vector<uint8_t> back(16);
              FGPU_REQUIRE_CU(cuMemcpyAtoH_v2(back.data(), big, 16383ull * row.size() + 16, 16), CUDA_SUCCESS);
              FGPU_REQUIRE(std::memcmp(back.data(), &row[16], 16) == 0);
              FGPU_REQUIRE(resident_bytes() < resident_before + 64 * kMiB);
              FGPU_REQUIRE_CU(cuArrayDestroy(big), CUDA_SUCCESS);
              FGPU_REQUIRE(FreeBytes() == start);
              return std::string();
            }),
            "");
}

TEST(SimArrayCopy, SparseArraysReportTilesAndMapWholeTiles) {
  EXPECT_EQ(RunArrayCopy([] {
              PrimaryContext ctx;
              FGPU_REQUIRE(ctx.ok());
              int supported = 0;
              FGPU_REQUIRE_CU(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED, 0),
                              CUDA_SUCCESS);
              FGPU_REQUIRE(supported == 1);
              const uint64_t start = FreeBytes();
              CUDA_ARRAY3D_DESCRIPTOR desc{1000, 300, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SPARSE};
              CUarray array = nullptr;
              FGPU_REQUIRE_CU(cuArray3DCreate_v2(&array, &desc), CUDA_SUCCESS);
              FGPU_REQUIRE(FreeBytes() == start);  // its memory comes from tile pools
              CUDA_ARRAY_SPARSE_PROPERTIES props{};
              FGPU_REQUIRE_CU(cuArrayGetSparseProperties(&props, array), CUDA_SUCCESS);
              FGPU_REQUIRE(props.tileExtent.width == 128 && props.tileExtent.height == 128 &&
                           props.tileExtent.depth == 1 && props.miptailSize == 0 && props.flags == 0);
              CUDA_ARRAY_MEMORY_REQUIREMENTS req{};
              FGPU_REQUIRE_CU(cuArrayGetMemoryRequirements(&req, array, 0), CUDA_ERROR_INVALID_VALUE);
              // Texels still copy in and out (the simulator keeps them in the array's own storage).
              const std::vector<uint8_t> texels = Pattern(64, 3);
              std::vector<uint8_t> back(64);
              FGPU_REQUIRE_CU(cuMemcpyHtoA_v2(array, 4000, texels.data(), 64), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemcpyAtoH_v2(back.data(), array, 4000, 64), CUDA_SUCCESS);
              FGPU_REQUIRE(back == texels);
              CUmemAllocationProp prop{};
              prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
              prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
              prop.allocFlags.usage = CU_MEM_CREATE_USAGE_TILE_POOL;
              CUmemGenericAllocationHandle pool = 0;
              FGPU_REQUIRE_CU(cuMemCreate(&pool, 2 * kMiB, &prop, 0), CUDA_SUCCESS);
              CUstream stream = nullptr;
              FGPU_REQUIRE_CU(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
              CUarrayMapInfo info{};
              info.resourceType = CU_RESOURCE_TYPE_ARRAY;
              info.resource.array = array;
              info.subresourceType = CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_SPARSE_LEVEL;
              info.subresource.sparseLevel.offsetX = 896;   // the last column of tiles, ending at the edge
              info.subresource.sparseLevel.extentWidth = 104;
              info.subresource.sparseLevel.extentHeight = 256;  // two rows of tiles
              info.subresource.sparseLevel.extentDepth = 1;
              info.memOperationType = CU_MEM_OPERATION_TYPE_MAP;
              info.memHandleType = CU_MEM_HANDLE_TYPE_GENERIC;
              info.memHandle.memHandle = pool;
              info.offset = 2 * kMiB - 128 * 1024;  // two 64 KiB tiles: the last two of the pool
              info.deviceBitMask = 1;
              FGPU_REQUIRE_CU(cuMemMapArrayAsync(&info, 1, stream), CUDA_SUCCESS);
              CUarrayMapInfo bad = info;
              bad.offset += 64 * 1024;  // the second tile would not fit
              FGPU_REQUIRE_CU(cuMemMapArrayAsync(&bad, 1, stream), CUDA_ERROR_INVALID_VALUE);
              bad = info;
              bad.subresource.sparseLevel.offsetX = 64;  // not a tile boundary
              FGPU_REQUIRE_CU(cuMemMapArrayAsync(&bad, 1, stream), CUDA_ERROR_INVALID_VALUE);
              bad = info;
              bad.subresource.sparseLevel.extentHeight = 100;  // neither whole tiles nor the edge
              FGPU_REQUIRE_CU(cuMemMapArrayAsync(&bad, 1, stream), CUDA_ERROR_INVALID_VALUE);
              bad = info;
              bad.subresource.sparseLevel.extentDepth = 2;  // 2D: depth 1
              FGPU_REQUIRE_CU(cuMemMapArrayAsync(&bad, 1, stream), CUDA_ERROR_INVALID_VALUE);
              bad = info;
              bad.subresourceType = CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_MIPTAIL;  // this array has none
              bad.subresource.miptail.size = 64 * 1024;
              FGPU_REQUIRE_CU(cuMemMapArrayAsync(&bad, 1, stream), CUDA_ERROR_INVALID_VALUE);
              CUarrayMapInfo unmap = info;
              unmap.memOperationType = CU_MEM_OPERATION_TYPE_UNMAP;
              unmap.memHandle.memHandle = 0;
              FGPU_REQUIRE_CU(cuMemMapArrayAsync(&unmap, 1, stream), CUDA_SUCCESS);
              // A sparse 3D mipmap: 3D tiles, and a mip tail from the first level smaller than one.
              CUDA_ARRAY3D_DESCRIPTOR volume{64, 64, 64, CU_AD_FORMAT_UNSIGNED_INT8, 1, CUDA_ARRAY3D_SPARSE};
              CUmipmappedArray mipmap = nullptr;
              FGPU_REQUIRE_CU(cuMipmappedArrayCreate(&mipmap, &volume, 4), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMipmappedArrayGetSparseProperties(&props, mipmap), CUDA_SUCCESS);
              // Tiles of 64x32x32 bytes; level 1 (32^3) is narrower than a tile: the tail is levels 1..3.
              FGPU_REQUIRE(props.tileExtent.width == 64 && props.tileExtent.height == 32 &&
                           props.tileExtent.depth == 32 && props.miptailFirstLevel == 1 &&
                           props.miptailSize == 64 * 1024);
              CUarrayMapInfo tail = info;
              tail.resourceType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
              tail.resource.mipmap = mipmap;
              tail.subresourceType = CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_MIPTAIL;
              tail.subresource.miptail = {0, 0, 64 * 1024};
              tail.offset = 0;
              FGPU_REQUIRE_CU(cuMemMapArrayAsync(&tail, 1, stream), CUDA_SUCCESS);
              // Invalid descriptors: 1D, cubemap, sparse and deferred at once.
              CUDA_ARRAY3D_DESCRIPTOR one_d{64, 0, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SPARSE};
              CUarray refused = nullptr;
              FGPU_REQUIRE_CU(cuArray3DCreate_v2(&refused, &one_d), CUDA_ERROR_INVALID_VALUE);
              CUDA_ARRAY3D_DESCRIPTOR both{64, 64, 0, CU_AD_FORMAT_FLOAT, 1,
                                           CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING};
              FGPU_REQUIRE_CU(cuArray3DCreate_v2(&refused, &both), CUDA_ERROR_INVALID_VALUE);
              CUarray level = nullptr;
              FGPU_REQUIRE_CU(cuMipmappedArrayGetLevel(&level, mipmap, 0), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuArrayGetSparseProperties(&props, level), CUDA_ERROR_INVALID_VALUE);  // use the mipmap
              FGPU_REQUIRE_CU(cuMipmappedArrayDestroy(mipmap), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuArrayDestroy(array), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuMemRelease(pool), CUDA_SUCCESS);
              FGPU_REQUIRE_CU(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
              FGPU_REQUIRE(FreeBytes() == start);
              return std::string();
            }),
            "");
}

}  // namespace
}  // namespace fgpu::sim::testing
