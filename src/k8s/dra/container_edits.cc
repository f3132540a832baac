#include "k8s/dra/container_edits.h"

#include <unistd.h>

namespace fgpu::k8s {
namespace {

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

}  // namespace

Result<CdiDevice> ContainerEditsFor(const std::string& name, const GrantedSlice& slice, int gpu_index,
                                    const EditsOptions& options) {
  CdiDevice device;
  device.name = name;
  device.env = slice.env;
  device.mounts.push_back({slice.dir, /*read_only=*/true});
  // The ledger is the one file the workload writes: charged by the interposer in every process.
  device.mounts.push_back({slice.dir + "/ledger", /*read_only=*/false});
  bool preloads = false;
  for (const auto& [variable, value] : slice.env) {
    if (variable != "LD_PRELOAD") continue;
    std::size_t start = 0;
    while (start <= value.size()) {
      const std::size_t end = std::min(value.find(':', start), value.size());
      const std::string path = value.substr(start, end - start);
      start = end + 1;
      if (path.empty()) continue;
      if (!Exists(path)) {
        return Status::Unavailable("the interposer " + path + " that slice " + slice.id +
                                   "'s environment preloads is not visible to the plugin (mount the host's fgpu "
                                   "library directory into the plugin's container); a container without it would "
                                   "run uncapped");
      }
      device.mounts.push_back({path, true});
      preloads = true;
    }
  }
  if (!preloads) {
    return Status::Unavailable("the agent's environment for slice " + slice.id +
                               " names no interposer (LD_PRELOAD): start the agent from an installed fgpu so it "
                               "knows libfgpu.so; a container without it would run uncapped");
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
