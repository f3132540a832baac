// The Container Device Interface spec the node plugin writes for a prepared claim: per allocated
// device, the edits that put the container in its slice — the slice's environment (FGPU_SLICE,
// CUDA_VISIBLE_DEVICES=<uuid>, the interposer's LD_PRELOAD: the agent's one list), the slice
// directory read-only with its ledger writable, the interposer and the node's configuration
// read-only, and the GPU's device nodes. The container runtime (containerd, CRI-O) applies it by
// the CDI ids the plugin returns to the kubelet. Paths are the host's, at the same place inside.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace fgpu::k8s {

inline constexpr const char* kCdiVendorClass = "gpu.fgpu.io/slice";

struct CdiMount {
  std::string path;
  bool read_only = true;
  bool operator==(const CdiMount&) const = default;
};

struct CdiDevice {
  std::string name;  // unique on the node: "<claim uid>-<device>"
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<CdiMount> mounts;
  std::vector<std::string> device_nodes;
  bool operator==(const CdiDevice&) const = default;
};

// "gpu.fgpu.io/slice=<name>", what the kubelet passes on to the runtime.
std::string CdiIdOf(const std::string& device_name);

// The spec object (cdiVersion 0.6.0, kind gpu.fgpu.io/slice).
nlohmann::json BuildCdiSpec(const std::vector<CdiDevice>& devices);

// Where a claim's spec lives: "<dir>/gpu.fgpu.io-<claim uid>.json".
std::string CdiSpecPath(const std::string& dir, const std::string& claim_uid);

// Writes `object` to `path` atomically: a temporary file, flushed, renamed over it; `mode` set.
Status WriteJsonAtomically(const std::string& path, const nlohmann::json& object, unsigned mode);

// Writes the spec atomically (a temporary file renamed over it, 0644: the runtime reads it) and
// removes it; removing one that is gone is not an error.
Status WriteCdiSpec(const std::string& path, const nlohmann::json& spec);
Status RemoveCdiSpec(const std::string& path);

// The claim uids of the specs in `dir` that this plugin wrote (for reconciling after a restart).
std::vector<std::string> ListCdiSpecClaims(const std::string& dir);

}  // namespace fgpu::k8s
