// Test support for the simulated libcuda: one small device configuration and a
// private shared segment per test process, set before the first cuInit.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>

#include "core/abi/cuda_api.h"
#include "core/units.h"
#include "sim/cuda/child_process.h"
#include "sim/state/shared_devices.h"

namespace fgpu::sim::testing {

// Writes `json` to a temp file, points FGPU_SIM_CONFIG at it and gives this process a
// private FGPU_SIM_SEGMENT. Call before cuInit. Returns the segment name.
inline std::string UseSimConfig(const std::string& json, const std::string& tag) {
  const std::string base = "/tmp/fgpu-" + tag + "-" + std::to_string(getpid());
  std::ofstream(base + ".json") << json;
  const std::string segment = "/fgpu-" + tag + "-" + std::to_string(getpid());
  setenv(kConfigEnv, (base + ".json").c_str(), 1);
  setenv(kSegmentEnv, segment.c_str(), 1);
  return segment;
}

// Runs `body` in a forked child on a private segment of the device configuration `json`
// (see RunInChild), removing the segment afterwards.
inline std::string RunWithConfig(const std::string& json, const std::string& tag,
                                 const std::function<std::string()>& body) {
  return RunInChild([&] {
    const std::string segment = UseSimConfig(json, tag);
    std::string failure = body();
    SharedDevices::Remove(segment).ok();
    return failure;
  });
}

// Free device memory as cuMemGetInfo reports it, 0 on error.
inline uint64_t FreeBytes() {
  size_t free = 0, total = 0;
  return cuMemGetInfo_v2(&free, &total) == CUDA_SUCCESS ? free : 0;
}

// A context made current on the calling thread, released at scope exit.
class PrimaryContext {
 public:
  explicit PrimaryContext(CUdevice device = 0) : device_(device) {
    ok_ = cuInit(0) == CUDA_SUCCESS && cuDevicePrimaryCtxRetain(&ctx_, device_) == CUDA_SUCCESS &&
          cuCtxSetCurrent(ctx_) == CUDA_SUCCESS;
  }
  ~PrimaryContext() {
    if (ctx_ != nullptr) cuDevicePrimaryCtxRelease_v2(device_);
  }
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;
  bool ok() const { return ok_; }
  CUcontext get() const { return ctx_; }

 private:
  CUdevice device_;
  CUcontext ctx_ = nullptr;
  bool ok_ = false;
};

}  // namespace fgpu::sim::testing
