// `fgpu k8s dra-plugin`: the DRA kubelet plugin for gpu.fgpu.io, one per node (a DaemonSet beside
// the agent). It publishes the node's ResourceSlice from the agent's GPUs, registers with the
// kubelet (plugin registration, DRAPlugin v1 and v1beta1 on one socket), prepares claims into
// slices with CDI specs, and reconciles claims with slices at start and every interval.
// docs/kubernetes.md.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "k8s/dra/claim.h"
#include "k8s/dra/resource_slice.h"

namespace fgpu::k8s {

struct DraPluginOptions {
  std::string node_name;  // the pool's name; required
  std::string agent = "unix:/var/lib/fgpu/agent.sock";
  std::string kubeconfig;  // empty: in-cluster
  std::string plugin_dir = "/var/lib/kubelet/plugins/gpu.fgpu.io";
  std::string registry_dir = "/var/lib/kubelet/plugins_registry";
  std::string cdi_dir = "/var/run/cdi";
  std::string metrics_listen;  // host:port; empty: no /metrics
  std::vector<std::string> read_only_files = {"/etc/fgpu/node.conf"};
  int64_t default_owner_uid = 0;
  ClaimPolicy claims;
  CapacityPolicy policy;
  std::chrono::milliseconds publish_interval{250};
  std::chrono::milliseconds reconcile_interval{30'000};
};

// Runs until SIGTERM or SIGINT; 0 after a clean stop, 1 when it could not start (the reason on
// stderr).
int RunDraPlugin(const DraPluginOptions& options);

}  // namespace fgpu::k8s
