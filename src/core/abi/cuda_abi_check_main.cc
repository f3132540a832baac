// The CUDA ABI check passes by compiling (cuda_abi_check_api.cc and
// cuda_abi_check_types.cc are static_asserts); running it reports the extent.
#include <cstdio>

extern const int kFgpuApiChecks;
extern const int kFgpuTypeChecks;

int main() {
  std::printf("fgpu CUDA ABI check against cuda.h: %d entry points, %d type facts checked\n",
              kFgpuApiChecks, kFgpuTypeChecks);
  return kFgpuApiChecks > 0 && kFgpuTypeChecks > 0 ? 0 : 1;
}
