// The names of the allocation APIs (--api), apart from device_memory.cc so the
// command-line parser links without the driver.
#include "probe/device_memory.h"

namespace fgpu::probe {

namespace {

constexpr struct {
  AllocApi api;
  std::string_view name;
} kApiNames[] = {
    {AllocApi::kMemAlloc, "mem_alloc"}, {AllocApi::kPitch, "pitch"},     {AllocApi::kManaged, "managed"},
    {AllocApi::kVmm, "vmm"},            {AllocApi::kAsync, "async"},     {AllocApi::kPool, "pool"},
    {AllocApi::kArray, "array"},        {AllocApi::kArray3D, "array3d"}, {AllocApi::kMipmapped, "mipmapped"},
    {AllocApi::kExternal, "external"},
};

}  // namespace

std::string_view AllocApiName(AllocApi api) {
  for (const auto& entry : kApiNames) {
    if (entry.api == api) return entry.name;
  }
  return "unknown";
}

bool ParseAllocApi(std::string_view text, AllocApi* api) {
  for (const auto& entry : kApiNames) {
    if (entry.name == text) {
      *api = entry.api;
      return true;
    }
  }
  return false;
}

std::string_view AllocApiChoices() {
  return "mem_alloc|pitch|managed|vmm|async|pool|array|array3d|mipmapped";
}

}  // namespace fgpu::probe
