#include "k8s/dra/claim.h"

#include <gtest/gtest.h>

#include "k8s/dra/test_claims.h"

namespace fgpu::k8s {
namespace {

using nlohmann::json;
using testing::AllocatedClaim;

const ClaimRef kRef{"team-a", "train", "uid-1"};

json Claim() { return AllocatedClaim("team-a", "train", "uid-1", "node-a", "gpu-aaaa", "20Gi", "30"); }

TEST(ClaimTest, ReadsTheConsumedCapacityOfOurDevices) {
  Result<ClaimAllocation> claim = ParseClaimAllocation(Claim(), kRef, "gpu.fgpu.io", "node-a");
  ASSERT_TRUE(claim.ok()) << claim.status().message();
  ASSERT_EQ(claim->devices.size(), 1u);
  const AllocatedDevice& device = claim->devices[0];
  EXPECT_EQ(device.request, "gpu");
  EXPECT_EQ(device.device, "gpu-aaaa");
  EXPECT_EQ(device.pool, "node-a");
  EXPECT_EQ(device.share_id, "a1b2c");
  EXPECT_EQ(device.memory_bytes, uint64_t{20} << 30);
  EXPECT_EQ(device.compute_percent, 30u);
  ASSERT_EQ(claim->reserved_for.size(), 1u);
  EXPECT_EQ(claim->reserved_for[0].name, "train-pod");
}

TEST(ClaimTest, OtherDriversDevicesAreLeftToThem) {
  json claim = Claim();
  json other = claim["status"]["allocation"]["devices"]["results"][0];
  other["driver"] = "gpu.nvidia.com";
  other["device"] = "gpu-0";
  claim["status"]["allocation"]["devices"]["results"].push_back(other);
  Result<ClaimAllocation> parsed = ParseClaimAllocation(claim, kRef, "gpu.fgpu.io", "node-a");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->devices.size(), 1u);

  claim["status"]["allocation"]["devices"]["results"].erase(0);
  Result<ClaimAllocation> none = ParseClaimAllocation(claim, kRef, "gpu.fgpu.io", "node-a");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no device of driver gpu.fgpu.io"), std::string::npos);
}

TEST(ClaimTest, EveryMalformedClaimIsRefusedWithItsReason) {
  const auto refused = [](json claim, const std::string& reason) {
    Result<ClaimAllocation> parsed = ParseClaimAllocation(claim, kRef, "gpu.fgpu.io", "node-a");
    ASSERT_FALSE(parsed.ok()) << claim.dump();
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status().message().find(reason), std::string::npos) << parsed.status().message();
  };
  json claim = Claim();
  claim["metadata"]["uid"] = "uid-2";
  refused(claim, "deleted and re-created");
  claim = Claim();
  claim["status"].erase("allocation");
  refused(claim, "not allocated");
  claim = Claim();
  claim["status"]["allocation"]["devices"]["results"][0]["pool"] = "node-b";
  refused(claim, "not this node's");
  claim = Claim();
  claim["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"] = "all";
  refused(claim, "consumedCapacity is not an object");
  claim = Claim();
  claim["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"]["memory"] = "20GB";
  refused(claim, "suffix");
  claim = Claim();
  claim["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"]["compute"] = "150";
  refused(claim, "1..100");
  claim = Claim();
  claim["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"]["memory"] = "0";
  refused(claim, "no memory");
  claim = Claim();
  claim["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"].erase("compute");
  refused(claim, "no consumed compute");
  // Without consumedCapacity the device is the claim's whole (the driver accepts that for a
  // dynamic MIG placement only).
  claim = Claim();
  claim["status"]["allocation"]["devices"]["results"][0].erase("consumedCapacity");
  Result<ClaimAllocation> whole = ParseClaimAllocation(claim, kRef, "gpu.fgpu.io", "node-a");
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_TRUE(whole->devices[0].whole);
  EXPECT_EQ(whole->devices[0].memory_bytes, 0u);
  refused(json::array(), "no metadata");
  refused(json("text"), "no metadata");
}

json Config(const char* source, json parameters, json requests = json::array()) {
  return json{{"source", source},
              {"requests", std::move(requests)},
              {"opaque", {{"driver", "gpu.fgpu.io"}, {"parameters", std::move(parameters)}}}};
}

TEST(ClaimTest, TheClaimsParametersOverrideItsClasssFieldByField) {
  json claim = Claim();
  claim["status"]["allocation"]["devices"]["config"] = json::array({
      Config("FromClaim", {{"tier", "latency"}}),
      Config("FromClass", {{"apiVersion", "gpu.fgpu.io/v1alpha1"}, {"kind", "SliceParameters"}, {"tier", "batch"},
                           {"computeMode", "cap"}}),
      Config("FromClaim", {{"tenant", "ml"}}, json::array({"other-request"})),
      {{"source", "FromClaim"}, {"opaque", {{"driver", "gpu.nvidia.com"}, {"parameters", {{"sharing", "x"}}}}}},
  });
  ClaimPolicy anything;
  anything.claim_may_set = {"tier", "computeMode", "tenant", "runAsUser"};
  Result<ClaimAllocation> parsed = ParseClaimAllocation(claim, kRef, "gpu.fgpu.io", "node-a", anything);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  const SliceParameters& parameters = parsed->devices[0].parameters;
  EXPECT_EQ(parameters.tier, "latency");
  EXPECT_EQ(parameters.compute_mode, "cap");
  EXPECT_FALSE(parameters.tenant.has_value());  // for another request
}

TEST(ClaimTest, AClaimSetsOnlyWhatTheNodeLetsClaimsSet) {
  json claim = Claim();
  claim["status"]["allocation"]["devices"]["config"] =
      json::array({Config("FromClass", {{"tier", "latency"}, {"tenant", "ml"}, {"runAsUser", 1000}}),
                   Config("FromClaim", {{"computeMode", "cap"}})});
  Result<ClaimAllocation> parsed = ParseClaimAllocation(claim, kRef, "gpu.fgpu.io", "node-a");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->devices[0].parameters.tier, "latency");
  EXPECT_EQ(parsed->devices[0].parameters.compute_mode, "cap");
  for (const json& own : {json{{"tier", "latency"}}, json{{"tenant", "other-team"}}, json{{"runAsUser", 0}}}) {
    claim["status"]["allocation"]["devices"]["config"] = json::array({Config("FromClaim", own)});
    Result<ClaimAllocation> refused = ParseClaimAllocation(claim, kRef, "gpu.fgpu.io", "node-a");
    ASSERT_FALSE(refused.ok()) << own.dump();
    EXPECT_EQ(refused.status().code(), StatusCode::kPermissionDenied);
    EXPECT_NE(refused.status().message().find("may be set by a DeviceClass only"), std::string::npos)
        << refused.status().message();
  }
}

TEST(ClaimTest, ParametersAreStrict) {
  EXPECT_TRUE(ParseSliceParameters(json{{"tier", "standard"}, {"runAsUser", 1000}}).ok());
  for (const json& bad : {json{{"tier", "gold"}}, json{{"tier", 3}}, json{{"computeMode", "mps"}},
                          json{{"runAsUser", -1}}, json{{"runAsUser", "root"}}, json{{"memory", "1Gi"}},
                          json{{"apiVersion", "v1"}}, json{{"kind", "Other"}}, json::array()}) {
    EXPECT_FALSE(ParseSliceParameters(bad).ok()) << bad.dump();
  }
  EXPECT_NE(ParseSliceParameters(json{{"memory", "1Gi"}}).status().message().find("unknown field \"memory\""),
            std::string::npos);
  json claim = Claim();
  claim["status"]["allocation"]["devices"]["config"] = json::array({Config("FromClaim", {{"tier", "gold"}})});
  EXPECT_FALSE(ParseClaimAllocation(claim, kRef, "gpu.fgpu.io", "node-a").ok());
}

TEST(ClaimTest, ASubrequestsResultCountsAsItsRequest) {
  json claim = Claim();
  claim["status"]["allocation"]["devices"]["results"][0]["request"] = "gpu/small";
  claim["status"]["allocation"]["devices"]["config"] =
      json::array({Config("FromClass", {{"tier", "latency"}}, json::array({"gpu"}))});
  Result<ClaimAllocation> parsed = ParseClaimAllocation(claim, kRef, "gpu.fgpu.io", "node-a");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->devices[0].request, "gpu");
  EXPECT_EQ(parsed->devices[0].parameters.tier, "latency");
}

}  // namespace
}  // namespace fgpu::k8s
