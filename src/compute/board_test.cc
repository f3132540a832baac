// Board creation and validation.
#include "compute/board.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace fgpu::compute {
namespace {

class BoardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/fgpu-board-test-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

// Processes of different slices that start together must all land on one board: one that
// loses the race to create it uses the winner's instead of replacing it.
TEST_F(BoardTest, ConcurrentCreatorsShareOneBoard) {
  constexpr int kCreators = 8;
  std::vector<std::thread> creators;
  for (int i = 0; i < kCreators; ++i) {
    creators.emplace_back([this, i] {
      Result<Board*> board = Board::Open(dir_, "GPU-race");
      ASSERT_TRUE(board.ok()) << board.status().message();
      std::unique_ptr<Board> owned(*board);
      EXPECT_GE(owned->Join(SliceKey("slice-" + std::to_string(i)), "s", MonotonicNs()), 0);
    });
  }
  for (std::thread& creator : creators) creator.join();
  Result<Board*> board = Board::Open(dir_, "GPU-race");
  ASSERT_TRUE(board.ok()) << board.status().message();
  std::unique_ptr<Board> owned(*board);
  int rows = 0;
  for (int i = 0; i < static_cast<int>(layout::kEntryCount); ++i) rows += LoadU64(&owned->entry(i)->key) != 0;
  EXPECT_EQ(rows, kCreators);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) files += entry.is_regular_file();
  EXPECT_EQ(files, 1) << "no temporary file is left behind";
}

TEST_F(BoardTest, AnotherGpusOrAGarbageFileIsRefused) {
  Result<Board*> first = Board::Open(dir_, "GPU-a");
  ASSERT_TRUE(first.ok());
  delete *first;
  std::filesystem::copy_file(dir_ + "/GPU-a", dir_ + "/GPU-b");
  Result<Board*> other = Board::Open(dir_, "GPU-b");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), StatusCode::kCorrupt);
  std::ofstream(dir_ + "/GPU-c") << "garbage";
  Result<Board*> garbage = Board::Open(dir_, "GPU-c");
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.status().message().find("GPU-c"), std::string::npos) << garbage.status().message();
  EXPECT_FALSE(Board::Open(dir_, "../escape").ok());
}

}  // namespace
}  // namespace fgpu::compute
