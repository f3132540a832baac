#include "k8s/dra/container_edits.h"

#include <unistd.h>

namespace fgpu::k8s {
namespace {

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

}  // namespace

CdiDevice ContainerEditsFor(const std::string& name, const GrantedSlice& slice, int gpu_index,
                            const EditsOptions& options) {
  CdiDevice device;
  device.name = name;
  device.env = slice.env;
  device.mounts.push_back({slice.dir, /*read_only=*/true});
  // The ledger is the one file the workload writes: charged by the interposer in every process.
  device.mounts.push_back({slice.dir + "/ledger", /*read_only=*/false});
  for (const auto& [variable, value] : slice.env) {
    if (variable == "LD_PRELOAD" && !value.empty() && value.find(':') == std::string::npos && Exists(value)) {
      device.mounts.push_back({value, true});
    }
  }
  for (const std::string& path : options.read_only_files) {
    if (Exists(path)) device.mounts.push_back({path, true});
  }
  if (gpu_index >= 0) {
    const std::string node = "/dev/nvidia" + std::to_string(gpu_index);
    if (Exists(node)) device.device_nodes.push_back(node);
  }
  for (const std::string& path : options.control_device_nodes) {
    if (Exists(path)) device.device_nodes.push_back(path);
  }
  return device;
}

}  // namespace fgpu::k8s
