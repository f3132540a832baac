// The kubelet's plugin watcher, strictly: finds a plugin's registration socket, calls GetInfo,
// validates the answer the way the kubelet does, dials the endpoint and reports the verdict with
// NotifyRegistrationStatus.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace pluginregistration {
class PluginInfo;
}

namespace fgpu::k8s::test {

struct PluginRegistration {
  bool registered = false;
  std::string socket;  // the registration socket
  std::string type, name, endpoint;
  std::vector<std::string> versions;
  std::string error;  // why the kubelet refused (sent to the plugin too)

  // {"registered":true,"socket":..,"type":..,"name":..,"endpoint":..,"versions":[..]}, with
  // "error" instead of nothing when refused.
  nlohmann::json ToJson() const;
};

// The kubelet's checks of a PluginInfo: the type it handles (want_type), the expected name
// (empty: any), an absolute endpoint path that exists, and for DRAPlugin a supported version
// ("v1.DRAPlugin" or "v1beta1.DRAPlugin"); DevicePlugin wants "v1beta1".
Status ValidatePluginInfo(const pluginregistration::PluginInfo& info, const std::string& want_type,
                          const std::string& want_name);

// GetInfo on `socket`, validation, a connection to the endpoint, NotifyRegistrationStatus with the
// verdict. An error Status only when the plugin cannot be asked at all (GetInfo or the
// notification failed); a refusal is a PluginRegistration with registered == false.
Result<PluginRegistration> RegisterPlugin(const std::string& socket, const std::string& want_type,
                                          const std::string& want_name, std::chrono::milliseconds timeout);

// Waits for <dir>/<name>-reg.sock, or any other socket in `dir` whose GetInfo names `name`.
Result<std::string> WaitForRegistrationSocket(const std::string& dir, const std::string& name,
                                              std::chrono::milliseconds timeout);

// Every socket appearing in `dir` (now, or later, or re-created by a restarted plugin) whose
// GetInfo names `name` (empty: any) is registered; each event is appended to `events_file` as a
// JSON line ({"event":"registered"|"refused"|"failed"|"removed",...}). Returns only on an error.
Status WatchRegistry(const std::string& dir, const std::string& want_type, const std::string& name,
                     const std::string& events_file);

}  // namespace fgpu::k8s::test
