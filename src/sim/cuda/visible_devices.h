// CUDA_VISIBLE_DEVICES as the driver reads it: a comma-separated list of device indices or
// UUIDs ("GPU-..." — a unique prefix is enough). The listed devices become CUDA ordinals 0..n-1
// in list order. Parsing stops at the first entry that is invalid, unknown or repeated: the
// devices before it stay visible. Unset means every device; an empty value means none.
// NVML ignores the variable, as the real NVML does.
#pragma once

#include <string>
#include <vector>

namespace fgpu::sim::cuda {

// `value` is the variable's value, or nullptr when unset. `uuids` are the physical devices'
// UUIDs in index order. Returns the physical index of each visible ordinal.
std::vector<int> ParseVisibleDevices(const char* value, const std::vector<std::string>& uuids);

}  // namespace fgpu::sim::cuda
