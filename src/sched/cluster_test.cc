#include "sched/cluster.h"

#include <gtest/gtest.h>

#include "sched/testing.h"

namespace fgpu::sched {
namespace {

using testing::Gpus;
using testing::MakeCluster;

Status CreateWith(NodeSpec node) {
  ModelTable models;
  (void)models.Intern("T4");
  return Cluster::Create(models, {node}).status();
}

TEST(ClusterTest, RejectsBadNodesByName) {
  EXPECT_NE(CreateWith({"a", 0, 1024, 0, 2, 0}).message().find("node 'a': cpu_milli must be positive"),
            std::string::npos);
  EXPECT_NE(CreateWith({"b", 1000, -5, 0, 2, 0}).message().find("memory_mib must be positive"),
            std::string::npos);
  EXPECT_NE(CreateWith({"c", 1000, 1024, 0, 17, 0}).message().find("outside 0..16"), std::string::npos);
  EXPECT_NE(CreateWith({"d", 1000, 1024, kNoModel, 2, 0}).message().find("no known GPU model"),
            std::string::npos);
  EXPECT_FALSE(CreateWith({"", 1000, 1024, 0, 2, 0}).ok());
  ModelTable models;
  (void)models.Intern("T4");
  const NodeSpec node{"twin", 1000, 1024, 0, 1, 0};
  EXPECT_NE(Cluster::Create(models, {node, node}).status().message().find("listed twice"), std::string::npos);
}

TEST(ClusterTest, FitsChecksHostResourcesModelAndGpuShares) {
  Cluster cluster = MakeCluster({{"T4", 2, 8'000, 4'096}, {"", 0, 64'000}});
  EXPECT_TRUE(cluster.Fits(0, Gpus(2, 1000)));
  EXPECT_FALSE(cluster.Fits(0, Gpus(3, 1000)));
  EXPECT_FALSE(cluster.Fits(0, Gpus(1, 500, 9'000)));  // CPU
  Request memory_hungry = Gpus(1, 500);
  memory_hungry.memory_mib = 5'000;
  EXPECT_FALSE(cluster.Fits(0, memory_hungry));
  Request other_model = Gpus(1, 500);
  other_model.models = 0;  // accepts no model
  EXPECT_FALSE(cluster.Fits(0, other_model));
  EXPECT_FALSE(cluster.Fits(1, Gpus(1, 100)));  // no GPUs
  EXPECT_TRUE(cluster.Fits(1, testing::CpuOnly(60'000)));
  testing::Use(cluster, 0, 0, 600);
  EXPECT_TRUE(cluster.Fits(0, Gpus(2, 400)));
  EXPECT_FALSE(cluster.Fits(0, Gpus(2, 500)));  // GPU 0 has 400 left
  EXPECT_FALSE(cluster.Fits(0, Gpus(2, 1000)));
}

TEST(ClusterTest, ApplyTakesAllOrNothingAndRemoveGivesBack) {
  Cluster cluster = MakeCluster({{"T4", 2, 8'000, 4'096}});
  const Placement half{
      .node = 0, .gpus = GpuBit(0) | GpuBit(1), .cpu_milli = 3'000, .memory_mib = 100, .gpu_milli = 500};
  ASSERT_TRUE(cluster.Apply(half).ok());
  ASSERT_TRUE(cluster.Apply(half).ok());
  EXPECT_EQ(cluster.used_gpu_milli(), 2'000);
  EXPECT_EQ(cluster.Apply(half).code(), StatusCode::kResourceExhausted);  // no GPU left
  EXPECT_EQ(cluster.state(0).free_cpu_milli, 2'000);                      // unchanged by the failure
  EXPECT_EQ(cluster.state(0).version, 2u);
  ASSERT_TRUE(cluster.Remove(half).ok());
  ASSERT_TRUE(cluster.Remove(half).ok());
  EXPECT_EQ(cluster.Remove(half).code(), StatusCode::kInvalidArgument);  // more than in use
  EXPECT_EQ(cluster.used_gpu_milli(), 0);
  EXPECT_EQ(cluster.state(0).free_milli[1], 1000);
  EXPECT_EQ(cluster.changes().nodes.size(), 4u);
}

// A MIG instance slot: an empty node takes another name and GPU memory; one holding anything
// does not change.
TEST(ClusterTest, ReshapeRebindsAnEmptyNodeOnly) {
  ModelTable models;
  (void)models.Intern("mig-instance");
  Cluster cluster = *Cluster::Create(models, {{"slot", 1000, 1024, 0, 1, 0}});
  Request small = Gpus(1, 100, 100);
  small.memory_mib = 1;
  small.gpu_memory_bytes = 1 << 20;
  EXPECT_FALSE(cluster.Fits(0, small)) << "an unbound slot has no memory";
  const uint32_t version = cluster.state(0).version;
  ASSERT_TRUE(cluster.Reshape(0, "MIG-a", int64_t{40} << 30).ok());
  EXPECT_EQ(cluster.spec(0).name, "MIG-a");
  EXPECT_EQ(cluster.state(0).free_gpu_memory[0], int64_t{40} << 30);
  EXPECT_GT(cluster.state(0).version, version);
  EXPECT_TRUE(cluster.Fits(0, small));
  const Placement placed = MakePlacement(0, GpuBit(0), small);
  ASSERT_TRUE(cluster.Apply(placed).ok());
  EXPECT_EQ(cluster.Reshape(0, "MIG-b", int64_t{20} << 30).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(cluster.spec(0).name, "MIG-a");
  ASSERT_TRUE(cluster.Remove(placed).ok());
  EXPECT_TRUE(cluster.Reshape(0, "", 0).ok());
  EXPECT_EQ(cluster.Reshape(1, "x", 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cluster.Reshape(0, "x", -1).code(), StatusCode::kInvalidArgument);
}

TEST(ClusterTest, RejectsPlacementsOnMissingNodesOrGpus) {
  Cluster cluster = MakeCluster({{"T4", 2}});
  EXPECT_FALSE(cluster.Apply({.node = 5, .gpus = 1, .gpu_milli = 10}).ok());
  EXPECT_FALSE(cluster.Apply({.node = 0, .gpus = GpuBit(2), .gpu_milli = 10}).ok());
  EXPECT_FALSE(cluster.Apply({.node = 0, .gpus = GpuBit(0), .cpu_milli = -1}).ok());
}

TEST(RequestTest, ValidateNamesTheField) {
  EXPECT_TRUE(Validate(Gpus(1, 500)).ok());
  EXPECT_NE(Validate(Gpus(1, 0)).message().find("gpu_milli"), std::string::npos);
  EXPECT_NE(Validate(Gpus(1, 1001)).message().find("gpu_milli"), std::string::npos);
  EXPECT_NE(Validate(Gpus(17, 1000)).message().find("gpu_count"), std::string::npos);
  EXPECT_NE(Validate(Gpus(1, 500, -1)).message().find("cpu_milli"), std::string::npos);
  Request share_without_gpu = testing::CpuOnly(1);
  share_without_gpu.gpu_milli = 300;
  EXPECT_FALSE(Validate(share_without_gpu).ok());
}

TEST(ModelTableTest, ParsesAcceptedModelListsAndReportsUnknownNames) {
  ModelTable models;
  ASSERT_EQ(*models.Intern("T4"), 0);
  ASSERT_EQ(*models.Intern("G2"), 1);
  EXPECT_EQ(*models.Intern("T4"), 0);
  EXPECT_EQ(models.ParseSet("").set, kAnyModel);
  const ModelTable::ParsedSet set = models.ParseSet("G2|H100|T4");
  EXPECT_EQ(set.set, ModelSet{3});
  EXPECT_EQ(set.unknown, std::vector<std::string>{"H100"});
  EXPECT_EQ(models.ParseSet("H100").set, ModelSet{0});
  EXPECT_TRUE(Accepts(kAnyModel, 1));
  EXPECT_FALSE(Accepts(kAnyModel, kNoModel));
}

}  // namespace
}  // namespace fgpu::sched
