#include "k8s/plugin/kube_adapter.h"

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
  std::vector<json> claims;
  for (const json& item : list->value("items", json::array())) claims.push_back(item);
  return claims;
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

}  // namespace fgpu::k8s
