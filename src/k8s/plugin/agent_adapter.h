// The DRA driver's and the device plugin's view of the node's agent (SliceAgent), over the
// agent's typed client. The plugins run as root beside the agent and talk over its Unix socket,
// so they act as admins: they make slices for the pods' uids and see every slice's key.
#pragma once

#include "api/agent_client.h"
#include "k8s/dra/ports.h"

namespace fgpu::k8s {

class AgentAdapter : public SliceAgent {
 public:
  explicit AgentAdapter(api::AgentClient client) : client_(std::move(client)) {}

  Result<GrantedSlice> Create(const SliceOrder& order) override;
  Result<std::vector<GrantedSlice>> List(const std::string& key_prefix) override;
  Status Delete(const std::string& id) override;
  Result<std::vector<PublishedGpu>> Gpus() override;

 private:
  api::AgentClient client_;
};

}  // namespace fgpu::k8s
