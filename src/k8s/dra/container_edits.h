// What a container needs to run in a slice, for both Kubernetes paths (a DRA claim's CDI spec, a
// device plugin's Allocate answer): the slice's environment as the agent built it, the slice
// directory read-only with its ledger writable, the interposer and the node's files read-only,
// the GPU's device nodes. Host paths, at the same place inside the container.
#pragma once

#include <string>
#include <vector>

#include "k8s/dra/cdi_spec.h"
#include "k8s/dra/ports.h"

namespace fgpu::k8s {

struct EditsOptions {
  // Files the workload reads (the node configuration the interposer trusts, the agent's board
  // socket); missing ones are left out.
  std::vector<std::string> read_only_files;
  std::vector<std::string> control_device_nodes = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"};
};

// `gpu_index`: the GPU's /dev/nvidia number; -1 unknown. Fails closed: a slice whose environment
// names no interposer, or one the plugin cannot see (so cannot mount), would run uncapped.
Result<CdiDevice> ContainerEditsFor(const std::string& name, const GrantedSlice& slice, int gpu_index,
                            const EditsOptions& options);

}  // namespace fgpu::k8s
