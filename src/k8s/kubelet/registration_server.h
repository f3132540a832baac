// The plugin's side of the kubelet's plugin registration (pluginwatcher): serves
// pluginregistration.Registration on <registry dir>/<name>-reg.sock. The kubelet finds the socket,
// calls GetInfo, validates it, connects to the endpoint, and reports with NotifyRegistrationStatus.
// A restarted kubelet simply does all of that again, so the server keeps serving and keeps the
// latest report.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace fgpu::k8s {

// pluginregistration.PluginInfo.type values.
inline constexpr const char* kDraPluginType = "DRAPlugin";
inline constexpr const char* kDevicePluginType = "DevicePlugin";
// PluginInfo.supported_versions entries of the DRA services.
inline constexpr const char* kDraV1Service = "v1.DRAPlugin";
inline constexpr const char* kDraV1beta1Service = "v1beta1.DRAPlugin";
inline constexpr const char* kKubeletRegistryDir = "/var/lib/kubelet/plugins_registry";

struct PluginInfo {
  std::string type;      // kDraPluginType, kDevicePluginType, "CSIPlugin"
  std::string name;      // a DRA driver name; unique per type
  std::string endpoint;  // absolute path of the socket serving the type's API
  std::vector<std::string> supported_versions;
};

// What the kubelet said in NotifyRegistrationStatus.
struct RegistrationReport {
  bool registered = false;
  std::string error;  // the kubelet's reason when !registered
};

// <registry_dir>/<name>-reg.sock
std::string RegistrationSocketPath(const std::string& registry_dir, const std::string& name);

class RegistrationServer {
 public:
  // Called on the gRPC thread for every NotifyRegistrationStatus; keep it short.
  using OnReport = std::function<void(const RegistrationReport&)>;

  // Fails when the info is incomplete (type, name, endpoint) or the socket cannot be served.
  static Result<std::unique_ptr<RegistrationServer>> Start(const std::string& registry_dir, PluginInfo info,
                                                           OnReport on_report = {});
  ~RegistrationServer();  // Stop()
  RegistrationServer(const RegistrationServer&) = delete;
  RegistrationServer& operator=(const RegistrationServer&) = delete;

  // OK once the kubelet's latest report says registered; Unavailable before any report;
  // InvalidArgument with the kubelet's error when it refused us.
  Status Registered() const;
  // Registered(), after waiting up to `timeout` for a first report.
  Status WaitRegistered(std::chrono::milliseconds timeout) const;
  // How many times a kubelet called GetInfo (once per kubelet start, normally).
  int info_requests() const;

  const std::string& socket_path() const;
  // Stops serving and removes the socket. Idempotent.
  void Stop();

 private:
  struct Impl;
  explicit RegistrationServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fgpu::k8s
