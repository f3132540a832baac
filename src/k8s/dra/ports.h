// What the DRA driver needs of the world, as two narrow interfaces: the node's agent (slices,
// GPUs) and the API server (claims, pods). The plugin binds them to the agent's typed client and
// the Kubernetes client; the unit tests bind fakes.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "k8s/dra/claim.h"
#include "k8s/dra/resource_slice.h"

namespace fgpu::k8s {

// A slice the plugin asks the agent for. `key` makes the request idempotent: the agent answers a
// second request with the same key (a kubelet retry, a plugin restarted mid-prepare) with the
// slice it made for the first.
struct SliceOrder {
  std::string key;
  std::string gpu_uuid;
  uint64_t memory_bytes = 0;
  uint32_t compute_percent = 100;
  std::optional<std::string> tier;
  std::optional<std::string> compute_mode;
  // "hard": the slice has the whole MIG instance (the agent sizes it; compute_percent is not sent).
  std::optional<std::string> isolation;
  // A dynamic MIG GPU's placement (gpu_uuid is the GPU's): the agent makes the instance there.
  std::optional<std::string> mig_profile;
  std::optional<int> mig_start;
  std::string tenant;
  std::optional<int64_t> owner_uid;
  std::string namespace_name;
  std::string pod;
  std::string pod_uid;  // the agent counts the pod's cgroup as the slice's (signals, stop-loss)
  std::string claim;
};

struct GrantedSlice {
  std::string id;
  std::string key;
  std::string gpu_uuid;
  std::string dir;
  std::vector<std::pair<std::string, std::string>> env;
};

class SliceAgent {
 public:
  virtual ~SliceAgent() = default;
  // ResourceExhausted when the GPU has no room, with the agent's reason.
  virtual Result<GrantedSlice> Create(const SliceOrder& order) = 0;
  // Every slice whose key starts with `key_prefix`.
  virtual Result<std::vector<GrantedSlice>> List(const std::string& key_prefix) = 0;
  // Deleting a slice that is gone is not an error.
  virtual Status Delete(const std::string& id) = 0;
  virtual Result<std::vector<PublishedGpu>> Gpus() = 0;
};

class ClusterReader {
 public:
  virtual ~ClusterReader() = default;
  // NotFound when the object does not exist.
  virtual Result<nlohmann::json> GetClaim(const std::string& namespace_name, const std::string& name) = 0;
  virtual Result<nlohmann::json> GetPod(const std::string& namespace_name, const std::string& name) = 0;
  // Every ResourceClaim in the cluster (a list's items).
  virtual Result<std::vector<nlohmann::json>> ListClaims() = 0;
  // Tells the claim's users why it could not be prepared (a Warning Event on the claim, what
  // `kubectl describe resourceclaim` shows); best effort.
  virtual void ReportPrepareFailure(const ClaimRef& /*claim*/, const std::string& /*message*/) {}
};

}  // namespace fgpu::k8s

namespace fgpu::k8s {

// Where the node's ResourceSlice is kept: the API server's resource.k8s.io/v1 resourceslices.
class SliceStore {
 public:
  virtual ~SliceStore() = default;
  // NotFound when there is none by that name.
  virtual Result<nlohmann::json> Get(const std::string& name) = 0;
  virtual Result<nlohmann::json> Create(const nlohmann::json& object) = 0;
  // Aborted when the object changed since `object`'s metadata.resourceVersion (re-read, retry).
  virtual Result<nlohmann::json> Update(const nlohmann::json& object) = 0;
  // Every ResourceSlice of `driver` on `node` (a list's items).
  virtual Result<std::vector<nlohmann::json>> List(const std::string& driver, const std::string& node) = 0;
  // Deleting one that is gone is not an error.
  virtual Status Delete(const std::string& name) = 0;
};

}  // namespace fgpu::k8s
