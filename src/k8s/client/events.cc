#include "k8s/client/events.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace fgpu::k8s {
namespace {

std::string NowRfc3339() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

void SetIf(nlohmann::json& obj, const char* key, const std::string& value) {
  if (!value.empty()) obj[key] = value;
}

}  // namespace

nlohmann::json ObjectRef::ToJson() const {
  nlohmann::json ref = nlohmann::json::object();
  SetIf(ref, "apiVersion", api_version);
  SetIf(ref, "kind", kind);
  SetIf(ref, "namespace", namespace_);
  SetIf(ref, "name", name);
  SetIf(ref, "uid", uid);
  SetIf(ref, "resourceVersion", resource_version);
  return ref;
}

nlohmann::json MakeEvent(const std::string& namespace_, const ObjectRef& involved, const std::string& reason,
                         const std::string& message, EventType type, const EventSource& source) {
  auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::system_clock::now().time_since_epoch()).count();
  char suffix[24];
  std::snprintf(suffix, sizeof suffix, "%llx", static_cast<unsigned long long>(nanos));
  std::string now = NowRfc3339();
  nlohmann::json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", (involved.name.empty() ? std::string("fgpu") : involved.name) + "." + suffix},
                    {"namespace", namespace_}}},
      {"involvedObject", involved.ToJson()},
      {"reason", reason},
      {"message", message},
      {"type", type == EventType::kWarning ? "Warning" : "Normal"},
      {"firstTimestamp", now},
      {"lastTimestamp", now},
      {"count", 1},
      {"source", {{"component", source.component}}},
      {"reportingComponent", source.component},
  };
  if (!source.host.empty()) {
    event["source"]["host"] = source.host;
    event["reportingInstance"] = source.host;
  }
  return event;
}

Result<nlohmann::json> CreateEvent(const KubeClient& client, const std::string& namespace_, const ObjectRef& involved,
                                   const std::string& reason, const std::string& message, EventType type,
                                   const EventSource& source) {
  return client.Create("/api/v1/namespaces/" + namespace_ + "/events",
                       MakeEvent(namespace_, involved, reason, message, type, source));
}

}  // namespace fgpu::k8s
