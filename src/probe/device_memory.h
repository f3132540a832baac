// DeviceMemory: allocates and frees device memory through one of the nine ways a
// CUDA program can hold it, so every allocation path an interposer must account for
// can be driven from the command line.
//
// Contract
// - Allocate(bytes) makes one block of at least `bytes` and reports how many bytes
//   the driver was asked for (`allocated_bytes`: rounded up to the VMM granularity,
//   pitch x rows, array width x height x depth x 4). On failure it undoes the steps
//   already taken and names the call that failed.
// - Shapes (documented in docs/probe.md):
//     pitch      WidthInBytes = ceil(bytes / 64), Height = 64, ElementSizeBytes = 4.
//     array      1-channel FLOAT, near-square: width = ceil(sqrt(n)), height =
//                ceil(n / width), n = ceil(bytes / 4) elements.
//     array3d    width = height = ceil(cbrt(n)), depth = ceil(n / (width x height)).
//     mipmapped  the 2D array shape (Depth 0), one level.
// - Free releases a block the way its API requires (unmap/release/address-free for
//   vmm, cuMemFreeAsync + cuStreamSynchronize for async and pool) and reports
//   failures as error lines. The destructor destroys the stream and pool it created.
// - Linear blocks (everything but the arrays) have a device pointer that
//   RoundTrip can write and read back.
#ifndef FGPU_PROBE_DEVICE_MEMORY_H_
#define FGPU_PROBE_DEVICE_MEMORY_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "probe/session.h"

namespace fgpu::probe {

enum class AllocApi { kMemAlloc, kPitch, kManaged, kVmm, kAsync, kPool, kArray, kArray3D, kMipmapped, kExternal };

std::string_view AllocApiName(AllocApi api);
bool ParseAllocApi(std::string_view text, AllocApi* api);
// "mem_alloc|pitch|...", for the usage message.
std::string_view AllocApiChoices();

struct DeviceBlock {
  AllocApi api = AllocApi::kMemAlloc;
  uint64_t requested_bytes = 0;
  uint64_t allocated_bytes = 0;
  CUdeviceptr ptr = 0;  // linear APIs
  CUmemGenericAllocationHandle handle = 0;  // vmm
  CUarray array = nullptr;  // array, array3d
  CUmipmappedArray mipmapped = nullptr;
  CUexternalMemory external = nullptr;  // external: the import its ptr is a mapped buffer of
  std::vector<uint64_t> shape;  // pitch: {pitch, rows}; arrays: {width, height[, depth]}
};

struct AllocOutcome {
  CUresult code = CUDA_SUCCESS;
  const char* failed_call = nullptr;  // exported name of the failing call
};

class DeviceMemory {
 public:
  DeviceMemory(const Session& session, AllocApi api) : session_(session), api_(api) {}
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  AllocApi api() const { return api_; }
  AllocOutcome Allocate(uint64_t bytes, DeviceBlock* block);
  bool Free(const DeviceBlock& block);

  // Writes a pattern unique to (`seed`, offset) into the first and last
  // min(size, 64 KiB) bytes with cuMemcpyHtoD_v2 and reads it back with
  // cuMemcpyDtoH_v2. Only the ends: a simulated 20 GiB block is real host memory,
  // and touching all of it would cost 20 GiB of RAM. False on a copy error (also
  // reported as an error line) or a mismatch.
  bool RoundTrip(const DeviceBlock& block, uint64_t seed) const;

  static bool IsLinear(AllocApi api) { return api != AllocApi::kArray && api != AllocApi::kArray3D &&
                                              api != AllocApi::kMipmapped; }

 private:
  AllocOutcome AllocateVmm(uint64_t bytes, DeviceBlock* block);
  AllocOutcome AllocateStreamOrdered(uint64_t bytes, DeviceBlock* block);
  AllocOutcome AllocateArray(uint64_t bytes, DeviceBlock* block);
  AllocOutcome AllocateExternal(uint64_t bytes, DeviceBlock* block);
  // The stream for async/pool APIs and the pool, created on first use.
  AllocOutcome EnsureStream();
  AllocOutcome EnsurePool();

  const Session& session_;
  const AllocApi api_;
  CUstream stream_ = nullptr;
  CUmemoryPool pool_ = nullptr;
};

}  // namespace fgpu::probe

#endif  // FGPU_PROBE_DEVICE_MEMORY_H_
