// `fgpu k8s device-plugin`: the classic device plugin for clusters without DRA. Each GPU the
// agent shares is advertised as `shares_per_gpu` devices of `resource_name` (fgpu.io/gpu); a
// container's count of them is its slice's share of one GPU's memory and compute. With the mixed
// MIG strategy each MIG profile is a resource of its own.
// docs/kubernetes.md "The device-plugin path".
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace fgpu::k8s {

struct DevicePluginOptions {
  std::string agent = "unix:/var/lib/fgpu/agent.sock";
  std::string resource_name = "fgpu.io/gpu";
  int shares_per_gpu = 100;
  // none: MIG instances are shared like GPUs under resource_name; mixed: resource_name shares the
  // whole GPUs and each MIG profile is a resource of its own, fgpu.io/mig-<profile>, one device
  // per instance (the container's slice has the whole instance).
  std::string mig_strategy = "none";
  std::string plugin_dir = "/var/lib/kubelet/device-plugins";
  std::string endpoint = "fgpu-gpu.sock";  // our socket's name in plugin_dir
  std::string metrics_listen;
  std::vector<std::string> read_only_files = {"/etc/fgpu/node.conf"};
  int64_t owner_uid = 0;
  std::chrono::milliseconds poll_interval{1000};
};

int RunDevicePlugin(const DevicePluginOptions& options);

}  // namespace fgpu::k8s
