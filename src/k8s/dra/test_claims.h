// ResourceClaims as the API server returns them after the scheduler allocated them, for tests.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace fgpu::k8s::testing {

inline nlohmann::json AllocatedClaim(const std::string& ns, const std::string& name, const std::string& uid,
                                     const std::string& pool, const std::string& device, const std::string& memory,
                                     const std::string& compute) {
  using nlohmann::json;
  return json{
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaim"},
      {"metadata", {{"name", name}, {"namespace", ns}, {"uid", uid}}},
      {"spec",
       {{"devices",
         {{"requests",
           json::array({{{"name", "gpu"},
                         {"exactly",
                          {{"deviceClassName", "gpu.fgpu.io"},
                           {"capacity", {{"requests", {{"memory", memory}, {"compute", compute}}}}}}}}})}}}}},
      {"status",
       {{"allocation",
         {{"devices",
           {{"results", json::array({{{"request", "gpu"},
                                      {"driver", "gpu.fgpu.io"},
                                      {"pool", pool},
                                      {"device", device},
                                      {"shareID", "a1b2c"},
                                      {"consumedCapacity", {{"memory", memory}, {"compute", compute}}}}})}}}}},
        {"reservedFor", json::array({{{"resource", "pods"}, {"name", name + "-pod"}, {"uid", uid + "-pod"}}})}}}};
}

}  // namespace fgpu::k8s::testing
