#include "sched/policies/gpu_packing/gpu_packing.h"

#include <algorithm>
#include <array>
#include <numeric>

#include "sched/gpu_pick.h"

namespace fgpu::sched {

namespace {

int64_t PackingScore(const NodeView& node, const Request& request) {
  const int gpu_count = node.spec.gpu_count;
  const auto free = node.free_milli();
  const auto fully_free = static_cast<int64_t>(std::count(free.begin(), free.end(), kMilliPerGpu));
  if (fully_free == gpu_count) return std::max<int64_t>(33 - fully_free, fully_free);

  std::array<int, kMaxGpusPerNode> order{};
  std::iota(order.begin(), order.begin() + gpu_count, 0);
  std::stable_sort(order.begin(), order.begin() + gpu_count, [&](int left, int right) {
    return free[static_cast<size_t>(left)] < free[static_cast<size_t>(right)];
  });
  const GpuSet fitting = FittingGpus(node, request);
  int wanted = request.gpu_count;
  int64_t fully_free_used = 0;
  int64_t free_percent_used = 0;
  for (int position = 0; position < gpu_count && wanted > 0; ++position) {
    const int gpu = order[static_cast<size_t>(position)];
    if (!Contains(fitting, gpu)) continue;
    --wanted;
    const int32_t gpu_free = free[static_cast<size_t>(gpu)];
    if (gpu_free == kMilliPerGpu) ++fully_free_used;
    free_percent_used += gpu_free * 100 / kMilliPerGpu;
  }
  if (fully_free_used > 0) return std::max<int64_t>(50 - fully_free_used, 33);
  return std::max<int64_t>(100 - free_percent_used / 10, 50);
}

}  // namespace

NodeScore GpuPackingPolicy::Score(const NodeView& node, const Request& request) {
  if (request.gpu_count == 0) return {};
  return {.score = static_cast<double>(PackingScore(node, request)), .gpus = BestFitGpus(node, request)};
}

}  // namespace fgpu::sched
