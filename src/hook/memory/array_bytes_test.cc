#include "hook/memory/array_bytes.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <string>

#include "core/abi/cuda_api.h"
#include "core/units.h"

namespace fgpu::hook {
namespace {

CUDA_ARRAY3D_DESCRIPTOR Desc(size_t w, size_t h, size_t d, CUarray_format format, unsigned channels,
                             unsigned flags = 0) {
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  desc.Width = w;
  desc.Height = h;
  desc.Depth = d;
  desc.Format = format;
  desc.NumChannels = channels;
  desc.Flags = flags;
  return desc;
}

TEST(ArrayBytesTest, ClassicFormats) {
  EXPECT_EQ(ArrayBytes(Desc(4096, 4096, 0, CU_AD_FORMAT_FLOAT, 1)), 64 * kMiB);  // the probe's 64 MiB array
  EXPECT_EQ(ArrayBytes(Desc(256, 256, 256, CU_AD_FORMAT_FLOAT, 1)), 64 * kMiB);  // and its 3D one
  EXPECT_EQ(ArrayBytes(Desc(100, 0, 0, CU_AD_FORMAT_UNSIGNED_INT8, 2)), 200u);   // 1D
  EXPECT_EQ(ArrayBytes(Desc(10, 10, 0, CU_AD_FORMAT_HALF, 4)), 800u);
  EXPECT_EQ(ArrayBytes(Desc(10, 10, 3, CU_AD_FORMAT_SIGNED_INT32, 2, CUDA_ARRAY3D_LAYERED)), 2400u);
  EXPECT_EQ(ArrayBytes(Desc(8, 8, 6, CU_AD_FORMAT_UNSIGNED_INT8, 1, CUDA_ARRAY3D_CUBEMAP)), 384u);
}

TEST(ArrayBytesTest, NormalisedFormatsNameTheirChannels) {
  EXPECT_EQ(ArrayBytes(Desc(10, 1, 0, CU_AD_FORMAT_UNORM_INT16X2, 2)), 40u);
  EXPECT_EQ(ArrayBytes(Desc(10, 1, 0, CU_AD_FORMAT_SNORM_INT8X4, 4)), 40u);
  EXPECT_EQ(ArrayBytes(Desc(10, 1, 0, CU_AD_FORMAT_UNORM_INT16X2, 4)), 0u)
      << "channel count the format cannot have";
}

TEST(ArrayBytesTest, FormatsTheSimulatorRefusesAreStillCharged) {
  EXPECT_EQ(ArrayBytes(Desc(16, 16, 0, CU_AD_FORMAT_BC1_UNORM, 4)), 16u * 8);   // 4x4 blocks of 8 bytes
  EXPECT_EQ(ArrayBytes(Desc(17, 16, 0, CU_AD_FORMAT_BC7_UNORM, 4)), 20u * 16);  // partial blocks count whole
  EXPECT_EQ(ArrayBytes(Desc(10, 10, 0, CU_AD_FORMAT_NV12, 3)), 800u);  // upper bound, 8 bytes a texel
}

TEST(ArrayBytesTest, SparseAndDeferredMappingArraysHoldNoMemoryOfTheirOwn) {
  EXPECT_EQ(ArrayBytes(Desc(4096, 4096, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SPARSE)), 0u);
  EXPECT_EQ(ArrayBytes(Desc(4096, 4096, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_DEFERRED_MAPPING)), 0u);
  EXPECT_EQ(MipmappedArrayBytes(Desc(256, 256, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SPARSE), 4), 0u);
  EXPECT_EQ(ArrayBytes(Desc(16, 16, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SURFACE_LDST)), 1024u) << "other flags cost";
}

TEST(ArrayBytesTest, UnsizableDescriptorsAreZero) {
  EXPECT_EQ(ArrayBytes(Desc(0, 10, 0, CU_AD_FORMAT_FLOAT, 1)), 0u);
  EXPECT_EQ(ArrayBytes(Desc(10, 10, 0, static_cast<CUarray_format>(0x77), 1)), 0u);
  EXPECT_EQ(ArrayBytes(Desc(10, 10, 0, CU_AD_FORMAT_FLOAT, 3)), 0u);
  EXPECT_EQ(MipmappedArrayBytes(Desc(10, 10, 0, CU_AD_FORMAT_FLOAT, 1), 0), 0u);
  EXPECT_EQ(MipmappedArrayBytes(Desc(10, 10, 0, CU_AD_FORMAT_FLOAT, 1), 65), 0u);
}

TEST(ArrayBytesTest, SaturatesInsteadOfOverflowing) {
  EXPECT_EQ(ArrayBytes(Desc(SIZE_MAX, SIZE_MAX, SIZE_MAX, CU_AD_FORMAT_FLOAT, 4)), UINT64_MAX);
  EXPECT_EQ(MipmappedArrayBytes(Desc(SIZE_MAX, SIZE_MAX, 0, CU_AD_FORMAT_FLOAT, 4), 64), UINT64_MAX);
}

TEST(ArrayBytesTest, MipmapLevelsHalveDownToOne) {
  // 8x4 FLOAT: 8x4 + 4x2 + 2x1 + 1x1 texels.
  EXPECT_EQ(MipmappedArrayBytes(Desc(8, 4, 0, CU_AD_FORMAT_FLOAT, 1), 4), (32u + 8 + 2 + 1) * 4);
  // 3D depth shrinks too; layers do not.
  EXPECT_EQ(MipmappedArrayBytes(Desc(4, 4, 4, CU_AD_FORMAT_UNSIGNED_INT8, 1), 3), 64u + 8 + 1);
  EXPECT_EQ(MipmappedArrayBytes(Desc(4, 4, 5, CU_AD_FORMAT_UNSIGNED_INT8, 1, CUDA_ARRAY3D_LAYERED), 3),
            (16u + 4 + 1) * 5);
}

TEST(ArrayBytesTest, LegacyDescriptorsConvert) {
  CUDA_ARRAY_DESCRIPTOR_v1 legacy2d{7, 9, CU_AD_FORMAT_HALF, 2};
  EXPECT_EQ(ArrayBytes(From2D(legacy2d)), 7u * 9 * 4);
  CUDA_ARRAY_DESCRIPTOR current2d{7, 9, CU_AD_FORMAT_HALF, 2};
  EXPECT_EQ(ArrayBytes(From2D(current2d)), 7u * 9 * 4);
  CUDA_ARRAY3D_DESCRIPTOR_v1 legacy3d{7, 9, 2, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED};
  EXPECT_EQ(ArrayBytes(From3D(legacy3d)), 7u * 9 * 2 * 4);
}

// Differential check against the simulated driver: for random descriptors it accepts, the
// device memory it charges (cuMemGetInfo before/after) is exactly our size rounded to its
// granularity. Runs in a child: the simulator is loaded with its own config and segment.
TEST(ArrayBytesTest, MatchesWhatTheSimulatorCharges) {
  char dir_template[] = "/tmp/fgpu-array-bytes-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string config = std::string(dir_template) + "/sim.json";
  std::ofstream(config) << R"({"devices": [{"memory": "64GiB", "granularity": "64KiB"}]})";
  const std::string segment = "/fgpu-array-bytes-" + std::to_string(getpid());
  constexpr uint64_t kGranularity = uint64_t{64} * 1024;

  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("FGPU_SIM_CONFIG", config.c_str(), 1);
    setenv("FGPU_SIM_SEGMENT", segment.c_str(), 1);
    void* cuda = dlopen(FGPU_SIM_LIBDIR "/libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (cuda == nullptr) _exit(10);
#define FGPU_SIM_FN(name) reinterpret_cast<decltype(&::name)>(dlsym(cuda, #name))
    const auto init = FGPU_SIM_FN(cuInit);
    const auto retain = FGPU_SIM_FN(cuDevicePrimaryCtxRetain);
    const auto set_current = FGPU_SIM_FN(cuCtxSetCurrent);
    const auto mem_get_info = FGPU_SIM_FN(cuMemGetInfo_v2);
    const auto create3d = FGPU_SIM_FN(cuArray3DCreate_v2);
    const auto destroy = FGPU_SIM_FN(cuArrayDestroy);
    const auto create_mipmapped = FGPU_SIM_FN(cuMipmappedArrayCreate);
    const auto destroy_mipmapped = FGPU_SIM_FN(cuMipmappedArrayDestroy);
#undef FGPU_SIM_FN
    CUcontext ctx = nullptr;
    if (init(0) != CUDA_SUCCESS || retain(&ctx, 0) != CUDA_SUCCESS || set_current(ctx) != CUDA_SUCCESS)
      _exit(11);
    const CUarray_format formats[] = {CU_AD_FORMAT_UNSIGNED_INT8, CU_AD_FORMAT_HALF,
                                      CU_AD_FORMAT_FLOAT,         CU_AD_FORMAT_SIGNED_INT32,
                                      CU_AD_FORMAT_UNORM_INT8X2,  CU_AD_FORMAT_SNORM_INT16X4};
    const unsigned flag_choices[] = {0, CUDA_ARRAY3D_LAYERED, CUDA_ARRAY3D_CUBEMAP,
                                     CUDA_ARRAY3D_SURFACE_LDST};
    std::mt19937_64 rng(7);
    int compared = 0;
    for (int i = 0; i < 3000; ++i) {
      const unsigned channels = 1u << (rng() % 3);
      CUDA_ARRAY3D_DESCRIPTOR desc = Desc(1 + rng() % 3000, rng() % 2000, rng() % 40, formats[rng() % 6],
                                          channels, flag_choices[rng() % 4]);
      if (desc.Flags == CUDA_ARRAY3D_CUBEMAP) {
        desc.Height = desc.Width;
        desc.Depth = 6;
      }
      const bool mipmapped = rng() % 2 == 0;
      const unsigned levels = 1 + static_cast<unsigned>(rng() % 6);
      size_t free_before = 0, free_after = 0, total = 0;
      mem_get_info(&free_before, &total);
      CUresult rc;
      CUarray array = nullptr;
      CUmipmappedArray mipmap = nullptr;
      rc = mipmapped ? create_mipmapped(&mipmap, &desc, levels) : create3d(&array, &desc);
      if (rc != CUDA_SUCCESS) continue;  // refused by the driver: never charged, nothing to compare
      mem_get_info(&free_after, &total);
      const uint64_t bytes = mipmapped ? MipmappedArrayBytes(desc, levels) : ArrayBytes(desc);
      const uint64_t expected = (bytes + kGranularity - 1) / kGranularity * kGranularity;
      if (free_before - free_after != expected) _exit(20);
      if (mipmapped ? destroy_mipmapped(mipmap) != CUDA_SUCCESS : destroy(array) != CUDA_SUCCESS) _exit(21);
      ++compared;
    }
    _exit(compared > 1000 ? 0 : 22);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  shm_unlink(segment.c_str());
  std::remove(config.c_str());
  rmdir(dir_template);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "10/11: simulator unavailable, 20: a charge differs, 22: too few accepted";
}

}  // namespace
}  // namespace fgpu::hook
