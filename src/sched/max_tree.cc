#include "sched/max_tree.h"

namespace fgpu::sched {

MaxTree::MaxTree(int leaves) {
  while (width_ < leaves) width_ *= 2;
  max_.assign(static_cast<size_t>(2 * width_), kNone);
  count_.assign(static_cast<size_t>(2 * width_), 0);
}

void MaxTree::Set(int leaf, double score) {
  auto index = static_cast<size_t>(width_ + leaf);
  max_[index] = score;
  count_[index] = score == kNone ? 0 : 1;
  for (index /= 2; index >= 1; index /= 2) {
    const size_t left = 2 * index;
    const size_t right = left + 1;
    if (max_[left] > max_[right]) {
      max_[index] = max_[left];
      count_[index] = count_[left];
    } else if (max_[right] > max_[left]) {
      max_[index] = max_[right];
      count_[index] = count_[right];
    } else {
      max_[index] = max_[left];
      count_[index] = count_[left] + count_[right];
    }
  }
}

int MaxTree::NthBest(uint32_t rank) const {
  const double target = max_[1];
  size_t index = 1;
  while (index < static_cast<size_t>(width_)) {
    const size_t left = 2 * index;
    if (max_[left] == target) {
      if (rank < count_[left]) {
        index = left;
        continue;
      }
      rank -= count_[left];
    }
    index = left + 1;
  }
  return static_cast<int>(index) - width_;
}

}  // namespace fgpu::sched
