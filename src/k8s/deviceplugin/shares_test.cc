#include "k8s/deviceplugin/shares.h"
#include "core/units.h"

#include <gtest/gtest.h>

namespace fgpu::k8s {
namespace {

PublishedGpu Gpu(const std::string& uuid, int index) {
  PublishedGpu gpu;
  gpu.uuid = uuid;
  gpu.index = index;
  gpu.memory_bytes = 80 * kGiB;
  return gpu;
}

std::vector<std::string> Ids(const std::string& uuid, int first, int count) {
  std::vector<std::string> ids;
  for (int i = first; i < first + count; ++i) ids.push_back(SharePlan::IdOf(uuid, i));
  return ids;
}

// The mixed MIG strategy: fgpu.io/gpu covers whole GPUs, each profile's resource its instances,
// one device each; an id outside a plan's scope is refused.
TEST(SharePlanTest, ScopesSplitWholeGpusFromEachMigProfile) {
  PublishedGpu three = Gpu("MIG-3", 1);
  three.parent_uuid = "GPU-b";
  three.mig_profile = "3g.40gb";
  three.memory_bytes = 40 * kGiB;
  PublishedGpu two = Gpu("MIG-2", 1);
  two.parent_uuid = "GPU-b";
  two.mig_profile = "2g.20gb";
  const std::vector<PublishedGpu> gpus = {Gpu("GPU-a", 0), three, two};
  EXPECT_EQ(SharePlan(100, {}).Devices(gpus).size(), 300u) << "none: instances are shared like GPUs";
  const SharePlan whole(100, {}, {ShareScope::Kind::kWholeGpus, ""});
  EXPECT_EQ(whole.Devices(gpus).size(), 100u);
  const SharePlan threes(1, {}, {ShareScope::Kind::kMigProfile, "3g.40gb"});
  const auto devices = threes.Devices(gpus);
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].id, "MIG-3-s0");
  Result<ShareGrant> grant = threes.Grant({"MIG-3-s0"}, gpus);
  ASSERT_TRUE(grant.ok()) << grant.status().message();
  EXPECT_EQ(grant->memory_bytes, 40 * kGiB);
  EXPECT_EQ(grant->compute_percent, 100u);
  EXPECT_NE(threes.Grant({"MIG-2-s0"}, gpus).status().message().find("not a device of this resource"), std::string::npos);
  EXPECT_FALSE(whole.Grant({"MIG-3-s0"}, gpus).ok());
  EXPECT_EQ(MigResourceName("3g.40gb"), "fgpu.io/mig-3g.40gb");
  EXPECT_EQ(MigResourceName("1g.10gb+me"), "fgpu.io/mig-1g.10gb.me");
}

TEST(SharePlanTest, EveryGpuIsAdvertisedAsItsShares) {
  SharePlan plan(100, {});
  PublishedGpu exclusive = Gpu("GPU-b", 1);
  exclusive.shareable = false;
  const auto devices = plan.Devices({Gpu("GPU-a", 0), exclusive});
  ASSERT_EQ(devices.size(), 200u);
  EXPECT_EQ(devices[0].id, "GPU-a-s0");
  EXPECT_TRUE(devices[0].healthy);
  EXPECT_FALSE(devices[150].healthy);
  const std::string longest = SharePlan::IdOf("GPU-8f2c1d2e-0000-1111-2222-333344445555", 99);
  EXPECT_LE(longest.size(), 63u);
  EXPECT_EQ(SharePlan::Parse(longest)->second, 99);
  EXPECT_EQ(SharePlan::Parse(longest)->first, "GPU-8f2c1d2e-0000-1111-2222-333344445555");
  for (const char* bad : {"GPU-a", "GPU-a-s", "GPU-a-sx", "GPU-a-s01", "-s1", "GPU-a-s-1"}) {
    EXPECT_FALSE(SharePlan::Parse(bad).has_value()) << bad;
  }
}

TEST(SharePlanTest, AGrantIsTheSharesFractionOfMemoryAndCompute) {
  SharePlan plan(100, {});
  Result<ShareGrant> grant = plan.Grant(Ids("GPU-a", 10, 30), {Gpu("GPU-a", 0)});
  ASSERT_TRUE(grant.ok()) << grant.status().message();
  EXPECT_EQ(grant->gpu_uuid, "GPU-a");
  EXPECT_EQ(grant->compute_percent, 30u);
  EXPECT_LE(grant->memory_bytes, 24 * kGiB);
  EXPECT_EQ(grant->memory_bytes, 24 * kGiB);
  EXPECT_EQ(grant->memory_bytes % (uint64_t{1} << 20), 0u);
  // Every share of the GPU together never exceeds it.
  EXPECT_LE(plan.Grant(Ids("GPU-a", 0, 100), {Gpu("GPU-a", 0)})->memory_bytes, 80 * kGiB);
  SharePlan quarters(4, {});
  EXPECT_EQ(quarters.Grant(Ids("GPU-a", 0, 1), {Gpu("GPU-a", 0)})->compute_percent, 25u);
  EXPECT_EQ(quarters.Grant(Ids("GPU-a", 0, 1), {Gpu("GPU-a", 0)})->memory_bytes, 20 * kGiB);
  SharePlan thirds(3, {});  // never past 100 % together
  EXPECT_EQ(thirds.Grant(Ids("GPU-a", 0, 1), {Gpu("GPU-a", 0)})->compute_percent, 33u);
}

TEST(SharePlanTest, GrantsThatNoSliceCouldHoldAreRefused) {
  SharePlan plan(100, {});
  const std::vector<PublishedGpu> gpus = {Gpu("GPU-a", 0), Gpu("GPU-b", 1)};
  const auto refused = [&](std::vector<std::string> ids, const std::string& reason) {
    Result<ShareGrant> grant = plan.Grant(ids, gpus);
    ASSERT_FALSE(grant.ok());
    EXPECT_NE(grant.status().message().find(reason), std::string::npos) << grant.status().message();
  };
  refused({"GPU-a-s1", "GPU-b-s2"}, "must come from one GPU");
  refused({"GPU-a-s1", "GPU-a-s1"}, "listed twice");
  refused({"GPU-c-s1"}, "not a GPU of this node");
  refused({"GPU-a-s100"}, "not a share");
  refused({"junk"}, "not a share");
  refused({}, "no fgpu.io/gpu shares");
}

TEST(SharePlanTest, PreferredAllocationsStayOnOneGpuAndPackTheFullestThatFits) {
  SharePlan plan(100, {});
  std::vector<std::string> available = Ids("GPU-a", 0, 100);  // a whole free GPU
  for (const std::string& id : Ids("GPU-b", 60, 40)) available.push_back(id);  // 40 free on b
  const auto picked = plan.Prefer(available, {}, 30);
  ASSERT_EQ(picked.size(), 30u);
  for (const std::string& id : picked) EXPECT_EQ(SharePlan::Parse(id)->first, "GPU-b");
  const auto large = plan.Prefer(available, {}, 50);
  ASSERT_EQ(large.size(), 50u);
  EXPECT_EQ(SharePlan::Parse(large[0])->first, "GPU-a");
  const auto pinned = plan.Prefer(available, {"GPU-a-s7"}, 10);
  ASSERT_EQ(pinned.size(), 10u);
  EXPECT_EQ(pinned[0], "GPU-a-s7");
  for (const std::string& id : pinned) EXPECT_EQ(SharePlan::Parse(id)->first, "GPU-a");
  EXPECT_TRUE(plan.Prefer(available, {}, 101).empty());
  EXPECT_TRUE(plan.Prefer(available, {"GPU-a-s1", "GPU-b-s61"}, 5).empty());
}

}  // namespace
}  // namespace fgpu::k8s
