// A device plugin's registration with the kubelet, and re-registration after a kubelet restart.
// The device plugin flow: serve v1beta1.DevicePlugin on <dir>/<endpoint>, then call
// v1beta1.Registration/Register on <dir>/kubelet.sock. A restarting kubelet deletes every socket in
// <dir> and creates a new kubelet.sock; the registrar watches <dir> (inotify), asks the plugin to
// serve its socket again when it is deleted, and registers again when kubelet.sock reappears.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "core/status.h"

namespace fgpu::k8s {

inline constexpr const char* kDevicePluginDir = "/var/lib/kubelet/device-plugins";
inline constexpr const char* kKubeletSocketName = "kubelet.sock";
inline constexpr const char* kDevicePluginApiVersion = "v1beta1";

struct DevicePluginRegistration {
  std::string plugin_dir = kDevicePluginDir;  // holds kubelet.sock and our socket
  std::string endpoint;                       // our socket's file name inside plugin_dir
  std::string resource_name;                  // <domain>/<name>, e.g. fgpu.io/shard
  bool pre_start_required = false;
  bool get_preferred_allocation_available = false;
};

// InvalidArgument unless the registration is one the kubelet could accept: a bare endpoint file
// name, a resource name with a domain, an existing plugin_dir.
Status ValidateRegistration(const DevicePluginRegistration& r);

// One Register call on <plugin_dir>/kubelet.sock. Unavailable when no kubelet answers within
// `timeout`; InvalidArgument with the kubelet's reason when it refuses (unsupported version,
// resource name already taken: the plugin is expected to exit).
Status RegisterDevicePlugin(const DevicePluginRegistration& r, std::chrono::milliseconds timeout);

class DevicePluginRegistrar {
 public:
  struct Hooks {
    // Our socket was deleted (a restarting kubelet deletes them): serve it again at the same
    // path. Called on the watcher thread before registering again.
    std::function<Status()> recreate_endpoint;
    // Every registration's outcome after the first (which Start returns), on the watcher thread.
    std::function<void(const Status&)> on_register;
  };

  // Registers (retrying while no kubelet listens yet, up to `timeout`) and then watches for
  // kubelet restarts. Fails on an invalid registration, a refusal, or no kubelet within timeout.
  static Result<std::unique_ptr<DevicePluginRegistrar>> Start(DevicePluginRegistration r, Hooks hooks,
                                                              std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ~DevicePluginRegistrar();  // Stop()
  DevicePluginRegistrar(const DevicePluginRegistrar&) = delete;
  DevicePluginRegistrar& operator=(const DevicePluginRegistrar&) = delete;

  // The latest registration's outcome.
  Status last_status() const;
  // Successful Register calls so far (1 after Start; +1 per kubelet restart).
  int registrations() const;
  // Stops watching. Idempotent.
  void Stop();

 private:
  struct Impl;
  explicit DevicePluginRegistrar(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fgpu::k8s
