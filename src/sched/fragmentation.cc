#include "sched/fragmentation.h"

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <tuple>

#include "sched/gpu_set.h"

namespace fgpu::sched {

TargetWorkload::TargetWorkload(std::vector<TargetTask> tasks) {
  std::erase_if(tasks, [](const TargetTask& task) { return !(task.weight > 0); });
  double total = 0;
  for (const TargetTask& task : tasks) total += task.weight;
  for (TargetTask& task : tasks) task.weight /= total;
  tasks_ = std::move(tasks);
  for (const TargetTask& task : tasks_) {
    if (task.gpu_milli > 0) shares_.push_back(task.gpu_milli);
  }
  std::sort(shares_.begin(), shares_.end());
  shares_.erase(std::unique(shares_.begin(), shares_.end()), shares_.end());
  for (const TargetTask& task : tasks_) {
    const auto found = std::lower_bound(shares_.begin(), shares_.end(), task.gpu_milli);
    share_index_.push_back(task.gpu_milli > 0 ? static_cast<int>(found - shares_.begin()) : -1);
  }
}

TargetWorkload TargetWorkload::MostFrequent(std::span<const Request> requests, double coverage) {
  using Key = std::tuple<int64_t, int32_t, int, ModelSet>;  // cpu, share, count, models
  std::map<Key, int64_t> counts;
  for (const Request& request : requests) {
    ++counts[{request.cpu_milli, request.gpu_milli, request.gpu_count, request.models}];
  }
  std::vector<std::pair<Key, int64_t>> kinds(counts.begin(), counts.end());
  std::sort(kinds.begin(), kinds.end(), [](const auto& left, const auto& right) {
    if (left.second != right.second) return left.second > right.second;
    return left.first > right.first;
  });
  const double wanted = coverage * static_cast<double>(requests.size());
  double covered = 0;
  std::vector<TargetTask> tasks;
  for (const auto& [key, count] : kinds) {
    if (covered >= wanted) break;
    covered += static_cast<double>(count);
    const auto& [cpu, share, gpus, models] = key;
    tasks.push_back({.cpu_milli = cpu,
                     .gpu_milli = share,
                     .gpu_count = gpus,
                     .models = models,
                     .weight = static_cast<double>(count)});
  }
  return TargetWorkload(std::move(tasks));
}

double TargetWorkload::NodeFragment(int model, int64_t free_cpu_milli,
                                    std::span<const int32_t> free_milli) const {
  // Sorting the node's GPUs once answers "how many GPUs have at least d free, and how much
  // idle is on the others" for every distinct share d in one merge-like pass.
  std::array<int32_t, kMaxGpusPerNode> sorted{};
  std::copy(free_milli.begin(), free_milli.end(), sorted.begin());
  const auto gpus = static_cast<int>(free_milli.size());
  std::sort(sorted.begin(), sorted.begin() + gpus);
  const int64_t idle = std::accumulate(sorted.begin(), sorted.begin() + gpus, int64_t{0});

  std::array<int, 64> fit_counts{};
  std::array<int64_t, 64> below{};
  const size_t share_count = std::min(shares_.size(), fit_counts.size());
  int gpu = 0;
  int64_t below_sum = 0;
  for (size_t share = 0; share < share_count; ++share) {
    while (gpu < gpus && sorted[static_cast<size_t>(gpu)] < shares_[share])
      below_sum += sorted[static_cast<size_t>(gpu++)];
    fit_counts[share] = gpus - gpu;
    below[share] = below_sum;
  }

  double fragment = 0;
  const auto idle_milli = static_cast<double>(idle);
  for (size_t index = 0; index < tasks_.size(); ++index) {
    const TargetTask& task = tasks_[index];
    const int share = share_index_[index];
    if (share < 0 || !Accepts(task.models, model)) {
      fragment += task.weight * idle_milli;
      continue;
    }
    int fitting = 0;
    int64_t too_small = 0;
    if (share < static_cast<int>(share_count)) {
      fitting = fit_counts[static_cast<size_t>(share)];
      too_small = below[static_cast<size_t>(share)];
    } else {  // more distinct shares than the table holds: count directly
      for (int32_t free : free_milli) {
        if (free >= task.gpu_milli) {
          ++fitting;
        } else {
          too_small += free;
        }
      }
    }
    const bool runs = fitting >= task.gpu_count && free_cpu_milli >= task.cpu_milli;
    fragment += task.weight * (runs ? static_cast<double>(too_small) : idle_milli);
  }
  return fragment;
}

}  // namespace fgpu::sched
