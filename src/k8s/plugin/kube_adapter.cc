#include "k8s/plugin/kube_adapter.h"

#include "k8s/client/events.h"
#include "k8s/client/json_fields.h"
#include "k8s/plugin/plugin_log.h"

namespace fgpu::k8s {
namespace {

using nlohmann::json;

// A lost race (someone wrote first) is Aborted for the publisher, whatever status the server used.
Result<json> RacesAborted(Result<json> result) {
  if (!result.ok() && (IsConflict(result.status()) || IsAlreadyExists(result.status()))) {
    return Status::Aborted(result.status().message());
  }
  return result;
}

// A list's items as a vector (none when the list has no array of them).
std::vector<json> ItemsOf(const json& list) {
  const json* items = Member(list, "items");
  if (items == nullptr || !items->is_array()) return {};
  return std::vector<json>(items->begin(), items->end());
}

}  // namespace

Result<json> KubeAdapter::GetClaim(const std::string& namespace_name, const std::string& name) {
  return client_->Get(std::string(kResourceApi) + "/namespaces/" + UrlEncode(namespace_name) + "/resourceclaims/" +
                      UrlEncode(name));
}

Result<json> KubeAdapter::GetPod(const std::string& namespace_name, const std::string& name) {
  return client_->Get("/api/v1/namespaces/" + UrlEncode(namespace_name) + "/pods/" + UrlEncode(name));
}

Result<std::vector<json>> KubeAdapter::ListClaims() {
  ListOptions options;
  options.limit = 500;
  options.all_pages = true;
  Result<json> list = client_->List(std::string(kResourceApi) + "/resourceclaims", options);
  if (!list.ok()) return list.status();
  return ItemsOf(*list);
}

void KubeAdapter::ReportPrepareFailure(const ClaimRef& claim, const std::string& message) {
  ObjectRef involved;
  involved.api_version = "resource.k8s.io/v1";
  involved.kind = "ResourceClaim";
  involved.namespace_ = claim.namespace_name;
  involved.name = claim.name;
  involved.uid = claim.uid;
  // An Event's message is cut at 1 KiB by the API server; a claim that is not there has no place
  // for one.
  Result<json> created = CreateEvent(*client_, claim.namespace_name, involved, "PrepareFailed",
                                     message.substr(0, 1000), EventType::kWarning, EventSource{kDriverName, node_});
  if (!created.ok()) Log("WARN", "event_failed", {{"claim", claim.namespace_name + "/" + claim.name},
                                                  {"reason", created.status().message()}});
}

Result<json> KubeAdapter::Get(const std::string& name) {
  return client_->Get(std::string(kResourceApi) + "/resourceslices/" + UrlEncode(name));
}

Result<json> KubeAdapter::Create(const json& object) {
  return RacesAborted(client_->Create(std::string(kResourceApi) + "/resourceslices", object));
}

Result<json> KubeAdapter::Update(const json& object) {
  const std::string name = object["metadata"].value("name", "");
  return RacesAborted(client_->Update(std::string(kResourceApi) + "/resourceslices/" + UrlEncode(name), object));
}

Result<std::vector<json>> KubeAdapter::List(const std::string& driver, const std::string& node) {
  ListOptions options;
  options.field_selector = "spec.driver=" + driver + ",spec.nodeName=" + node;
  options.all_pages = true;
  Result<json> list = client_->List(std::string(kResourceApi) + "/resourceslices", options);
  if (!list.ok()) return list.status();
  return ItemsOf(*list);
}

Status KubeAdapter::Delete(const std::string& name) {
  Result<json> deleted = client_->Delete(std::string(kResourceApi) + "/resourceslices/" + UrlEncode(name));
  if (!deleted.ok() && deleted.status().code() != StatusCode::kNotFound) return deleted.status();
  return Status::Ok();
}

}  // namespace fgpu::k8s
