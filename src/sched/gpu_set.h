// GPU indices inside one node as a bitmask: placements name their GPUs in 16 bits, and a
// set is copied, compared and stored in a cache entry for free.
#pragma once

#include <bit>
#include <cstdint>

namespace fgpu::sched {

// A node's GPUs are numbered 0..gpu_count-1 in the order the node lists them.
inline constexpr int kMaxGpusPerNode = 16;
// A whole GPU's compute, in milli-GPU: a request for 500 asks half of one GPU.
inline constexpr int32_t kMilliPerGpu = 1000;

using GpuSet = uint16_t;

inline constexpr GpuSet GpuBit(int gpu) { return static_cast<GpuSet>(1U << gpu); }
inline constexpr bool Contains(GpuSet set, int gpu) { return ((set >> gpu) & 1U) != 0; }
inline constexpr int Count(GpuSet set) { return std::popcount(set); }
// The lowest GPU index in a non-empty set.
inline constexpr int First(GpuSet set) { return std::countr_zero(set); }

}  // namespace fgpu::sched
