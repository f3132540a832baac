// Sealed boards (sealed.h, board.h Map, policy_table.h): what the memfds refuse (truncation,
// growth, more seals, a writable mapping of a read-only policy descriptor), what Map refuses (an
// unsealed, resized, foreign, writable-policy or mismatched pair), and the policy table's
// semantics — the agent assigns rows, workloads only find theirs, and the settings that count are
// the policy's whatever a workload writes into its board row. The same checks on a file board
// show what the policy table changes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <memory>
#include <string>

#include "compute/board.h"
#include "compute/limiter.h"
#include "compute/policy_table.h"
#include "compute/sealed.h"
#include "compute/test_units.h"

namespace fgpu::compute {
namespace {

constexpr char kSealedGpu[] = "GPU-sealed";

MapOptions Agent() { return MapOptions{.writable_policy = true, .owner = ::geteuid()}; }
MapOptions Workload() { return MapOptions{.writable_policy = false, .owner = ::geteuid()}; }

class SealedBoardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<SealedPair> pair = CreateSealedPair(kSealedGpu);
    ASSERT_TRUE(pair.ok()) << pair.status().message();
    pair_ = *pair;
    Result<Board*> agent = Board::Map(pair_.board, pair_.policy, kSealedGpu, Agent());
    ASSERT_TRUE(agent.ok()) << agent.status().message();
    agent_.reset(*agent);
    Result<int> read_only = ReopenReadOnly(pair_.policy);
    ASSERT_TRUE(read_only.ok()) << read_only.status().message();
    policy_read_only_ = *read_only;
  }
  void TearDown() override {
    ClosePair(&pair_);
    if (policy_read_only_ >= 0) ::close(policy_read_only_);
  }

  // What a workload maps: the board and the read-only policy description.
  std::unique_ptr<Board> WorkloadBoard() {
    Result<Board*> board = Board::Map(pair_.board, policy_read_only_, kSealedGpu, Workload());
    EXPECT_TRUE(board.ok()) << board.status().message();
    return std::unique_ptr<Board>(board.ok() ? *board : nullptr);
  }

  SealedPair pair_;
  int policy_read_only_ = -1;
  std::unique_ptr<Board> agent_;
  int64_t never_freed_[layout::kEntryCount] = {};
};

TEST_F(SealedBoardTest, NeitherMemfdCanBeResizedNorResealed) {
  for (const int fd : {pair_.board, pair_.policy}) {
    struct stat info {};
    ASSERT_EQ(::fstat(fd, &info), 0);
    EXPECT_EQ(info.st_mode & 07777, 0600u) << "another user must not reopen it through /proc/self/fd";
    EXPECT_EQ(info.st_uid, ::geteuid());
    const int seals = ::fcntl(fd, F_GET_SEALS);
    EXPECT_EQ(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL), F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
    // The SIGBUS attack: truncate the board under every process that maps it.
    errno = 0;
    EXPECT_EQ(::ftruncate(fd, 0), -1);
    EXPECT_EQ(errno, EPERM);
    EXPECT_EQ(::ftruncate(fd, info.st_size + 4096), -1);
    EXPECT_EQ(errno, EPERM);
    const char byte = 1;
    EXPECT_EQ(::pwrite(fd, &byte, 1, info.st_size), -1) << "writing past the end grows it";
    EXPECT_EQ(errno, EPERM);
    // A seal against writing would keep later workloads from mapping the board.
    EXPECT_EQ(::fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE), -1);
    EXPECT_EQ(errno, EPERM);
    EXPECT_EQ(::fstat(fd, &info), 0);
  }
  EXPECT_EQ(static_cast<uint64_t>(::lseek(pair_.board, 0, SEEK_END)), layout::BoardFileSize());
  EXPECT_EQ(static_cast<uint64_t>(::lseek(pair_.policy, 0, SEEK_END)), layout::PolicyFileSize());
}

TEST_F(SealedBoardTest, TheReadOnlyPolicyDescriptorCannotBeWrittenOrMappedWritable) {
  EXPECT_EQ(::fcntl(policy_read_only_, F_GETFL) & O_ACCMODE, O_RDONLY);
  errno = 0;
  void* writable = ::mmap(nullptr, layout::PolicyFileSize(), PROT_READ | PROT_WRITE, MAP_SHARED, policy_read_only_, 0);
  EXPECT_EQ(writable, MAP_FAILED);
  EXPECT_EQ(errno, EACCES);
  const char byte = 1;
  EXPECT_EQ(::pwrite(policy_read_only_, &byte, 1, 0), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(::ftruncate(policy_read_only_, 0), -1);
  // A read-only shared mapping cannot be made writable afterwards either.
  void* mapped = ::mmap(nullptr, layout::PolicyFileSize(), PROT_READ, MAP_SHARED, policy_read_only_, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  EXPECT_EQ(::mprotect(mapped, layout::PolicyFileSize(), PROT_READ | PROT_WRITE), -1);
  EXPECT_EQ(errno, EACCES);
  ::munmap(mapped, layout::PolicyFileSize());
}

TEST_F(SealedBoardTest, MapRefusesWhatTheAgentDidNotHandOut) {
  // A writable policy descriptor, where a workload expects a read-only one.
  Result<Board*> board = Board::Map(pair_.board, pair_.policy, kSealedGpu, Workload());
  ASSERT_FALSE(board.ok());
  EXPECT_EQ(board.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(board.status().message().find("handed out writable"), std::string::npos) << board.status().message();
  // Memfds of another user (the owner the receiver demands is not theirs).
  board = Board::Map(pair_.board, policy_read_only_, kSealedGpu, {.writable_policy = false, .owner = ::geteuid() + 1});
  ASSERT_FALSE(board.ok());
  EXPECT_EQ(board.status().code(), StatusCode::kPermissionDenied);
  // Another GPU's.
  board = Board::Map(pair_.board, policy_read_only_, "GPU-other", Workload());
  ASSERT_FALSE(board.ok());
  EXPECT_EQ(board.status().code(), StatusCode::kCorrupt);
  // The policy of another board.
  Result<SealedPair> other = CreateSealedPair(kSealedGpu);
  ASSERT_TRUE(other.ok());
  board = Board::Map(pair_.board, other->policy, kSealedGpu, Agent());
  ASSERT_FALSE(board.ok());
  EXPECT_NE(board.status().message().find("policy table of another board"), std::string::npos) << board.status().message();
  ClosePair(&*other);
  // An unsealed memfd that looks like a board (a user's own): it could be truncated under us.
  const int unsealed = ::memfd_create("fgpu-board:GPU-sealed", MFD_CLOEXEC);
  ASSERT_GE(unsealed, 0);
  ASSERT_EQ(::fchmod(unsealed, 0600), 0);
  ASSERT_EQ(::ftruncate(unsealed, static_cast<off_t>(layout::BoardFileSize())), 0);
  const layout::BoardHeader header = FreshBoardHeader(kSealedGpu);
  ASSERT_EQ(::pwrite(unsealed, &header, sizeof(header), 0), static_cast<ssize_t>(sizeof(header)));
  board = Board::Map(unsealed, policy_read_only_, kSealedGpu, Workload());
  ASSERT_FALSE(board.ok());
  EXPECT_NE(board.status().message().find("not sealed"), std::string::npos) << board.status().message();
  ::close(unsealed);
  // A plain file is not a memfd either way.
  const std::string path = "/tmp/fgpu-sealed-test-" + std::to_string(::getpid());
  const int file = ::open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  ASSERT_GE(file, 0);
  ::unlink(path.c_str());
  ASSERT_EQ(::ftruncate(file, static_cast<off_t>(layout::BoardFileSize())), 0);
  board = Board::Map(file, policy_read_only_, kSealedGpu, Workload());
  EXPECT_FALSE(board.ok());
  ::close(file);
  // What the agent hands out maps.
  EXPECT_NE(WorkloadBoard(), nullptr);
}

TEST_F(SealedBoardTest, RowsAreTheAgentsToAssignAndAWorkloadOnlyFindsItsOwn) {
  std::unique_ptr<Board> workload = WorkloadBoard();
  ASSERT_NE(workload, nullptr);
  const uint64_t mine = SliceKey("/var/lib/fgpu/slices/s1"), other = SliceKey("/var/lib/fgpu/slices/s2");
  // Every row free, yet no row is claimed: the agent has not assigned one.
  EXPECT_EQ(workload->Join(mine, "s1", 0), -1);
  EXPECT_EQ(workload->Find(0), 0) << "free rows have key 0";
  EXPECT_EQ(workload->Join(0, "", 0), -1) << "key 0 is no slice";
  for (int row = 0; row < static_cast<int>(layout::kEntryCount); ++row) EXPECT_EQ(workload->RowKey(row), 0u);
  // The agent assigns rows 0 and 1; a workload then finds its own, through its own mapping.
  AssignRow(*agent_, FreeRowIndex(*agent_, never_freed_), mine, "s1", 30, Mode::kShare, Tier::kStandard, 5 * kMs);
  const int row = FreeRowIndex(*agent_, never_freed_);
  AssignRow(*agent_, row, other, "s2", 70, Mode::kCap, Tier::kLatency, 5 * kMs);
  EXPECT_EQ(workload->Join(mine, "s1", 0), 0);
  EXPECT_EQ(workload->Join(other, "s2", 0), row);
  EXPECT_EQ(*workload->share_word(row), 70u);
  EXPECT_EQ(*workload->mode_tier_word(row),
            layout::PackModeTier(static_cast<uint8_t>(Mode::kCap), static_cast<uint8_t>(Tier::kLatency)));
  EXPECT_EQ(std::string(workload->policy_entry(row)->slice_id), "s2");
  // The board rows themselves carry none of it (nobody reads them on a sealed board).
  EXPECT_EQ(workload->entry(row)->key, 0u);
  EXPECT_EQ(workload->entry(row)->share, 0u);
  // A resize, then a delete: the row is free again and reused last.
  UpdateRow(*agent_, row, 40, Mode::kShare, Tier::kBatch);
  EXPECT_EQ(*workload->share_word(row), 40u);
  FreeRow(*agent_, 0);
  EXPECT_EQ(workload->Find(mine), -1);
  never_freed_[0] = 10 * kMs;
  EXPECT_EQ(FreeRowIndex(*agent_, never_freed_), 2) << "a row never used before the one just freed";
  for (int i = 2; i < static_cast<int>(layout::kEntryCount); ++i) {
    AssignRow(*agent_, i, SliceKey("/s" + std::to_string(i)), "x", 1, Mode::kShare, Tier::kStandard, 0);
  }
  EXPECT_EQ(FreeRowIndex(*agent_, never_freed_), 0);
  AssignRow(*agent_, 0, SliceKey("/s0"), "x", 1, Mode::kShare, Tier::kStandard, 0);
  EXPECT_EQ(FreeRowIndex(*agent_, never_freed_), -1) << "every row held";
}

TEST_F(SealedBoardTest, AnAssignedRowStartsFresh) {
  const uint64_t key = SliceKey("/var/lib/fgpu/slices/s1");
  AssignRow(*agent_, 3, key, "s1", 50, Mode::kShare, Tier::kStandard, 0);
  layout::BoardEntry& row = *agent_->entry(3);
  // The previous slice's usage, as its processes left it.
  row.busy_ns = 123;
  row.launches = 4;
  row.throttled_ns = 5;
  row.throttles = 6;
  row.demand_ns = 7 * kMs;
  row.vtime = 1;
  agent_->header()->vclock = 99 * kMs;
  FreeRow(*agent_, 3);
  AssignRow(*agent_, 3, SliceKey("/var/lib/fgpu/slices/s9"), "s9", 20, Mode::kShare, Tier::kStandard, 8 * kMs);
  EXPECT_EQ(row.busy_ns, 0u);
  EXPECT_EQ(row.launches, 0u);
  EXPECT_EQ(row.throttled_ns, 0u);
  EXPECT_EQ(row.throttles, 0u);
  EXPECT_EQ(row.demand_ns, 0);
  EXPECT_EQ(row.vtime, 99u * kMs) << "starts level with the board's clock: no banked credit, no debt";
  EXPECT_EQ(row.tat_ns, 8 * kMs);
}

// Two slices on one GPU, both standard tier. The one that waits writes the latency tier and a
// 100 % share into its board row, and tells its limiter so (what a hostile workload can do). On a
// file board that wins the GPU at once (higher tier); on a sealed board it changes nothing.
TEST_F(SealedBoardTest, AForgedTierInTheBoardRowGainsNothing) {
  std::unique_ptr<Board> workload = WorkloadBoard();
  ASSERT_NE(workload, nullptr);
  AssignRow(*agent_, 0, SliceKey("/a"), "a", 70, Mode::kShare, Tier::kStandard, 0);
  AssignRow(*agent_, 1, SliceKey("/b"), "b", 30, Mode::kShare, Tier::kStandard, 0);
  Limiter holder(workload.get(), workload->Join(SliceKey("/a"), "a", 0), Policy{});
  Limiter forger(workload.get(), workload->Join(SliceKey("/b"), "b", 0), Policy{});
  const int64_t now = 1000 * kMs;
  ASSERT_EQ(holder.TryAdmit(now).verdict, Admission::kGo);
  holder.OnLaunched(now, LaunchKind::kKernel);  // busy: work in flight
  forger.Configure(100, Mode::kShare, Tier::kLatency);
  __atomic_store_n(&forger.entry()->share, 100u, __ATOMIC_RELEASE);
  __atomic_store_n(&forger.entry()->mode_tier,
                   layout::PackModeTier(static_cast<uint8_t>(Mode::kShare), static_cast<uint8_t>(Tier::kLatency)),
                   __ATOMIC_RELEASE);
  const Admission admission = forger.TryAdmit(now + 100'000);
  EXPECT_EQ(admission.verdict, Admission::kWait) << ToString(admission.took);
  EXPECT_EQ(*workload->mode_tier_word(1), layout::PackModeTier(static_cast<uint8_t>(Mode::kShare), static_cast<uint8_t>(Tier::kStandard)));
  EXPECT_EQ(*workload->share_word(1), 30u);
}

TEST(FileBoardForgery, AForgedTierWinsOnABoardWithoutAPolicyTable) {
  const std::string dir = "/tmp/fgpu-file-forgery-" + std::to_string(::getpid());
  Result<Board*> opened = Board::Open(dir, "GPU-file");
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  std::unique_ptr<Board> board(*opened);
  Limiter holder(board.get(), board->Join(SliceKey("/a"), "a", 0), Policy{});
  Limiter forger(board.get(), board->Join(SliceKey("/b"), "b", 0), Policy{});
  holder.Configure(70, Mode::kShare, Tier::kStandard);
  forger.Configure(30, Mode::kShare, Tier::kStandard);
  const int64_t now = 1000 * kMs;
  ASSERT_EQ(holder.TryAdmit(now).verdict, Admission::kGo);
  // The holder has had more than its share (a higher tier only goes first when the owner is not
  // owed: docs/compute.md "Guarantees before tiers").
  Mark used{.first_launch_ns = now - 50 * kMs, .launches = 1, .estimated_ns = 50 * kMs};
  holder.OnLaunched(now - 50 * kMs, LaunchKind::kKernel);
  holder.OnMarkClosed();
  holder.OnMarkComplete(used, now, 50 * kMs);
  holder.OnLaunched(now, LaunchKind::kKernel);
  EXPECT_EQ(forger.TryAdmit(now + 100'000).verdict, Admission::kWait);
  forger.Configure(100, Mode::kShare, Tier::kLatency);  // the row is the workload's own to write
  const Admission admission = forger.TryAdmit(now + 200'000);
  EXPECT_EQ(admission.verdict, Admission::kGo);
  EXPECT_EQ(admission.took, TakeReason::kHigherTier);
  board.reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fgpu::compute
