// The best of n scores, kept under point updates: a complete binary tree where each inner node
// holds its subtree's maximum and how many leaves reach it. The best is read at the root in
// O(1); changing one leaf costs O(log n); the k-th of the leaves tied at the best is found in
// O(log n), which is how the scheduler picks uniformly among equally good nodes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace fgpu::sched {

class MaxTree {
 public:
  static constexpr double kNone = -std::numeric_limits<double>::infinity();  // an excluded leaf

  explicit MaxTree(int leaves = 0);

  // Leaf `leaf` takes part with `score`; kNone takes it out.
  void Set(int leaf, double score);

  double best() const { return max_[1]; }
  // How many leaves reach best(); 0 when every leaf is out.
  uint32_t best_count() const { return count_[1]; }
  // The `rank`-th (0-based, in leaf order) of the leaves that reach best(). rank < best_count().
  int NthBest(uint32_t rank) const;

 private:
  int width_ = 1;  // leaves rounded up to a power of two
  std::vector<double> max_;
  std::vector<uint32_t> count_;
};

}  // namespace fgpu::sched
