// DraDriver: NodePrepareResources and NodeUnprepareResources for gpu.fgpu.io, and the reconciling
// that keeps claims and slices in step across restarts. Stateless beyond the agent and the CDI
// directory: a slice's idempotency key ("k8s/<claim uid>/<device>/<share>") ties it to its claim,
// so a plugin killed at any instruction, an agent restarted, or a kubelet that calls again finds
// the same slices, and a slice whose claim is gone is found and released.
// docs/kubernetes.md "How a claim becomes a slice".
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "k8s/dra/cdi_spec.h"
#include "k8s/dra/claim.h"
#include "k8s/dra/container_edits.h"
#include "k8s/dra/ports.h"

namespace fgpu::k8s {

struct DraOptions {
  std::string driver = kDriverName;
  std::string node;  // the node's name: also its pool's
  std::string cdi_dir = "/var/run/cdi";
  EditsOptions edits;
  // The uid a slice's ledger is given when neither the claim's parameters nor the pod name one.
  int64_t default_owner_uid = 0;
  ClaimPolicy claims;
};

struct PreparedDevice {
  std::string request;
  std::string pool;
  std::string device;
  std::string cdi_id;
  std::string slice_id;
  bool operator==(const PreparedDevice&) const = default;
};

struct PrepareOutcome {
  std::vector<PreparedDevice> devices;
  std::string error;  // non-empty: preparation failed (the kubelet retries)
};

struct ReconcileReport {
  int slices_kept = 0;
  int slices_released = 0;  // their claim is gone or no longer allocated here
  int specs_removed = 0;    // CDI specs without a slice
  std::vector<std::string> errors;
};

// Counters the plugin exports (docs/kubernetes.md "Metrics").
struct DriverCounters {
  uint64_t prepares = 0;
  uint64_t prepare_errors = 0;
  uint64_t unprepares = 0;
  uint64_t unprepare_errors = 0;
  uint64_t reconcile_released = 0;
};

class DraDriver {
 public:
  DraDriver(DraOptions options, SliceAgent* agent, ClusterReader* cluster);

  PrepareOutcome Prepare(const ClaimRef& claim);
  // Releases the claim's slices and its CDI spec; a claim never prepared is not an error.
  Status Unprepare(const ClaimRef& claim);
  // Releases the slices and specs of claims that no longer exist or are no longer allocated to
  // this node; keeps the rest. Run at start and periodically.
  ReconcileReport Reconcile();

  DriverCounters Counters() const;
  // The idempotency key prefix of a claim's slices.
  static std::string KeyPrefixOf(const std::string& claim_uid);
  // "k8s/<claim uid>/<device>/<share id or request>", at most 128 characters.
  static std::string SliceKeyOf(const std::string& claim_uid, const AllocatedDevice& device);

 private:
  // What an allocated device is on this node: a GPU or MIG instance the agent lists, or a
  // placement of a dynamic MIG GPU (its instance made at prepare).
  struct DeviceTarget {
    std::string gpu_uuid;  // where the slice goes (a placement: its GPU)
    bool mig_instance = false;
    std::optional<MigPlacement> placement;
  };
  Result<std::vector<PreparedDevice>> PrepareLocked(const ClaimRef& claim);
  Result<DeviceTarget> TargetOfDevice(const std::string& device);
  std::optional<DeviceTarget> FindTargetLocked(const std::string& device) const;
  // Why `device` cannot be prepared as allocated ("" when it can).
  static std::string WrongAllocation(const AllocatedDevice& device, const DeviceTarget& target);
  static SliceOrder OrderFor(const AllocatedDevice& device, const DeviceTarget& target);
  // The parameters' runAsUser, else the first reserved pod's, else the default; an error when a
  // pod cannot be read now (a retry must not pick another owner than the first try did).
  Result<int64_t> OwnerOf(const ClaimAllocation& claim, const SliceParameters& parameters);
  // The GPU's /dev/nvidia number (its minor, else its index); -1 unknown.
  int IndexOfGpu(const std::string& gpu_uuid) const;
  std::shared_ptr<std::mutex> ClaimLock(const std::string& uid);
  Status ReleaseClaim(const std::string& uid);

  const DraOptions options_;
  SliceAgent* const agent_;
  ClusterReader* const cluster_;

  mutable std::mutex mutex_;  // guards what follows
  std::map<std::string, std::weak_ptr<std::mutex>> claim_locks_;
  // From the agent's last answer: every GPU by UUID, the published devices by name.
  std::map<std::string, PublishedGpu> gpus_;
  std::map<std::string, std::string> devices_;  // device name → GPU or instance UUID
  std::map<std::string, MigPlacement> placements_;
  DriverCounters counters_;
};

}  // namespace fgpu::k8s
