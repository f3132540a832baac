// The node's ResourceSlice: one DRA device per GPU the agent may place slices on, each with the
// attributes a DeviceClass or a claim selects on (CEL over device.attributes["gpu.fgpu.io"]) and
// two consumable capacities, `memory` (bytes) and `compute` (percent), that many claims share
// (allowMultipleAllocations, KEP-5075). docs/kubernetes.md "What the node publishes".
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fgpu::k8s {

inline constexpr const char* kDriverName = "gpu.fgpu.io";

// What the node knows of one GPU (from the agent's GET /v1/gpus).
struct PublishedGpu {
  std::string uuid;  // "GPU-…"
  int index = 0;
  std::string product;
  uint64_t memory_bytes = 0;
  std::string compute_capability;  // "9.0"; empty: unknown (the attribute is left out)
  std::string driver_version;      // "550.54.15"; empty: unknown
  bool mig_capable = false;
  int minor = -1;         // /dev/nvidia<minor>; -1: unknown (the index is used)
  bool healthy = true;    // an unhealthy GPU is not published
  bool shareable = true;  // false: exclusive or fenced by the agent, no new slices (not published)
  // A MIG instance (docs/mig.md): its profile ("3g.40gb") and the GPU it is carved from; empty
  // for a whole GPU.
  std::string mig_profile{};
  std::string parent_uuid{};
  int mig_start = -1;
  // A GPU in MIG mode whose instances are made per claim (the agent's "mig": "dynamic"): it is
  // published as every placement of every profile, each consuming the memory slices it covers
  // from the GPU's counter set (KEP-4815), and its instances are not published themselves.
  bool mig_dynamic = false;
  // Memory slices (bit s: slice s) taken by instances that hold no claim's slice (made outside
  // Kubernetes): their counters are published as 0, so the scheduler places nothing over them.
  uint8_t mig_foreign_slices = 0;

  bool operator==(const PublishedGpu&) const = default;
};

// How a claim may ask for part of a GPU: a slice smaller than the minimums is refused by the
// scheduler already, and every request rounds up to a step.
struct CapacityPolicy {
  uint64_t memory_min_bytes = uint64_t{256} << 20;
  uint64_t memory_step_bytes = uint64_t{1} << 20;
  uint32_t compute_min_percent = 1;

  bool operator==(const CapacityPolicy&) const = default;
};

// "gpu-" (a MIG instance: "mig-") and the UUID's hex in lower case: a DNS label that stays the device's name when
// indices change (a GPU removed, the driver reordering them).
std::string DeviceNameOf(const std::string& uuid);

// NVIDIA's "535.104.05" as the semantic version a DRA `version` attribute must be ("535.104.5"),
// a pre-release suffix kept ("580.00.00-fgpu-sim" → "580.0.0-fgpu-sim"); empty when the text is
// not three (or two) dot-separated numbers.
std::string SemverOf(const std::string& dotted);

// The published memory of a GPU: what NVML reports rounded down to the step, so that the
// capacity, its request policy's default (a whole GPU) and every step line up.
uint64_t PublishedMemory(uint64_t memory_bytes, const CapacityPolicy& policy);

// The ResourceSlice object (resource.k8s.io/v1) for `node`'s pool at `generation`: devices for the
// healthy, shareable GPUs, in index order.
nlohmann::json BuildResourceSlice(const std::string& node, int64_t generation, const std::vector<PublishedGpu>& gpus,
                                  const CapacityPolicy& policy);

// The object's name: "<node>-gpu.fgpu.io", shortened with a hash when the node's name is long;
// with a suffix ("counters-0", "mig-1"), "<node>-gpu.fgpu.io-<suffix>".
std::string ResourceSliceName(const std::string& node, const std::string& suffix = "");

// One placement of a dynamic MIG GPU: a device a claim is allocated, made an instance at prepare.
struct MigPlacement {
  std::string device;       // "<gpu device>-3g-40gb-4"
  std::string parent_uuid;  // the GPU's
  std::string profile;      // "3g.40gb"
  int start = 0;            // first memory slice
  uint64_t memory_bytes = 0;
  bool operator==(const MigPlacement&) const = default;
};

// Every placement of every profile of `gpu` when it is a dynamic MIG GPU of a known model (empty
// otherwise), by profile then start.
std::vector<MigPlacement> PlacementsOf(const PublishedGpu& gpu);

// The name of a dynamic GPU's counter set: "<gpu device>-counters".
std::string CounterSetNameOf(const std::string& gpu_uuid);

// The node's whole pool, every object with `generation` and resourceSliceCount = their number:
// first BuildResourceSlice's (whole GPUs, fixed MIG instances); then, with dynamic MIG GPUs, the
// objects of their counter sets (at most 8 per object) and of their placements (at most 64
// devices per object), named ResourceSliceName(node, "counters-<k>") and (node, "mig-<k>").
std::vector<nlohmann::json> BuildResourcePool(const std::string& node, int64_t generation,
                                              const std::vector<PublishedGpu>& gpus, const CapacityPolicy& policy);

}  // namespace fgpu::k8s
