// The DRA driver's view of the API server (ClusterReader, SliceStore) over KubeClient.
#pragma once

#include "k8s/client/kube_client.h"
#include "k8s/dra/ports.h"

namespace fgpu::k8s {

inline constexpr const char* kResourceApi = "/apis/resource.k8s.io/v1";

class KubeAdapter : public ClusterReader, public SliceStore {
 public:
  // `node`: the Events' reporting instance.
  KubeAdapter(const KubeClient* client, std::string node) : client_(client), node_(std::move(node)) {}

  Result<nlohmann::json> GetClaim(const std::string& namespace_name, const std::string& name) override;
  Result<nlohmann::json> GetPod(const std::string& namespace_name, const std::string& name) override;
  Result<std::vector<nlohmann::json>> ListClaims() override;
  void ReportPrepareFailure(const ClaimRef& claim, const std::string& message) override;

  Result<nlohmann::json> Get(const std::string& name) override;
  Result<nlohmann::json> Create(const nlohmann::json& object) override;
  Result<nlohmann::json> Update(const nlohmann::json& object) override;
  Result<std::vector<nlohmann::json>> List(const std::string& driver, const std::string& node) override;
  Status Delete(const std::string& name) override;

 private:
  const KubeClient* client_;
  std::string node_;
};

}  // namespace fgpu::k8s
