// fgpu_hook_legacy_launch_helper: launches the `fgpu_spin` kernel through one of the deprecated
// launch paths, for compute/legacy_launch_gate_test.cc, which checks that the interposer's compute
// gate sees each of them. Exits 0 when the launch and a context synchronisation succeed.
//
//   fgpu_hook_legacy_launch_helper <none|launch|grid|grid_async|multi_device>
#include <cstdio>
#include <cstring>

#include "core/abi/cuda_api.h"

namespace {

constexpr const char* kSpinPtx =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry fgpu_spin(.param .u64 ns)\n{\n ret;\n}\n";

CUresult Launch(const char* how, CUfunction spin, CUstream stream) {
  unsigned long long wave_ns = 100'000;
  if (std::strcmp(how, "none") == 0) return CUDA_SUCCESS;
  if (std::strcmp(how, "multi_device") == 0) {
    void* params[] = {&wave_ns};
    CUDA_LAUNCH_PARAMS launch{};
    launch.function = spin;
    launch.gridDimX = launch.gridDimY = launch.gridDimZ = 1;
    launch.blockDimX = 32;
    launch.blockDimY = launch.blockDimZ = 1;
    launch.hStream = stream;
    launch.kernelParams = params;
    return cuLaunchCooperativeKernelMultiDevice(&launch, 1, 0);
  }
  CUresult rc = cuFuncSetBlockShape(spin, 32, 1, 1);
  if (rc == CUDA_SUCCESS) rc = cuParamSetv(spin, 0, &wave_ns, sizeof wave_ns);
  if (rc == CUDA_SUCCESS) rc = cuParamSetSize(spin, sizeof wave_ns);
  if (rc != CUDA_SUCCESS) return rc;
  if (std::strcmp(how, "launch") == 0) return cuLaunch(spin);
  if (std::strcmp(how, "grid") == 0) return cuLaunchGrid(spin, 2, 2);
  if (std::strcmp(how, "grid_async") == 0) return cuLaunchGridAsync(spin, 2, 2, stream);
  return CUDA_ERROR_INVALID_VALUE;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  CUdevice device = 0;
  CUcontext ctx = nullptr;
  CUmodule module = nullptr;
  CUfunction spin = nullptr;
  CUstream stream = nullptr;
  CUresult rc = cuInit(0);
  if (rc == CUDA_SUCCESS) rc = cuDeviceGet(&device, 0);
  if (rc == CUDA_SUCCESS) rc = cuDevicePrimaryCtxRetain(&ctx, device);
  if (rc == CUDA_SUCCESS) rc = cuCtxSetCurrent(ctx);
  if (rc == CUDA_SUCCESS) rc = cuModuleLoadData(&module, kSpinPtx);
  if (rc == CUDA_SUCCESS) rc = cuModuleGetFunction(&spin, module, "fgpu_spin");
  if (rc == CUDA_SUCCESS) rc = cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
  if (rc == CUDA_SUCCESS) rc = Launch(argv[1], spin, stream);
  if (rc == CUDA_SUCCESS) rc = cuCtxSynchronize();
  std::printf("{\"event\": \"legacy_launch\", \"how\": \"%s\", \"rc\": %d}\n", argv[1], static_cast<int>(rc));
  return rc == CUDA_SUCCESS ? 0 : 1;
}
