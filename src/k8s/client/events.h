// Kubernetes Events about our objects (core/v1 Event: what `kubectl describe` shows).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "k8s/client/kube_client.h"

namespace fgpu::k8s {

// The object an event is about (a core/v1 ObjectReference).
struct ObjectRef {
  std::string api_version{};  // "v1", "resource.k8s.io/v1"
  std::string kind{};         // "Pod", "ResourceClaim", ...
  std::string namespace_{};   // "" for cluster-scoped objects
  std::string name{};
  std::string uid{};
  std::string resource_version{};
  nlohmann::json ToJson() const;
};

enum class EventType { kNormal, kWarning };

struct EventSource {
  std::string component = "fgpu";  // source.component and reportingComponent
  std::string host{};                // source.host and reportingInstance ("" = unset)
};

// Builds the Event object (name "<object>.<hex nanoseconds>", as client-go names them;
// count 1, first/lastTimestamp now). For a cluster-scoped object use namespace "default".
nlohmann::json MakeEvent(const std::string& namespace_, const ObjectRef& involved, const std::string& reason,
                         const std::string& message, EventType type, const EventSource& source = {});

// POSTs it to /api/v1/namespaces/<namespace>/events and returns the stored Event.
Result<nlohmann::json> CreateEvent(const KubeClient& client, const std::string& namespace_, const ObjectRef& involved,
                                   const std::string& reason, const std::string& message,
                                   EventType type = EventType::kNormal, const EventSource& source = {});

}  // namespace fgpu::k8s
