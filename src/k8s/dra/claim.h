// A ResourceClaim as the node plugin reads it: what the scheduler allocated to this node's pool
// from gpu.fgpu.io (one slice per allocated device, sized by the capacity the claim consumed),
// with the slice parameters from the DeviceClass's and the claim's opaque configuration. The
// kubelet hands the plugin only (namespace, name, uid); everything else comes from the API server.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/status.h"

namespace fgpu::k8s {

// The opaque parameters a DeviceClass or a claim may give gpu.fgpu.io
// ({"apiVersion": "gpu.fgpu.io/v1alpha1", "kind": "SliceParameters", ...}); a later
// configuration (the claim's over its class's) overrides field by field.
struct SliceParameters {
  std::optional<std::string> tier;          // "batch" | "standard" | "latency"
  std::optional<std::string> compute_mode;  // "share" | "cap"
  std::optional<std::string> tenant;
  std::optional<int64_t> owner_uid;  // the uid the workload runs as, when the pod does not say
  // "hard": the slice has its whole MIG instance (the claim must consume all of its compute);
  // "trusted" (default): a slice beside others. docs/mig.md "Isolation classes".
  std::optional<std::string> isolation;

  bool operator==(const SliceParameters&) const = default;
};

struct PodRef {
  std::string name;
  std::string uid;
  bool operator==(const PodRef&) const = default;
};

// One device the scheduler allocated to the claim: one slice.
struct AllocatedDevice {
  std::string request;  // the claim's request name (a subrequest's suffix stripped)
  std::string pool;
  std::string device;
  std::string share_id;
  uint64_t memory_bytes = 0;
  uint32_t compute_percent = 0;
  // Allocated without consumedCapacity: the device is the claim's whole (a dynamic MIG GPU's
  // placement); memory_bytes and compute_percent are 0. The driver refuses it for a shared device.
  bool whole = false;
  SliceParameters parameters;

  bool operator==(const AllocatedDevice&) const = default;
};

struct ClaimRef {
  std::string namespace_name;
  std::string name;
  std::string uid;
  bool operator==(const ClaimRef&) const = default;
};

struct ClaimAllocation {
  ClaimRef ref;
  std::vector<AllocatedDevice> devices;  // ours only, in the allocation's order
  std::vector<PodRef> reserved_for;      // the pods (resource "pods") the claim is reserved for

  bool operator==(const ClaimAllocation&) const = default;
};

// Which parameters a claim's own configuration may set. A DeviceClass is the cluster admin's (its
// use can be limited by RBAC, quotas and admission), a claim anyone's who may create pods in a
// namespace: so a claim may set only what the node's admin allows (`--claim-parameters`), and
// the rest — a latency tier, another tenant, a host uid for the ledger — comes from classes.
struct ClaimPolicy {
  std::set<std::string> claim_may_set = {"computeMode"};  // of tier, computeMode, tenant, runAsUser, isolation
};

// The devices of `driver` in `pool` that `claim` (the API server's JSON) was allocated.
// InvalidArgument with the reason when the object is not the claim the kubelet named (another
// uid), is not allocated, holds none of our devices, names one of our devices in another pool,
// lacks or malforms its consumed capacity, or carries malformed or unknown parameters, or
// parameters of its own that `policy` leaves to classes.
Result<ClaimAllocation> ParseClaimAllocation(const nlohmann::json& claim, const ClaimRef& expected,
                                             const std::string& driver, const std::string& pool,
                                             const ClaimPolicy& policy = {});

// The opaque parameters object, strictly (unknown fields and wrong types are errors).
Result<SliceParameters> ParseSliceParameters(const nlohmann::json& parameters);

}  // namespace fgpu::k8s
