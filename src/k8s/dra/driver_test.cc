#include "k8s/dra/driver.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <thread>

#include "core/units.h"
#include "k8s/dra/cdi_spec.h"
#include "k8s/dra/agent_test_support.h"
#include "k8s/dra/test_claims.h"

namespace fgpu::k8s {
namespace {

using nlohmann::json;
using testing::AllocatedClaim;
using testing::FakeAgent;

class FakeCluster : public ClusterReader {
 public:
  Result<json> GetClaim(const std::string& ns, const std::string& name) override {
    auto found = claims.find(ns + "/" + name);
    if (found == claims.end()) return Status::NotFound("resourceclaims \"" + name + "\" not found");
    return found->second;
  }
  Result<json> GetPod(const std::string& ns, const std::string& name) override {
    if (pod_error) return Status::Unavailable("API server unreachable");
    auto found = pods.find(ns + "/" + name);
    if (found == pods.end()) return Status::NotFound("not found");
    return found->second;
  }
  Result<std::vector<json>> ListClaims() override {
    std::vector<json> out;
    for (const auto& [key, claim] : claims) out.push_back(claim);
    return out;
  }
  void Add(const json& claim) {
    claims[claim["metadata"]["namespace"].get<std::string>() + "/" + claim["metadata"]["name"].get<std::string>()] = claim;
  }
  std::map<std::string, json> claims;
  std::map<std::string, json> pods;
  bool pod_error = false;
};

class DraDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cdi_ = std::filesystem::temp_directory_path() / ("fgpu-dra-" + std::to_string(::getpid()));
    std::filesystem::create_directories(cdi_);
    options_.node = "node-a";
    options_.cdi_dir = cdi_.string();
    driver_ = std::make_unique<DraDriver>(options_, &agent_, &cluster_);
  }
  void TearDown() override { std::filesystem::remove_all(cdi_); }

  ClaimRef Add(const std::string& name, const std::string& uid, const std::string& memory = "20Gi",
               const std::string& compute = "30", const std::string& device = "gpu-aaaa") {
    cluster_.Add(AllocatedClaim("team-a", name, uid, "node-a", device, memory, compute));
    return {"team-a", name, uid};
  }

  std::filesystem::path cdi_;
  DraOptions options_;
  FakeAgent agent_;
  FakeCluster cluster_;
  std::unique_ptr<DraDriver> driver_;
};

TEST_F(DraDriverTest, PrepareMakesASliceOfTheConsumedCapacityAndItsCdiSpec) {
  const ClaimRef claim = Add("train", "uid-1");
  PrepareOutcome outcome = driver_->Prepare(claim);
  ASSERT_EQ(outcome.error, "");
  ASSERT_EQ(outcome.devices.size(), 1u);
  EXPECT_EQ(outcome.devices[0].device, "gpu-aaaa");
  EXPECT_EQ(outcome.devices[0].pool, "node-a");
  EXPECT_EQ(outcome.devices[0].request, "gpu");
  EXPECT_EQ(outcome.devices[0].cdi_id, "gpu.fgpu.io/slice=uid-1-gpu-aaaa-a1b2c");
  ASSERT_EQ(agent_.orders.size(), 1u);
  const SliceOrder& order = agent_.orders[0];
  EXPECT_EQ(order.memory_bytes, 20 * kGiB);
  EXPECT_EQ(order.compute_percent, 30u);
  EXPECT_EQ(order.gpu_uuid, "GPU-aaaa");
  EXPECT_EQ(order.key, "k8s/uid-1/gpu-aaaa/a1b2c");
  EXPECT_EQ(order.tenant, "team-a");
  EXPECT_EQ(order.namespace_name, "team-a");
  EXPECT_EQ(order.claim, "train");
  EXPECT_EQ(order.pod, "train-pod");
  EXPECT_EQ(order.pod_uid, "uid-1-pod");
  EXPECT_EQ(order.owner_uid, 0);
  EXPECT_TRUE(std::filesystem::exists(CdiSpecPath(cdi_.string(), "uid-1")));
}

// A DeviceClass for whole MIG instances sets isolation hard: the agent is asked for the whole
// instance; a claim that did not consume all of it, or a device that is not an instance, is
// refused before anything is made.
TEST_F(DraDriverTest, HardIsolationTakesAWholeMigInstanceOnly) {
  PublishedGpu instance = testing::TestGpu("MIG-bbbb", 1, uint64_t{40} << 30);
  instance.parent_uuid = "GPU-cccc";
  instance.mig_profile = "3g.40gb";
  agent_.gpus.push_back(instance);
  const auto hard = [&](const std::string& name, const std::string& compute, const std::string& device) {
    json claim = testing::AllocatedClaim("team-a", name, "uid-" + name, "node-a", device, "40Gi", compute);
    claim["status"]["allocation"]["devices"]["config"] = json::array(
        {{{"source", "FromClass"},
          {"opaque", {{"driver", "gpu.fgpu.io"}, {"parameters", {{"isolation", "hard"}}}}}}});
    cluster_.Add(claim);
    return ClaimRef{"team-a", name, "uid-" + name};
  };
  PrepareOutcome whole = driver_->Prepare(hard("whole", "100", "mig-bbbb"));
  ASSERT_EQ(whole.error, "");
  ASSERT_EQ(agent_.orders.size(), 1u);
  EXPECT_EQ(agent_.orders[0].gpu_uuid, "MIG-bbbb");
  EXPECT_EQ(agent_.orders[0].isolation, std::optional<std::string>("hard"));
  PrepareOutcome part = driver_->Prepare(hard("part", "50", "mig-bbbb"));
  EXPECT_NE(part.error.find("must consume all of its compute"), std::string::npos) << part.error;
  PrepareOutcome gpu = driver_->Prepare(hard("gpu", "100", "gpu-aaaa"));
  EXPECT_NE(gpu.error.find("is not a MIG instance"), std::string::npos) << gpu.error;
  EXPECT_EQ(agent_.orders.size(), 1u) << "refused claims made nothing";
}

// A dynamic MIG GPU's placement device (KEP-4815): allocated whole, without consumedCapacity; the
// agent is asked for the instance at that placement. A shared device allocated that way, or the
// dynamic GPU's own UUID, is refused before anything is made.
TEST_F(DraDriverTest, ADynamicMigPlacementAsksTheAgentForThatInstanceWhole) {
  PublishedGpu dynamic = testing::TestGpu("GPU-00000000-0000-0000-0000-0000000000a1", 1, 85520809984);
  dynamic.product = "NVIDIA H100 80GB HBM3";
  dynamic.mig_dynamic = true;
  dynamic.minor = 7;
  agent_.gpus.push_back(dynamic);
  const auto whole = [&](const std::string& name, const std::string& device) {
    json claim = testing::AllocatedClaim("team-a", name, "uid-" + name, "node-a", device, "1Gi", "100");
    claim["status"]["allocation"]["devices"]["results"][0].erase("consumedCapacity");
    cluster_.Add(claim);
    return ClaimRef{"team-a", name, "uid-" + name};
  };
  const std::string device = "gpu-00000000-0000-0000-0000-0000000000a1-3g-40gb-4";
  PrepareOutcome made = driver_->Prepare(whole("three", device));
  ASSERT_EQ(made.error, "");
  ASSERT_EQ(agent_.orders.size(), 1u);
  const SliceOrder& order = agent_.orders[0];
  EXPECT_EQ(order.gpu_uuid, dynamic.uuid);
  EXPECT_EQ(order.isolation, std::optional<std::string>("hard"));
  EXPECT_EQ(order.mig_profile, std::optional<std::string>("3g.40gb"));
  EXPECT_EQ(order.mig_start, std::optional<int>(4));
  EXPECT_EQ(order.key, "k8s/uid-three/" + device + "/a1b2c");
  EXPECT_EQ(made.devices[0].device, device);
  PrepareOutcome shared = driver_->Prepare(whole("shared", "gpu-aaaa"));
  EXPECT_NE(shared.error.find("without consumedCapacity"), std::string::npos) << shared.error;
  PrepareOutcome parent = driver_->Prepare(whole("parent", "gpu-00000000-0000-0000-0000-0000000000a1"));
  EXPECT_NE(parent.error.find("is not a GPU of this node"), std::string::npos) << parent.error;
  PrepareOutcome nowhere = driver_->Prepare(whole("nowhere", "gpu-00000000-0000-0000-0000-0000000000a1-3g-40gb-2"));
  EXPECT_NE(nowhere.error.find("is not a GPU of this node"), std::string::npos) << nowhere.error;
  EXPECT_EQ(agent_.orders.size(), 1u) << "refused claims made nothing";
}

TEST_F(DraDriverTest, PrepareIsIdempotentAcrossKubeletRetries) {
  const ClaimRef claim = Add("train", "uid-1");
  const PrepareOutcome first = driver_->Prepare(claim);
  const PrepareOutcome second = driver_->Prepare(claim);
  ASSERT_EQ(second.error, "");
  EXPECT_EQ(first.devices, second.devices);
  EXPECT_EQ(agent_.slices.size(), 1u);
}

TEST_F(DraDriverTest, ThePodsRunAsUserOwnsTheLedger) {
  const ClaimRef claim = Add("train", "uid-1");
  cluster_.pods["team-a/train-pod"] = json{{"spec", {{"securityContext", {{"runAsUser", 1000}}}}}};
  ASSERT_EQ(driver_->Prepare(claim).error, "");
  EXPECT_EQ(agent_.orders.back().owner_uid, 1000);
}

TEST_F(DraDriverTest, AnOvercommittedClaimFailsWithTheAgentsReasonAndLeavesNoSpec) {
  agent_.room = 30 * kGiB;
  ASSERT_EQ(driver_->Prepare(Add("one", "uid-1")).error, "");
  const PrepareOutcome outcome = driver_->Prepare(Add("two", "uid-2"));
  EXPECT_NE(outcome.error.find("has 4 GiB free"), std::string::npos) << outcome.error;
  EXPECT_NE(outcome.error.find("team-a/two"), std::string::npos) << outcome.error;
  EXPECT_TRUE(outcome.devices.empty());
  EXPECT_FALSE(std::filesystem::exists(CdiSpecPath(cdi_.string(), "uid-2")));
  EXPECT_EQ(driver_->Counters().prepare_errors, 1u);
}

TEST_F(DraDriverTest, BadClaimsChangeNothing) {
  // An unknown device, another driver's claim, a claim that is not there, another uid.
  const ClaimRef unknown = Add("unknown", "uid-1", "20Gi", "30", "gpu-ffff");
  EXPECT_NE(driver_->Prepare(unknown).error.find("not a GPU of this node"), std::string::npos);
  json other = AllocatedClaim("team-a", "other", "uid-2", "node-a", "gpu-0", "1", "1");
  other["status"]["allocation"]["devices"]["results"][0]["driver"] = "gpu.nvidia.com";
  cluster_.Add(other);
  EXPECT_NE(driver_->Prepare({"team-a", "other", "uid-2"}).error.find("no device of driver"), std::string::npos);
  EXPECT_NE(driver_->Prepare({"team-a", "gone", "uid-3"}).error.find("not found"), std::string::npos);
  Add("train", "uid-4");
  EXPECT_NE(driver_->Prepare({"team-a", "train", "uid-5"}).error.find("re-created"), std::string::npos);
  EXPECT_TRUE(agent_.orders.empty());
  EXPECT_TRUE(ListCdiSpecClaims(cdi_.string()).empty());
}

TEST_F(DraDriverTest, AnInterposerThePluginCannotSeeFailsClosed) {
  agent_.preload = "/nonexistent/libfgpu.so";
  PrepareOutcome outcome = driver_->Prepare(Add("train", "uid-1"));
  EXPECT_NE(outcome.error.find("would run uncapped"), std::string::npos) << outcome.error;
  EXPECT_FALSE(std::filesystem::exists(CdiSpecPath(cdi_.string(), "uid-1")));
  agent_.preload = "";
  outcome = driver_->Prepare(Add("other", "uid-2"));
  EXPECT_NE(outcome.error.find("names no interposer"), std::string::npos) << outcome.error;
}

TEST_F(DraDriverTest, APodThatCannotBeReadFailsRatherThanPickingAnotherOwner) {
  const ClaimRef claim = Add("train", "uid-1");
  cluster_.pod_error = true;
  EXPECT_NE(driver_->Prepare(claim).error.find("for its runAsUser"), std::string::npos);
  EXPECT_TRUE(agent_.orders.empty());
}

TEST_F(DraDriverTest, LongRequestNamesStillMakeKeysTheAgentTakes) {
  AllocatedDevice device;
  device.device = "gpu-8f2c1d2e-0000-1111-2222-333344445555";
  device.request = std::string(63, 'r');
  const std::string key = DraDriver::SliceKeyOf("0b5e1c7a-1111-2222-3333-444455556666", device);
  EXPECT_LE(key.size(), 128u);
  EXPECT_EQ(key.rfind(DraDriver::KeyPrefixOf("0b5e1c7a-1111-2222-3333-444455556666"), 0), 0u);
  device.request = "gpu";
  EXPECT_EQ(DraDriver::SliceKeyOf("u", device), "k8s/u/gpu-8f2c1d2e-0000-1111-2222-333344445555/gpu");
}

TEST_F(DraDriverTest, UnprepareReleasesTheSliceAndSpecAndIsIdempotent) {
  const ClaimRef claim = Add("train", "uid-1");
  ASSERT_EQ(driver_->Prepare(claim).error, "");
  EXPECT_TRUE(driver_->Unprepare(claim).ok());
  EXPECT_TRUE(agent_.slices.empty());
  EXPECT_FALSE(std::filesystem::exists(CdiSpecPath(cdi_.string(), "uid-1")));
  EXPECT_TRUE(driver_->Unprepare(claim).ok());
  EXPECT_TRUE(driver_->Unprepare({"team-a", "never", "uid-9"}).ok());
}

TEST_F(DraDriverTest, AnAgentThatIsDownFailsPrepareAndUnprepareForTheKubeletToRetry) {
  const ClaimRef claim = Add("train", "uid-1");
  ASSERT_EQ(driver_->Prepare(claim).error, "");
  agent_.down = true;
  EXPECT_NE(driver_->Prepare(Add("two", "uid-2")).error.find("agent down"), std::string::npos);
  EXPECT_FALSE(driver_->Unprepare(claim).ok());
  agent_.down = false;
  EXPECT_TRUE(driver_->Unprepare(claim).ok());
  EXPECT_TRUE(agent_.slices.empty());
}

TEST_F(DraDriverTest, ReconcileReleasesSlicesOfClaimsThatAreGoneAndKeepsTheRest) {
  const ClaimRef kept = Add("kept", "uid-1");
  const ClaimRef gone = Add("gone", "uid-2");
  const ClaimRef moved = Add("moved", "uid-3");
  for (const ClaimRef& claim : {kept, gone, moved}) ASSERT_EQ(driver_->Prepare(claim).error, "");
  cluster_.claims.erase("team-a/gone");
  cluster_.claims["team-a/moved"]["status"].erase("allocation");  // deallocated
  // A slice of someone else (no k8s key) and a stray spec with no slice.
  agent_.slices["s99"] = GrantedSlice{"s99", "", "GPU-aaaa", "/x", {}};
  ASSERT_TRUE(WriteCdiSpec(CdiSpecPath(cdi_.string(), "uid-stray"), BuildCdiSpec({})).ok());

  const ReconcileReport report = driver_->Reconcile();
  EXPECT_TRUE(report.errors.empty());
  EXPECT_EQ(report.slices_kept, 1);
  EXPECT_EQ(report.slices_released, 2);
  EXPECT_EQ(report.specs_removed, 1);
  EXPECT_EQ(agent_.slices.size(), 2u);  // kept's and s99
  EXPECT_TRUE(agent_.slices.count("s99"));
  EXPECT_EQ(ListCdiSpecClaims(cdi_.string()), std::vector<std::string>{"uid-1"});
  EXPECT_EQ(driver_->Reconcile().slices_released, 0);
}

// The kubelet may call for one claim from several threads (a retry beside a slow first try) while
// other claims come and go and a reconcile runs: one slice per claim, nothing of a live claim lost.
TEST_F(DraDriverTest, ConcurrentCallsKeepOneSlicePerClaim) {
  std::vector<ClaimRef> claims;
  for (int i = 0; i < 4; ++i) claims.push_back(Add("c" + std::to_string(i), "uid-" + std::to_string(i), "1Gi", "1"));
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        const ClaimRef& claim = claims[static_cast<std::size_t>((t + round) % 4)];
        EXPECT_EQ(driver_->Prepare(claim).error, "");
        if (t == 0 && round % 5 == 0) driver_->Reconcile();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(agent_.slices.size(), 4u);
  for (const ClaimRef& claim : claims) EXPECT_TRUE(driver_->Unprepare(claim).ok());
  EXPECT_TRUE(agent_.slices.empty());
  EXPECT_EQ(driver_->Counters().prepares, 160u);
}

TEST_F(DraDriverTest, OddlyShapedObjectsFromTheApiServerAreIgnoredNotThrownOn) {
  const ClaimRef claim = Add("train", "uid-1");
  cluster_.pods["team-a/train-pod"] =
      json{{"spec", {{"securityContext", "root"}, {"containers", json::array({5, {{"securityContext", {{"runAsUser", "0"}}}}})}}}};
  ASSERT_EQ(driver_->Prepare(claim).error, "");
  EXPECT_EQ(agent_.orders.back().owner_uid, 0);  // none readable: the default
  cluster_.claims["team-a/odd"] = json{{"metadata", 5}};
  cluster_.claims["team-a/odd2"] = json{{"metadata", {{"namespace", 7}, {"uid", json::array()}}}};
  cluster_.claims["team-a/odd3"] = json::array();
  const ReconcileReport report = driver_->Reconcile();
  EXPECT_TRUE(report.errors.empty());
  EXPECT_EQ(report.slices_kept, 1);
}

TEST_F(DraDriverTest, ReconcileWithTheAgentDownChangesNothing) {
  ASSERT_EQ(driver_->Prepare(Add("kept", "uid-1")).error, "");
  cluster_.claims.clear();
  agent_.down = true;
  const ReconcileReport report = driver_->Reconcile();
  EXPECT_EQ(report.errors.size(), 1u);
  agent_.down = false;
  EXPECT_EQ(agent_.slices.size(), 1u);
}

}  // namespace
}  // namespace fgpu::k8s
