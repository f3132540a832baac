// Tests of module and library variables (.global/.const in device memory, charged as the
// module's), library kernels and modules, kernel attributes and names, parameter layouts from
// PTX, unified functions and texture references. Each test runs in a forked child.
#include <gtest/gtest.h>
#include <stdio.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

#include "core/abi/cuda_api.h"
#include "sim/cuda/child_process.h"
#include "sim/cuda/sim_test_env.h"

namespace fgpu::sim::testing {
namespace {

constexpr uint64_t kLibraryMiB = 1024 * 1024;
constexpr const char* kLibraryConfig = R"({
  "devices": [{"count": 1, "memory": "4GiB", "granularity": "2MiB", "sm_count": 16, "context_overhead": "300MiB"}]
})";
// Variables of every kind the parser reads; `ld.global` inside a body is not a declaration.
constexpr const char* kLibraryPtx =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    "// .global .u32 commented_out;\n"
    ".visible .global .align 4 .u32 counter = 7;\n"
    ".global .align 8 .b8 table[100];\n"
    ".visible .const .align 4 .f32 coeffs[4] = {1.0, 2.5, -3.0, 0f40800000};\n"
    ".global .u64 first, second[3];\n"
    ".visible .global .attribute(.managed) .align 8 .u64 shared_state;\n"
    ".extern .global .u32 elsewhere;\n"
    ".global .texref tex;\n"
    ".visible .entry scale(\n  .param .u64 scale_param_0,\n  .param .u32 scale_param_1,\n"
    "  .param .align 8 .b8 scale_param_2[24],\n  .param .u8 scale_param_3\n)\n"
    "{\n  .reg .b32 %r<3>;\n  ld.global.u32 %r1, [counter];\n  ret;\n}\n"
    ".visible .entry noargs()\n{\n ret;\n}\n";

std::string RunLibrarySim(const std::function<std::string()>& body) {
  return RunWithConfig(kLibraryConfig, "library-test", body);
}

TEST(SimModuleVariables, GlobalsHaveTheImagesSizesValuesAndCharge) {
  EXPECT_EQ(RunLibrarySim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    const uint64_t before = FreeBytes();
    CUmodule module = nullptr;
    FGPU_REQUIRE_CU(cuModuleLoadData(&module, kLibraryPtx), CUDA_SUCCESS);
    FGPU_REQUIRE(before - FreeBytes() == 2 * kLibraryMiB);  // the variables, rounded to the granularity

    CUdeviceptr counter = 0, table = 0, coeffs = 0, second = 0;
    size_t bytes = 0;
    FGPU_REQUIRE_CU(cuModuleGetGlobal_v2(&counter, &bytes, module, "counter"), CUDA_SUCCESS);
    FGPU_REQUIRE(counter != 0 && bytes == 4);
    uint32_t value = 0;
    FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(&value, counter, 4), CUDA_SUCCESS);
    FGPU_REQUIRE(value == 7);
    FGPU_REQUIRE_CU(cuModuleGetGlobal_v2(&table, &bytes, module, "table"), CUDA_SUCCESS);
    FGPU_REQUIRE(bytes == 100 && table % 8 == 0);
    FGPU_REQUIRE_CU(cuModuleGetGlobal_v2(&coeffs, &bytes, module, "coeffs"), CUDA_SUCCESS);
    float seen[4] = {};
    FGPU_REQUIRE(bytes == 16);
    FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(seen, coeffs, sizeof seen), CUDA_SUCCESS);
    FGPU_REQUIRE(seen[0] == 1.0f && seen[1] == 2.5f && seen[2] == -3.0f && seen[3] == 4.0f);
    FGPU_REQUIRE_CU(cuModuleGetGlobal_v2(&second, &bytes, module, "second"), CUDA_SUCCESS);
    FGPU_REQUIRE(bytes == 24);
    FGPU_REQUIRE_CU(cuModuleGetGlobal_v2(nullptr, &bytes, module, "first"), CUDA_SUCCESS);  // each optional
    FGPU_REQUIRE(bytes == 8);
    FGPU_REQUIRE_CU(cuModuleGetGlobal_v2(&second, nullptr, module, "shared_state"), CUDA_SUCCESS);
    // Declared elsewhere, commented out, a texture reference, or absent: not found.
    for (const char* missing : {"elsewhere", "commented_out", "tex", "nothing", "scale"}) {
      FGPU_REQUIRE_CU(cuModuleGetGlobal_v2(&counter, &bytes, module, missing), CUDA_ERROR_NOT_FOUND);
    }
    // Device memory like any other: copies, address ranges; but not the application's to free.
    const uint32_t stored = 41;
    FGPU_REQUIRE_CU(cuModuleGetGlobal_v2(&counter, nullptr, module, "counter"), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemcpyHtoD_v2(counter, &stored, 4), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(&value, counter, 4), CUDA_SUCCESS);
    FGPU_REQUIRE(value == 41);
    CUdeviceptr base = 0;
    size_t size = 0;
    FGPU_REQUIRE_CU(cuMemGetAddressRange_v2(&base, &size, table + 10), CUDA_SUCCESS);
    FGPU_REQUIRE(base == table && size == 100);
    FGPU_REQUIRE_CU(cuMemFree_v2(table), CUDA_ERROR_INVALID_VALUE);
    // The legacy form cannot name a 64-bit address.
    CUdeviceptr_v1 legacy = 0;
    unsigned legacy_bytes = 0;
    FGPU_REQUIRE_CU(cuModuleGetGlobal(&legacy, &legacy_bytes, module, "counter"), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuModuleGetGlobal_v2(&counter, &bytes, module, nullptr), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuModuleGetGlobal_v2(&counter, &bytes, reinterpret_cast<CUmodule>(&bytes), "counter"),
                    CUDA_ERROR_INVALID_HANDLE);
    // Texture and surface references.
    CUtexref texref = nullptr;
    CUsurfref surfref = nullptr;
    FGPU_REQUIRE_CU(cuModuleGetTexRef(&texref, module, "tex"), CUDA_ERROR_NOT_SUPPORTED);
    FGPU_REQUIRE_CU(cuModuleGetTexRef(&texref, module, "counter"), CUDA_ERROR_NOT_FOUND);
    FGPU_REQUIRE_CU(cuModuleGetSurfRef(&surfref, module, "tex"), CUDA_ERROR_NOT_FOUND);
    FGPU_REQUIRE_CU(cuModuleGetTexRef(nullptr, module, "tex"), CUDA_ERROR_INVALID_VALUE);

    // Parameter layouts: offsets aligned to each parameter, sizes from the declaration.
    CUfunction scale = nullptr, noargs = nullptr;
    FGPU_REQUIRE_CU(cuModuleGetFunction(&scale, module, "scale"), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuModuleGetFunction(&noargs, module, "noargs"), CUDA_SUCCESS);
    const size_t expected[4][2] = {{0, 8}, {8, 4}, {16, 24}, {40, 1}};
    for (size_t i = 0; i < 4; ++i) {
      size_t offset = 99, param_size = 99;
      FGPU_REQUIRE_CU(cuFuncGetParamInfo(scale, i, &offset, &param_size), CUDA_SUCCESS);
      FGPU_REQUIRE(offset == expected[i][0] && param_size == expected[i][1]);
    }
    size_t offset = 0;
    FGPU_REQUIRE_CU(cuFuncGetParamInfo(scale, 2, &offset, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE(offset == 16);
    FGPU_REQUIRE_CU(cuFuncGetParamInfo(scale, 4, &offset, nullptr), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuFuncGetParamInfo(noargs, 0, &offset, nullptr), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuFuncGetParamInfo(scale, 0, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);

    // Unloading credits the variables.
    FGPU_REQUIRE_CU(cuModuleUnload(module), CUDA_SUCCESS);
    FGPU_REQUIRE(FreeBytes() == before);
    // A module that does not fit is not loaded.
    std::string huge = std::string(".version 8.0\n.target sm_90\n.address_size 64\n") +
                       ".global .b8 huge[" + std::to_string(8ull << 30) + "];\n";
    FGPU_REQUIRE_CU(cuModuleLoadData(&module, huge.c_str()), CUDA_ERROR_OUT_OF_MEMORY);
    FGPU_REQUIRE(FreeBytes() == before);
    // A context's destruction takes its modules' variables with it.
    FGPU_REQUIRE_CU(cuModuleLoadData(&module, kLibraryPtx), CUDA_SUCCESS);
    CUcontext own = nullptr;
    FGPU_REQUIRE_CU(cuCtxCreate_v2(&own, 0, 0), CUDA_SUCCESS);
    const uint64_t with_own = FreeBytes();
    CUmodule own_module = nullptr;
    FGPU_REQUIRE_CU(cuModuleLoadData(&own_module, kLibraryPtx), CUDA_SUCCESS);
    FGPU_REQUIRE(with_own - FreeBytes() == 2 * kLibraryMiB);
    FGPU_REQUIRE_CU(cuCtxDestroy_v2(own), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxSetCurrent(ctx.get()), CUDA_SUCCESS);
    FGPU_REQUIRE(before - FreeBytes() == 2 * kLibraryMiB);
    FGPU_REQUIRE_CU(cuModuleUnload(module), CUDA_SUCCESS);
    FGPU_REQUIRE(FreeBytes() == before);
    return std::string();
  }), "");
}

TEST(SimLibraries, KernelsVariablesAndModules) {
  EXPECT_EQ(RunLibrarySim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    const uint64_t before = FreeBytes();
    CUlibrary library = nullptr;
    FGPU_REQUIRE_CU(cuLibraryLoadData(&library, kLibraryPtx, nullptr, nullptr, 0, nullptr, nullptr, 0),
                    CUDA_SUCCESS);
    FGPU_REQUIRE(FreeBytes() == before);  // nothing placed before a context asks

    unsigned count = 0;
    FGPU_REQUIRE_CU(cuLibraryGetKernelCount(&count, library), CUDA_SUCCESS);
    FGPU_REQUIRE(count == 2);
    CUkernel kernels[3] = {};
    FGPU_REQUIRE_CU(cuLibraryEnumerateKernels(kernels, 3, library), CUDA_SUCCESS);
    const char* name = nullptr;
    FGPU_REQUIRE_CU(cuKernelGetName(&name, kernels[0]), CUDA_SUCCESS);
    FGPU_REQUIRE(std::strcmp(name, "scale") == 0);
    FGPU_REQUIRE_CU(cuKernelGetName(&name, kernels[1]), CUDA_SUCCESS);
    FGPU_REQUIRE(std::strcmp(name, "noargs") == 0);
    CUlibrary owner = nullptr;
    FGPU_REQUIRE_CU(cuKernelGetLibrary(&owner, kernels[0]), CUDA_SUCCESS);
    FGPU_REQUIRE(owner == library);
    size_t offset = 0, size = 0;
    FGPU_REQUIRE_CU(cuKernelGetParamInfo(kernels[0], 3, &offset, &size), CUDA_SUCCESS);
    FGPU_REQUIRE(offset == 40 && size == 1);
    int value = 0;
    FGPU_REQUIRE_CU(cuKernelGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, kernels[0], 0),
                    CUDA_SUCCESS);
    FGPU_REQUIRE(value == 1024);
    FGPU_REQUIRE_CU(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100000, kernels[0], 0),
                    CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuKernelGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, kernels[0], 0),
                    CUDA_SUCCESS);
    FGPU_REQUIRE(value == 100000);
    FGPU_REQUIRE_CU(cuKernelSetCacheConfig(kernels[0], CU_FUNC_CACHE_PREFER_L1, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuKernelGetAttribute(&value, CU_FUNC_ATTRIBUTE_NUM_REGS, kernels[0], 3), CUDA_ERROR_INVALID_DEVICE);
    FGPU_REQUIRE_CU(cuKernelGetName(&name, reinterpret_cast<CUkernel>(&value)), CUDA_ERROR_INVALID_HANDLE);

    // Variables are placed (and charged) in the context that first asks.
    CUdeviceptr counter = 0, managed = 0;
    size_t bytes = 0;
    FGPU_REQUIRE_CU(cuLibraryGetGlobal(&counter, &bytes, library, "counter"), CUDA_SUCCESS);
    FGPU_REQUIRE(bytes == 4 && before - FreeBytes() == 2 * kLibraryMiB);
    FGPU_REQUIRE_CU(cuLibraryGetManaged(&managed, &bytes, library, "shared_state"), CUDA_SUCCESS);
    FGPU_REQUIRE(bytes == 8);
    FGPU_REQUIRE_CU(cuLibraryGetManaged(&managed, &bytes, library, "counter"), CUDA_ERROR_NOT_FOUND);
    CUmodule module = nullptr;
    FGPU_REQUIRE_CU(cuLibraryGetModule(&module, library), CUDA_SUCCESS);
    CUdeviceptr same = 0;
    FGPU_REQUIRE_CU(cuModuleGetGlobal_v2(&same, nullptr, module, "counter"), CUDA_SUCCESS);
    FGPU_REQUIRE(same == counter);
    CUfunction function = nullptr;
    FGPU_REQUIRE_CU(cuModuleGetFunction(&function, module, "noargs"), CUDA_SUCCESS);
    void* unified = nullptr;
    FGPU_REQUIRE_CU(cuLibraryGetUnifiedFunction(&unified, library, "scale"), CUDA_ERROR_NOT_FOUND);
    FGPU_REQUIRE_CU(cuLibraryGetUnifiedFunction(nullptr, library, "scale"), CUDA_ERROR_INVALID_VALUE);

    // From a file, as from memory; a missing file is not found.
    char path[] = "/tmp/fgpu-library-test-XXXXXX";
    const int fd = mkstemp(path);
    FGPU_REQUIRE(fd >= 0);
    FGPU_REQUIRE(write(fd, kLibraryPtx, std::strlen(kLibraryPtx)) == static_cast<ssize_t>(std::strlen(kLibraryPtx)));
    close(fd);
    CUlibrary from_file = nullptr;
    const CUresult loaded = cuLibraryLoadFromFile(&from_file, path, nullptr, nullptr, 0, nullptr, nullptr, 0);
    unlink(path);
    FGPU_REQUIRE_CU(loaded, CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuLibraryGetKernelCount(&count, from_file), CUDA_SUCCESS);
    FGPU_REQUIRE(count == 2);
    FGPU_REQUIRE_CU(cuLibraryLoadFromFile(&from_file, "/nonexistent/lib.ptx", nullptr, nullptr, 0, nullptr, nullptr, 0),
                    CUDA_ERROR_FILE_NOT_FOUND);

    // Library handles only; a module is not a library.
    CUmodule plain = nullptr;
    FGPU_REQUIRE_CU(cuModuleLoadData(&plain, kLibraryPtx), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuLibraryGetKernelCount(&count, reinterpret_cast<CUlibrary>(plain)), CUDA_ERROR_INVALID_HANDLE);
    FGPU_REQUIRE_CU(cuModuleGetFunction(&function, plain, "scale"), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuKernelGetLibrary(&owner, reinterpret_cast<CUkernel>(function)), CUDA_ERROR_INVALID_HANDLE);
    FGPU_REQUIRE_CU(cuModuleUnload(plain), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuLibraryUnload(from_file), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuLibraryUnload(library), CUDA_SUCCESS);
    FGPU_REQUIRE(FreeBytes() == before);
    return std::string();
  }), "");
}

}  // namespace
}  // namespace fgpu::sim::testing
