#include "simulate/runner.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <thread>

#include "simulate/protocol.h"

namespace fgpu::simulate {

Result<std::vector<RunResult>> RunAll(const Scenario& scenario, const RunPlan& plan, Progress& progress) {
  struct Job {
    const std::string* policy;
    uint64_t seed;
  };
  std::vector<Job> jobs;
  for (const std::string& policy : plan.policies) {
    for (uint64_t seed : plan.seeds) jobs.push_back({&policy, seed});
  }
  int64_t pods_total = 0;
  for (uint64_t seed : plan.seeds) {
    const auto arrivals = static_cast<int64_t>(
        ArrivalOrder(scenario.pods, seed, plan.inflate, scenario.cluster.total_gpu_milli()).size());
    pods_total += arrivals * static_cast<int64_t>(plan.policies.size());
  }
  progress.pods_total.store(pods_total);
  progress.runs_total.store(static_cast<int>(jobs.size()));

  std::vector<std::optional<RunResult>> results(jobs.size());
  std::atomic<size_t> next{0};
  std::mutex error_mutex;
  Status first_error;
  std::atomic<bool> failed{false};
  const auto work = [&] {
    for (size_t index = next.fetch_add(1); index < jobs.size() && !failed.load(); index = next.fetch_add(1)) {
      const RunSpec spec{*jobs[index].policy, jobs[index].seed, plan.inflate, plan.ties};
      Result<RunResult> run = Replay(scenario, spec, &progress.pods_done);
      if (!run.ok()) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (first_error.ok()) first_error = run.status();
        failed.store(true);
        return;
      }
      results[index] = std::move(*run);
      progress.runs_done.fetch_add(1, std::memory_order_relaxed);  // a counter only
    }
  };
  const int threads = std::clamp(plan.jobs, 1, std::max(1, static_cast<int>(jobs.size())));
  std::vector<std::thread> workers;
  for (int thread = 1; thread < threads; ++thread) workers.emplace_back(work);
  work();
  for (std::thread& worker : workers) worker.join();
  if (!first_error.ok()) return first_error;

  std::vector<RunResult> runs;
  runs.reserve(results.size());
  for (std::optional<RunResult>& run : results) runs.push_back(std::move(*run));
  return runs;
}

}  // namespace fgpu::simulate
