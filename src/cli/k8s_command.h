// fgpu k8s dra-plugin | device-plugin: the Kubernetes plugins (src/k8s/plugin), run by the
// DaemonSet in deploy/kubernetes. Built where gRPC and libcurl are (FGPU_HAVE_K8S).
#pragma once

#include <CLI/CLI.hpp>

#include "k8s/plugin/device_plugin.h"
#include "k8s/plugin/dra_plugin.h"

namespace fgpu::cli {

struct K8sDraOptions {
  k8s::DraPluginOptions plugin;
  std::string memory_min = "256Mi";
  std::string memory_step = "1Mi";
  std::string board_socket;
  std::vector<std::string> claim_parameters = {"computeMode"};
};
CLI::App* AddK8sDraFlags(CLI::App& k8s, K8sDraOptions* options);
int RunK8sDra(K8sDraOptions options);

CLI::App* AddK8sDevicePluginFlags(CLI::App& k8s, k8s::DevicePluginOptions* options);
int RunK8sDevicePlugin(const k8s::DevicePluginOptions& options);

}  // namespace fgpu::cli
