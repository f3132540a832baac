// The virtual device view: the one function every memory-reporting wrapper (cuMemGetInfo[_v2],
// cuDeviceTotalMem[_v2], nvmlDeviceGetMemoryInfo[_v2]) uses, so all of them agree.
//
// Contract (docs/hook-memory.md, reference cuda.md §2.7)
// - total = min(cap, physical total): the slice size, never more than the GPU has (a cap above
//   the device, e.g. "unlimited", must not make JAX preallocate 75 % of 16 EiB).
// - used  = the slice's charges on that device, all its processes, contexts included.
// - free  = min(total - used, physical free), saturating at 0: never an error and never
//   negative when the slice is over its cap (a shrunk cap), never more than the device really
//   has free (honest under overcommit). So free + used <= total whenever used <= total.
// - A device outside the slice has cap 0: total 0, free 0.
// No overflow for any inputs; pure, no state.
#pragma once

#include <cstdint>

namespace fgpu::hook {

struct MemoryView {
  uint64_t total = 0;
  uint64_t free = 0;
  uint64_t used = 0;
};

MemoryView VirtualMemoryView(uint64_t cap, uint64_t used, uint64_t physical_total, uint64_t physical_free);

// For the legacy 32-bit entry points (cuMemGetInfo, cuDeviceTotalMem): saturate as the driver does.
inline unsigned int SaturateToUint(uint64_t bytes) {
  return bytes > UINT32_MAX ? UINT32_MAX : static_cast<unsigned int>(bytes);
}

}  // namespace fgpu::hook
