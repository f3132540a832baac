// The kubelet's device plugin manager, strictly: serves v1beta1.Registration on
// <dir>/kubelet.sock, validates each Register, then (as the kubelet does, after answering) dials
// <dir>/<endpoint>, asks GetDevicePluginOptions and follows ListAndWatch, rewriting a JSON state
// file on every update. Restart() does to <dir> what a restarting kubelet does.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace fgpu::k8s::test {

// <dir>/kubelet-state.json: where device-plugin-kubelet and allocate meet by default.
std::string DefaultStatePath(const std::string& dir);

// The kubelet's check of RegisterRequest.resource_name: an extended resource name,
// <DNS subdomain>/<name>, outside kubernetes.io.
Status ValidateExtendedResourceName(const std::string& name);

class DevicePluginKubelet {
 public:
  static Result<std::unique_ptr<DevicePluginKubelet>> Start(const std::string& dir, const std::string& state_file);
  ~DevicePluginKubelet();  // Stop()
  DevicePluginKubelet(const DevicePluginKubelet&) = delete;
  DevicePluginKubelet& operator=(const DevicePluginKubelet&) = delete;

  // A kubelet restart: kubelet.sock goes away, every plugin's connection is dropped, every
  // socket in <dir> is deleted, a new kubelet.sock appears; registrations are forgotten.
  Status Restart();
  // Stops serving and following; removes kubelet.sock. Idempotent.
  void Stop();

  // {"kubelet_socket":..,"restarts":N,"resources":{"<name>":{"endpoint":..,"options":{
  // "pre_start_required":b,"get_preferred_allocation_available":b},"devices":[{"id":..,
  // "health":..}],"updates":N,"connected":b,"error":".."}}}
  nlohmann::json State() const;

  struct Impl;

 private:
  explicit DevicePluginKubelet(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct AllocateArgs {
  std::string dir;
  std::string state_file;  // empty: DefaultStatePath(dir)
  std::string resource;
  std::vector<std::string> devices;         // may be empty when preferred_from is given
  std::vector<std::string> preferred_from;  // GetPreferredAllocation's available devices
  int size = 0;                             // GetPreferredAllocation's allocation_size
};

// The kubelet's allocation for one container: GetPreferredAllocation (only when the plugin's
// options offer it and preferred_from is given), Allocate, PreStartContainer (only when
// pre_start_required). {"resource":..,"allocated":[ids],"preferred":[ids]|null,
// "pre_start_called":b,"envs":{},"mounts":[{"container_path","host_path","read_only"}],
// "devices":[{"container_path","host_path","permissions"}],"annotations":{},"cdi_devices":[names]}
Result<nlohmann::json> AllocateFromPlugin(const AllocateArgs& args);

}  // namespace fgpu::k8s::test
