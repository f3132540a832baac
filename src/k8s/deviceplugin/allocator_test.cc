#include "k8s/deviceplugin/allocator.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "core/units.h"
#include "k8s/dra/agent_test_support.h"

namespace fgpu::k8s {
namespace {

using testing::FakeAgent;

class ShareAllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("fgpu-dp-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    options_.checkpoint_path = (dir_ / "fgpu-allocations.json").string();
    agent_.gpus = {testing::TestGpu("GPU-a")};
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  ShareAllocator Make() { return ShareAllocator(options_, SharePlan(100, {}), &agent_); }

  std::filesystem::path dir_;
  AllocatorOptions options_;
  FakeAgent agent_;
};

std::vector<std::string> Ids(int first, int count) {
  std::vector<std::string> ids;
  for (int i = first; i < first + count; ++i) ids.push_back(SharePlan::IdOf("GPU-a", i));
  return ids;
}

TEST_F(ShareAllocatorTest, AllocateMakesASliceOfTheSharesAndAnswersItsEdits) {
  ShareAllocator allocator = Make();
  Result<CdiDevice> edits = allocator.Allocate(Ids(0, 30));
  ASSERT_TRUE(edits.ok()) << edits.status().message();
  ASSERT_EQ(agent_.orders.size(), 1u);
  EXPECT_EQ(agent_.orders[0].compute_percent, 30u);
  EXPECT_EQ(agent_.orders[0].gpu_uuid, "GPU-a");
  EXPECT_EQ(agent_.orders[0].key.rfind("k8sdp/GPU-a/0-30-", 0), 0u);
  EXPECT_EQ(edits->env[0].first, "FGPU_SLICE");
  EXPECT_EQ(edits->mounts[0].path, "/run/fgpu/slices/s1");
  EXPECT_FALSE(edits->mounts[1].read_only);  // the ledger
  EXPECT_TRUE(std::filesystem::exists(options_.checkpoint_path));
  EXPECT_EQ(std::filesystem::status(options_.checkpoint_path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

TEST_F(ShareAllocatorTest, ReusedSharesReleaseTheirPreviousHoldersSliceEvenAfterARestart) {
  {
    ShareAllocator allocator = Make();
    ASSERT_TRUE(allocator.Allocate(Ids(0, 30)).ok());
    ASSERT_TRUE(allocator.Allocate(Ids(30, 20)).ok());
  }
  EXPECT_EQ(agent_.slices.size(), 2u);
  ShareAllocator restarted = Make();
  ASSERT_TRUE(restarted.Allocate(Ids(25, 10)).ok());  // overlaps both
  EXPECT_EQ(agent_.slices.size(), 1u);
  EXPECT_EQ(restarted.Counters().released, 2u);
  ASSERT_TRUE(restarted.Allocate(Ids(60, 10)).ok());  // overlaps nothing
  EXPECT_EQ(agent_.slices.size(), 2u);
}

TEST_F(ShareAllocatorTest, BadIdsAndACorruptCheckpointChangeNothing) {
  ShareAllocator allocator = Make();
  EXPECT_FALSE(allocator.Allocate({"GPU-a-s1", "GPU-z-s2"}).ok());
  EXPECT_TRUE(agent_.orders.empty());
  std::ofstream(options_.checkpoint_path) << "{not json";
  ShareAllocator corrupt = Make();
  Result<CdiDevice> refused = corrupt.Allocate(Ids(0, 1));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("move it away"), std::string::npos);
  EXPECT_TRUE(agent_.orders.empty());
  EXPECT_EQ(corrupt.Counters().errors, 1u);
}

}  // namespace
}  // namespace fgpu::k8s
