// The agent's sealed boards (board_registry.h): rows follow the slices the service creates,
// resizes and deletes; a GPU holds no more slices than its board has rows; and a restarted agent
// recovers the pair its workloads still map (root only: /proc/<pid>/map_files), keeps every
// live slice in its row, frees the others — and never adopts a memfd someone else made.
#include "agent/board_registry.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "agent/slice_service.h"
#include "agent/store.h"
#include "compute/board_layout.h"
#include "compute/policy_table.h"
#include "compute/sealed.h"
#include "core/units.h"

namespace fgpu::agent {
namespace {

constexpr char kGpuA[] = "GPU-aaaa";
constexpr char kGpuB[] = "GPU-bbbb";

using compute::layout::PackModeTier;

uint32_t ModeTier(slice::ComputeMode mode, slice::Tier tier) {
  return PackModeTier(static_cast<uint8_t>(mode), static_cast<uint8_t>(tier));
}

class BoardRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/fgpu-board-registry-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir_);
    Boot();
  }
  void TearDown() override {
    if (service_) service_->SetObserver(nullptr);
    registry_.reset();
    service_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // The agent's start: its records restored, then its boards (recovered from `candidates` or new).
  void Boot(const std::vector<pid_t>& candidates = {}) {
    if (service_) service_->SetObserver(nullptr);
    registry_.reset();
    service_.reset();
    store_.reset();
    Result<std::unique_ptr<Store>> store = Store::Open(dir_ + "/state.db");
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
    std::vector<GpuState> gpus = {{0, kGpuA, "H100", 80 * kGiB, 0, 0}, {1, kGpuB, "H100", 80 * kGiB, 0, 0}};
    service_ = std::make_unique<SliceService>(store_.get(), gpus, dir_ + "/slices");
    ASSERT_TRUE(service_->Restore().ok());
    Result<std::unique_ptr<BoardRegistry>> registry = BoardRegistry::Open({kGpuA, kGpuB}, candidates, geteuid());
    ASSERT_TRUE(registry.ok()) << registry.status().message();
    registry_ = std::move(*registry);
    rebuilt_ = registry_->Rebuild(service_->List());
    BoardRegistry* boards = registry_.get();
    service_->SetObserver([boards](const SliceRecord& slice, bool gone) { boards->Observe(slice, gone); });
    service_->SetMaxSlicesPerGpu(static_cast<int>(compute::layout::kEntryCount));
  }

  SliceRecord Create(uint32_t share, const char* gpu = kGpuA, slice::Tier tier = slice::Tier::kStandard) {
    CreateRequest request;
    request.gpu = gpu;
    request.memory_bytes = kGiB;
    request.compute_share = share;
    request.tier = tier;
    net::Peer peer;
    peer.unix_socket = true;
    peer.uid = geteuid();
    peer.pid = getpid();
    Result<SliceRecord> created = service_->Create(request, peer);
    EXPECT_TRUE(created.ok()) << created.status().message();
    return created.ok() ? *created : SliceRecord{};
  }

  const compute::layout::PolicyEntry& PolicyOf(const SliceRecord& slice) const {
    const int row = registry_->RowOf(slice.id);
    EXPECT_GE(row, 0) << slice.id;
    return *registry_->BoardOf(slice.gpu_uuid)->policy_entry(row < 0 ? 0 : row);
  }

  std::string dir_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<SliceService> service_;
  std::unique_ptr<BoardRegistry> registry_;
  std::vector<std::string> rebuilt_;
};

TEST_F(BoardRegistryTest, RowsFollowCreateResizeAndDelete) {
  const SliceRecord a = Create(30);
  const SliceRecord b = Create(50, kGpuA, slice::Tier::kLatency);
  const SliceRecord c = Create(20, kGpuB);
  const compute::layout::PolicyEntry& row_a = PolicyOf(a);
  EXPECT_EQ(row_a.key, SliceKeyOf(a.dir));
  EXPECT_EQ(row_a.share, 30u);
  EXPECT_EQ(row_a.mode_tier, ModeTier(slice::ComputeMode::kShare, slice::Tier::kStandard));
  EXPECT_EQ(std::string(row_a.slice_id), a.id);
  EXPECT_EQ(PolicyOf(b).mode_tier, ModeTier(slice::ComputeMode::kShare, slice::Tier::kLatency));
  EXPECT_NE(registry_->RowOf(a.id), registry_->RowOf(b.id));
  EXPECT_EQ(PolicyOf(c).key, SliceKeyOf(c.dir)) << "on its own GPU's board";
  EXPECT_EQ(registry_->BoardOf(kGpuA)->Find(SliceKeyOf(c.dir)), -1);
  // The key is the one the interposer computes: the realpath of the slice directory.
  char resolved[PATH_MAX];
  ASSERT_NE(realpath(a.dir.c_str(), resolved), nullptr);
  EXPECT_EQ(row_a.key, compute::SliceKey(resolved));

  ResizeRequest resize;
  resize.compute_share = 40;
  resize.compute_mode = slice::ComputeMode::kCap;
  ASSERT_TRUE(service_->Resize(a.id, resize).ok());
  EXPECT_EQ(row_a.share, 40u);
  EXPECT_EQ(row_a.mode_tier, ModeTier(slice::ComputeMode::kCap, slice::Tier::kStandard));

  const int freed = registry_->RowOf(a.id);
  ASSERT_TRUE(service_->Delete(a.id).ok());
  EXPECT_EQ(registry_->RowOf(a.id), -1);
  EXPECT_EQ(registry_->BoardOf(kGpuA)->policy_entry(freed)->key, 0u);
  // The next slice gets a row nobody used lately, not the one just freed.
  const SliceRecord d = Create(10);
  EXPECT_NE(registry_->RowOf(d.id), freed);
  EXPECT_EQ(PolicyOf(d).share, 10u);
}

TEST_F(BoardRegistryTest, AGpuHoldsNoMoreSlicesThanItsBoardHasRows) {
  service_->SetMaxSlicesPerGpu(2);
  Create(10);
  Create(10);
  CreateRequest request;
  request.gpu = kGpuA;
  request.memory_bytes = kGiB;
  request.compute_share = 10;
  Result<SliceRecord> third = service_->Create(request, net::Peer{});
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(third.status().message().find("the most its compute board has rows for"), std::string::npos)
      << third.status().message();
  request.gpu.reset();  // placed by the agent: on the other GPU
  Result<SliceRecord> placed = service_->Create(request, net::Peer{});
  ASSERT_TRUE(placed.ok()) << placed.status().message();
  EXPECT_EQ(placed->gpu_uuid, kGpuB);
}

// A GPU the registry was not opened with — a MIG instance the agent made after its start — gets a
// pair when its first slice arrives, and its slices their rows.
TEST_F(BoardRegistryTest, AGpuSeenLaterGetsItsBoardWithItsFirstSlice) {
  EXPECT_FALSE(registry_->Handout("MIG-cccc").has_value());
  SliceRecord slice;
  slice.id = "s90";
  slice.gpu_uuid = "MIG-cccc";
  slice.dir = dir_ + "/slices/s90";
  slice.compute_share = 40;
  registry_->Observe(slice, /*gone=*/false);
  EXPECT_TRUE(registry_->Handout("MIG-cccc").has_value());
  ASSERT_GE(registry_->RowOf("s90"), 0);
  EXPECT_EQ(registry_->BoardOf("MIG-cccc")->policy_entry(registry_->RowOf("s90"))->share, 40u);
  registry_->Observe(slice, /*gone=*/true);
  EXPECT_EQ(registry_->RowOf("s90"), -1);
}

TEST_F(BoardRegistryTest, TheHandoutIsTheBoardAndAReadOnlyPolicy) {
  const std::optional<compute::SealedPair> fds = registry_->Handout(kGpuA);
  ASSERT_TRUE(fds.has_value());
  EXPECT_EQ(fcntl(fds->policy, F_GETFL) & O_ACCMODE, O_RDONLY);
  EXPECT_EQ(fcntl(fds->board, F_GETFL) & O_ACCMODE, O_RDWR);
  EXPECT_FALSE(registry_->Handout("GPU-none").has_value());
  EXPECT_FALSE(registry_->Recovered(kGpuA)) << "no workload held a board: a new pair";
}

// A restart while a workload runs: the workload's mappings (here this process's, as the
// interposer makes them) are the way back to the memfds.
TEST_F(BoardRegistryTest, ARestartedAgentRecoversTheBoardsItsWorkloadsMap) {
  if (geteuid() != 0) GTEST_SKIP() << "/proc/<pid>/map_files is root's";
  const SliceRecord a = Create(30);
  const SliceRecord b = Create(70);
  const SliceRecord other = Create(1, kGpuB);
  const int row_b = registry_->RowOf(b.id);
  std::optional<compute::SealedPair> fds = registry_->Handout(kGpuA);
  ASSERT_TRUE(fds.has_value());
  Result<compute::Board*> mapped = compute::Board::Map(fds->board, fds->policy, kGpuA, {.writable_policy = false, .owner = 0});
  ASSERT_TRUE(mapped.ok()) << mapped.status().message();
  std::unique_ptr<compute::Board> workload(*mapped);
  __atomic_store_n(&workload->entry(row_b)->busy_ns, 777, __ATOMIC_RELEASE);  // its usage so far
  const int64_t created_before = workload->policy_header()->created_ns;

  // The agent dies (its descriptors and mappings go) and a slice is deleted meanwhile by
  // another copy of the records (the restarted agent must free its row).
  service_->SetObserver(nullptr);
  registry_.reset();
  ASSERT_TRUE(service_->Delete(a.id).ok());
  Boot({getpid()});
  EXPECT_TRUE(registry_->Recovered(kGpuA));
  EXPECT_FALSE(registry_->Recovered(kGpuB)) << "nobody mapped GPU B's: made anew";
  EXPECT_EQ(registry_->BoardOf(kGpuA)->policy_header()->created_ns, created_before);
  // The live slice kept its row and its usage; the deleted one's row is free; the workload sees it all.
  EXPECT_EQ(registry_->RowOf(b.id), row_b);
  EXPECT_EQ(__atomic_load_n(&registry_->BoardOf(kGpuA)->entry(row_b)->busy_ns, __ATOMIC_ACQUIRE), 777u);
  EXPECT_EQ(workload->Find(SliceKeyOf(b.dir)), row_b);
  EXPECT_EQ(workload->Find(SliceKeyOf(a.dir)), -1);
  ASSERT_EQ(rebuilt_.size(), 1u);
  EXPECT_NE(rebuilt_[0].find("freed compute row"), std::string::npos) << rebuilt_[0];
  // New writes by the restarted agent reach the workload's mapping.
  ResizeRequest resize;
  resize.compute_share = 60;
  ASSERT_TRUE(service_->Resize(b.id, resize).ok());
  EXPECT_EQ(*workload->share_word(row_b), 60u);
  EXPECT_GE(registry_->RowOf(other.id), 0) << "GPU B's slice got a row on the new board";
}

TEST_F(BoardRegistryTest, AMemfdSomeoneElseMadeIsNeverAdopted) {
  if (geteuid() != 0) GTEST_SKIP() << "/proc/<pid>/map_files and fchown are root's";
  // A user's look-alike: sealed, valid headers, the right names — but theirs.
  Result<compute::SealedPair> forged = compute::CreateSealedPair(kGpuA);
  ASSERT_TRUE(forged.ok());
  ASSERT_EQ(fchown(forged->board, 4242, 4242), 0);
  ASSERT_EQ(fchown(forged->policy, 4242, 4242), 0);
  Result<compute::Board*> mapped =
      compute::Board::Map(forged->board, forged->policy, kGpuA, {.writable_policy = true, .owner = 4242});
  ASSERT_TRUE(mapped.ok()) << mapped.status().message();
  std::unique_ptr<compute::Board> held(*mapped);
  service_->SetObserver(nullptr);
  registry_.reset();
  Boot({getpid()});
  EXPECT_FALSE(registry_->Recovered(kGpuA));
  const std::optional<compute::SealedPair> fds = registry_->Handout(kGpuA);
  struct stat mine {}, theirs {};
  ASSERT_EQ(fstat(fds->board, &mine), 0);
  ASSERT_EQ(fstat(forged->board, &theirs), 0);
  EXPECT_NE(mine.st_ino, theirs.st_ino);
  EXPECT_EQ(mine.st_uid, 0u);
  compute::ClosePair(&*forged);
}

}  // namespace
}  // namespace fgpu::agent
