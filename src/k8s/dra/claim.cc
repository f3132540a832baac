#include "k8s/dra/claim.h"

#include <algorithm>

#include "k8s/client/json_fields.h"
#include "k8s/dra/quantity.h"

namespace fgpu::k8s {
namespace {

using nlohmann::json;

Status Invalid(const ClaimRef& ref, const std::string& why) {
  return Status::InvalidArgument("ResourceClaim " + ref.namespace_name + "/" + ref.name + ": " + why);
}

// A config entry applies to a result when it names no requests or names the result's request
// (or its parent request, for a subrequest "parent/sub").
bool Applies(const json& config, const std::string& request) {
  const json* requests = Member(config, "requests");
  if (requests == nullptr || !requests->is_array() || requests->empty()) return true;
  const std::string parent = request.substr(0, request.find('/'));
  return std::any_of(requests->begin(), requests->end(), [&](const json& name) {
    return name.is_string() && (name.get<std::string>() == request || name.get<std::string>() == parent);
  });
}

void Overlay(SliceParameters* into, const SliceParameters& from) {
  if (from.tier) into->tier = from.tier;
  if (from.compute_mode) into->compute_mode = from.compute_mode;
  if (from.tenant) into->tenant = from.tenant;
  if (from.owner_uid) into->owner_uid = from.owner_uid;
  if (from.isolation) into->isolation = from.isolation;
}

// The parameters for `request` from the allocation's configs: the class's first, then the
// claim's, each in order (later entries override earlier ones).
// The fields `parameters` sets that `policy` does not let a claim set, by their JSON names.
std::string ForbiddenForClaims(const SliceParameters& parameters, const ClaimPolicy& policy) {
  const std::pair<const char*, bool> fields[] = {{"tier", parameters.tier.has_value()},
                                                 {"computeMode", parameters.compute_mode.has_value()},
                                                 {"tenant", parameters.tenant.has_value()},
                                                 {"runAsUser", parameters.owner_uid.has_value()},
                                                 {"isolation", parameters.isolation.has_value()}};
  for (const auto& [name, set] : fields) {
    if (set && policy.claim_may_set.count(name) == 0) return name;
  }
  return {};
}

std::string Joined(const std::set<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text.empty() ? "none" : text;
}

Result<SliceParameters> ParametersFor(const json* configs, const std::string& request, const std::string& driver,
                                      const ClaimPolicy& policy) {
  SliceParameters merged;
  if (configs == nullptr || !configs->is_array()) return merged;
  for (const char* source : {"FromClass", "FromClaim"}) {
    for (const json& config : *configs) {
      if (StringMember(config, "source") != source || !Applies(config, request)) continue;
      const json* opaque = Member(config, "opaque");
      if (opaque == nullptr || StringMember(*opaque, "driver") != driver) continue;
      const json* parameters = Member(*opaque, "parameters");
      if (parameters == nullptr) continue;
      Result<SliceParameters> parsed = ParseSliceParameters(*parameters);
      if (!parsed.ok()) return parsed.status();
      if (std::string(source) == "FromClaim") {
        if (const std::string field = ForbiddenForClaims(*parsed, policy); !field.empty()) {
          return Status::PermissionDenied("gpu.fgpu.io parameter " + field +
                                          " may be set by a DeviceClass only on this node (a claim may set: " +
                                          Joined(policy.claim_may_set) + ")");
        }
      }
      Overlay(&merged, *parsed);
    }
  }
  return merged;
}

Result<AllocatedDevice> DeviceOf(const json& result, const ClaimRef& ref) {
  AllocatedDevice device;
  const std::string request = StringMember(result, "request");
  device.request = request.substr(0, request.find('/'));
  device.pool = StringMember(result, "pool");
  device.device = StringMember(result, "device");
  device.share_id = StringMember(result, "shareID");
  if (device.device.empty()) return Invalid(ref, "an allocation result names no device");
  const json* consumed = Member(result, "consumedCapacity");
  if (consumed == nullptr) {
    device.whole = true;  // a device not shared between claims
    return device;
  }
  if (!consumed->is_object()) return Invalid(ref, "device " + device.device + ": consumedCapacity is not an object");
  for (const char* name : {"memory", "compute"}) {
    const json* value = Member(*consumed, name);
    if (value == nullptr || !value->is_string()) {
      return Invalid(ref, std::string("device ") + device.device + " has no consumed " + name);
    }
    Result<uint64_t> amount = ParseQuantity(value->get<std::string>());
    if (!amount.ok()) return Invalid(ref, std::string("consumed ") + name + ": " + amount.status().message());
    if (std::string(name) == "memory") {
      if (*amount == 0) return Invalid(ref, "device " + device.device + " consumed no memory");
      device.memory_bytes = *amount;
    } else {
      if (*amount < 1 || *amount > 100) return Invalid(ref, "consumed compute must be 1..100 percent");
      device.compute_percent = static_cast<uint32_t>(*amount);
    }
  }
  return device;
}

}  // namespace

Result<SliceParameters> ParseSliceParameters(const json& parameters) {
  if (!parameters.is_object()) return Status::InvalidArgument("gpu.fgpu.io parameters must be an object");
  SliceParameters out;
  for (auto field = parameters.begin(); field != parameters.end(); ++field) {
    const std::string& key = field.key();
    const json& value = field.value();
    const auto text = [&]() -> Result<std::string> {
      if (!value.is_string()) return Status::InvalidArgument("gpu.fgpu.io parameter " + key + " must be a string");
      return value.get<std::string>();
    };
    if (key == "apiVersion") {
      if (value != "gpu.fgpu.io/v1alpha1") {
        return Status::InvalidArgument("gpu.fgpu.io parameters: apiVersion must be gpu.fgpu.io/v1alpha1");
      }
    } else if (key == "kind") {
      if (value != "SliceParameters") return Status::InvalidArgument("gpu.fgpu.io parameters: kind must be SliceParameters");
    } else if (key == "tier") {
      Result<std::string> tier = text();
      if (!tier.ok()) return tier.status();
      if (*tier != "batch" && *tier != "standard" && *tier != "latency") {
        return Status::InvalidArgument("gpu.fgpu.io parameter tier must be batch, standard or latency, not '" + *tier + "'");
      }
      out.tier = *tier;
    } else if (key == "computeMode") {
      Result<std::string> mode = text();
      if (!mode.ok()) return mode.status();
      if (*mode != "share" && *mode != "cap") {
        return Status::InvalidArgument("gpu.fgpu.io parameter computeMode must be share or cap, not '" + *mode + "'");
      }
      out.compute_mode = *mode;
    } else if (key == "tenant") {
      Result<std::string> tenant = text();
      if (!tenant.ok()) return tenant.status();
      out.tenant = *tenant;
    } else if (key == "isolation") {
      Result<std::string> isolation = text();
      if (!isolation.ok()) return isolation.status();
      if (*isolation != "trusted" && *isolation != "hard") {
        return Status::InvalidArgument("gpu.fgpu.io parameter isolation must be trusted or hard, not '" + *isolation + "'");
      }
      out.isolation = *isolation;
    } else if (key == "runAsUser") {
      if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() > 0x7fffffff) {
        return Status::InvalidArgument("gpu.fgpu.io parameter runAsUser must be a uid");
      }
      out.owner_uid = value.get<int64_t>();
    } else {
      return Status::InvalidArgument("gpu.fgpu.io parameters: unknown field \"" + key +
                                     "\" (known: apiVersion, kind, tier, computeMode, tenant, runAsUser, isolation)");
    }
  }
  return out;
}

Result<ClaimAllocation> ParseClaimAllocation(const json& claim, const ClaimRef& expected, const std::string& driver,
                                             const std::string& pool, const ClaimPolicy& policy) {
  ClaimAllocation out;
  out.ref = expected;
  const json* metadata = Member(claim, "metadata");
  if (metadata == nullptr) return Invalid(expected, "the object has no metadata");
  if (StringMember(*metadata, "uid") != expected.uid) {
    return Invalid(expected, "the API server's claim has uid " + StringMember(*metadata, "uid") + ", not " +
                                 expected.uid + " (deleted and re-created?)");
  }
  const json* status = Member(claim, "status");
  const json* allocation = status != nullptr ? Member(*status, "allocation") : nullptr;
  const json* devices = allocation != nullptr ? Member(*allocation, "devices") : nullptr;
  const json* results = devices != nullptr ? Member(*devices, "results") : nullptr;
  if (results == nullptr || !results->is_array()) return Invalid(expected, "the claim is not allocated");
  for (const json& result : *results) {
    if (StringMember(result, "driver") != driver) continue;  // another driver's device: not ours to prepare
    Result<AllocatedDevice> device = DeviceOf(result, expected);
    if (!device.ok()) return device.status();
    if (device->pool != pool) {
      return Invalid(expected, "device " + device->device + " is in pool " + device->pool + ", not this node's (" +
                                   pool + ")");
    }
    Result<SliceParameters> parameters = ParametersFor(Member(*devices, "config"), device->request, driver, policy);
    if (!parameters.ok()) {
      return Status::WithCode(parameters.status().code(), "ResourceClaim " + expected.namespace_name + "/" +
                                                              expected.name + ": " + parameters.status().message());
    }
    device->parameters = *parameters;
    out.devices.push_back(std::move(*device));
  }
  if (out.devices.empty()) return Invalid(expected, "no device of driver " + driver + " was allocated to it");
  if (const json* reserved = Member(*status, "reservedFor"); reserved != nullptr && reserved->is_array()) {
    for (const json& consumer : *reserved) {
      if (StringMember(consumer, "resource") == "pods" && StringMember(consumer, "apiGroup").empty()) {
        out.reserved_for.push_back({StringMember(consumer, "name"), StringMember(consumer, "uid")});
      }
    }
  }
  return out;
}

}  // namespace fgpu::k8s
