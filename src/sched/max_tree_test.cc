#include "sched/max_tree.h"

#include <gtest/gtest.h>

namespace fgpu::sched {
namespace {

TEST(MaxTreeTest, EmptyTreeHasNoBest) {
  MaxTree tree(5);
  EXPECT_EQ(tree.best_count(), 0u);
  EXPECT_EQ(tree.best(), MaxTree::kNone);
}

TEST(MaxTreeTest, TracksTheMaximumAndItsTies) {
  MaxTree tree(6);
  tree.Set(0, 3);
  tree.Set(4, 7);
  tree.Set(5, 7);
  tree.Set(2, 1);
  EXPECT_EQ(tree.best(), 7);
  EXPECT_EQ(tree.best_count(), 2u);
  EXPECT_EQ(tree.NthBest(0), 4);
  EXPECT_EQ(tree.NthBest(1), 5);
  tree.Set(5, MaxTree::kNone);
  EXPECT_EQ(tree.best_count(), 1u);
  EXPECT_EQ(tree.NthBest(0), 4);
  tree.Set(4, 2);
  EXPECT_EQ(tree.best(), 3);
  EXPECT_EQ(tree.NthBest(0), 0);
}

TEST(MaxTreeTest, NthBestVisitsEveryTiedLeafInOrder) {
  MaxTree tree(37);
  for (int leaf = 0; leaf < 37; ++leaf) tree.Set(leaf, leaf % 3 == 0 ? 100 : leaf);
  ASSERT_EQ(tree.best(), 100);
  ASSERT_EQ(tree.best_count(), 13u);  // leaves 0, 3, ..., 36
  for (uint32_t rank = 0; rank < 13; ++rank) EXPECT_EQ(tree.NthBest(rank), static_cast<int>(3 * rank));
}

}  // namespace
}  // namespace fgpu::sched
