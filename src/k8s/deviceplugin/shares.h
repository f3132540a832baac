// The classic device plugin's model for clusters without DRA: each GPU the agent shares is
// advertised as `shares_per_gpu` devices of one extended resource (fgpu.io/gpu by default), so a
// pod asks `resources.limits: {fgpu.io/gpu: 30}` for 30 % of one GPU — 30 % of its memory and of
// its compute. The size comes from the count alone: Allocate receives only device ids, and the
// ids are all it needs, so no pod has to be found and no annotation can be matched to the wrong
// pod. docs/kubernetes.md "The device-plugin path".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "k8s/dra/resource_slice.h"

namespace fgpu::k8s {

struct ShareDevice {
  std::string id;  // "<gpu uuid>-s<k>", at most 63 characters
  bool healthy = true;
  int numa_node = -1;  // -1: unknown (no topology sent)
  bool operator==(const ShareDevice&) const = default;
};

// The shares of one container's allocation, all on one GPU.
struct ShareGrant {
  std::string gpu_uuid;
  std::vector<int> shares;  // sorted share numbers
  uint64_t memory_bytes = 0;
  uint32_t compute_percent = 0;
};

// Which of the agent's GPUs a plan advertises: every one (the `none` MIG strategy: a MIG
// instance is shared like a GPU), the whole GPUs only, or the MIG instances of one profile (the
// `mixed` strategy: fgpu.io/gpu for whole GPUs and one fgpu.io/mig-<profile> per profile).
struct ShareScope {
  enum class Kind : uint8_t { kEveryGpu, kWholeGpus, kMigProfile };
  Kind kind = Kind::kEveryGpu;
  std::string mig_profile{};

  bool Covers(const PublishedGpu& gpu) const;
};

// "fgpu.io/mig-3g.40gb" ("+me" becomes ".me": '+' is not allowed in a resource name).
std::string MigResourceName(const std::string& profile);

class SharePlan {
 public:
  // `shares_per_gpu` in 1..100 (100: one share is 1 % of a GPU).
  SharePlan(int shares_per_gpu, CapacityPolicy policy, ShareScope scope = {});

  // The devices ListAndWatch sends: every share of every GPU the agent lists; the shares of an
  // unhealthy or exclusive GPU are sent Unhealthy (the kubelet then stops handing them out but
  // keeps counting the containers that hold them).
  std::vector<ShareDevice> Devices(const std::vector<PublishedGpu>& gpus) const;

  // GetPreferredAllocation: `size` ids from `available` on one GPU, the must-include ones' GPU if
  // any, else the GPU with the fewest free shares that still fits (best fit: whole free GPUs stay
  // whole for large requests). Empty when no single GPU has that many free shares.
  std::vector<std::string> Prefer(const std::vector<std::string>& available,
                                  const std::vector<std::string>& must_include, int size) const;

  // Allocate: the grant the ids make. InvalidArgument when an id is malformed, names a GPU the
  // agent does not list, repeats, or the ids span several GPUs (a slice lives on one GPU).
  Result<ShareGrant> Grant(const std::vector<std::string>& ids, const std::vector<PublishedGpu>& gpus) const;

  static std::string IdOf(const std::string& gpu_uuid, int share);
  // (uuid, share) of an id IdOf made; nullopt otherwise.
  static std::optional<std::pair<std::string, int>> Parse(const std::string& id);

 private:
  int shares_;
  CapacityPolicy policy_;
  ShareScope scope_;
};

}  // namespace fgpu::k8s
