// The kubelet's DRA calls, strictly: NodePrepareResources / NodeUnprepareResources on a
// driver's endpoint over v1 or v1beta1, and the kubelet's checks of the answer.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace fgpu::k8s::test {

struct ClaimRef {
  std::string ns, name, uid;
};

// NAMESPACE/NAME/UID
Result<ClaimRef> ParseClaim(const std::string& text);

struct DraCall {
  // {"claims":{"<uid>":{"devices":[{"request_names":[..],"pool_name":..,"device_name":..,
  // "cdi_device_ids":[..]}],"error":""}}}; unprepare: {"claims":{"<uid>":{"error":""}}}
  nlohmann::json response;
  // What the kubelet would reject in the response (a requested claim without an entry, a device
  // without pool or name); OK when none.
  Status problem;
};

enum class DraApi { kV1, kV1beta1 };
Result<DraApi> ParseDraApi(const std::string& text);

// An error Status when the RPC itself failed (the kubelet then ignores the response).
Result<DraCall> NodePrepareResources(const std::string& endpoint, DraApi api, const std::vector<ClaimRef>& claims,
                                     std::chrono::milliseconds timeout);
Result<DraCall> NodeUnprepareResources(const std::string& endpoint, DraApi api, const std::vector<ClaimRef>& claims,
                                       std::chrono::milliseconds timeout);

}  // namespace fgpu::k8s::test
