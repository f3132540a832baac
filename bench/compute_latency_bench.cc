// The latency tier's tail on the simulated GPU, in wall time (docs/compute.md "Tests and
// measured figures"): `fgpu run --compute 50 --tier latency -- fgpu-probe spin --duty 25
// --kernel-us 1000` alone, then beside a saturating batch-tier slice (1 ms kernels, 2 in flight;
// then 0.5 ms kernels, 16 in flight), and, as the baseline of what the tier buys, the same pairs
// both in the standard tier. Each figure is the best p99 of N runs (host noise on a small machine
// only adds latency). The physical limit (a kernel already running is not preempted): the p99
// alone plus one batch kernel; a ratio to it ≤ 1 meets it. A timed bar, so a benchmark and not a
// test: ctest checks the same arbitration in simulated time
// (compute.ArbitrationModel.LatencyTierWaitsAtMostOneLowerTierKernel) and, with a margin no host
// noise reaches, in compute_e2e.ComputeShares.LatencyTierGoesFirstBesideABatchSlice.
//
//   fgpu_compute_latency_bench [--runs N] [--seconds S]
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "probe_runner.h"
#include "sim/state/shared_devices.h"

namespace {

using fgpu::testing::ProbeResult;
using fgpu::testing::RunningProbe;

struct Settings {
  int runs = 3;
  std::string seconds = "2";
};

class Bench {
 public:
  explicit Bench(Settings settings) : settings_(std::move(settings)) {
    const std::string tag = std::to_string(getpid());
    segment_ = "/fgpu-latency-bench-" + tag;
    config_ = "/tmp/fgpu-latency-bench-" + tag + ".json";
    run_dir_ = "/tmp/fgpu-latency-bench-slices-" + tag;
    boards_ = "/tmp/fgpu-latency-bench-boards-" + tag;
    std::ofstream(config_) << R"({"devices": [{"count": 1, "memory": "4GiB", "context_overhead": "300MiB"}]})";
  }
  ~Bench() {
    fgpu::sim::SharedDevices::Remove(segment_).ok();
    std::filesystem::remove(config_);
    std::filesystem::remove_all(run_dir_);
    std::filesystem::remove_all(boards_);
  }
  Bench(const Bench&) = delete;
  Bench& operator=(const Bench&) = delete;

  // The best p99 (µs) of the request loop in `tier`, beside a saturating slice in `other_tier`
  // ("" for alone) with kernels of `kernel_us` and `depth` launches in flight; -1 when a run failed.
  double BestP99(const std::string& tier, const std::string& other_tier, int kernel_us = 1000, int depth = 2) {
    double best = 1e18;
    for (int run = 0; run < settings_.runs; ++run) {
      std::unique_ptr<RunningProbe> other;
      if (!other_tier.empty()) {
        other = Start(other_tier, {"--duty", "100", "--kernel-us", std::to_string(kernel_us), "--depth",
                                   std::to_string(depth), "--window-ms", "1000"});
      }
      const ProbeResult requests = Start(tier, {"--duty", "25", "--kernel-us", "1000"})->Wait();
      if (other != nullptr && other->Wait().exit_code != 0) return -1;
      const nlohmann::json spin = requests.Event("spin");
      if (requests.exit_code != 0 || !spin.is_object()) {
        std::fprintf(stderr, "run failed (%d): %s\n", requests.exit_code, requests.stderr_text.c_str());
        return -1;
      }
      best = std::min(best, spin["latency_us"]["p99"].get<double>());
    }
    return best;
  }

 private:
  std::unique_ptr<RunningProbe> Start(const std::string& tier, std::vector<std::string> spin) {
    std::vector<std::string> argv = {FGPU_BIN_PATH, "run", "--compute", "50", "--tier", tier,
                                     "--",          FGPU_PROBE_PATH, "spin", "--seconds", settings_.seconds};
    argv.insert(argv.end(), spin.begin(), spin.end());
    return std::make_unique<RunningProbe>(segment_, config_, argv,
                                          std::vector<std::string>{"FGPU_RUN_DIR=" + run_dir_,
                                                                   "FGPU_COMPUTE_DIR=" + boards_});
  }

  Settings settings_;
  std::string segment_, config_, run_dir_, boards_;
};

Settings ParseArgs(int argc, char** argv) {
  Settings settings;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--runs") {
      settings.runs = std::max(1, std::atoi(argv[i + 1]));
    } else if (flag == "--seconds") {
      settings.seconds = argv[i + 1];
    }
  }
  return settings;
}

}  // namespace

int main(int argc, char** argv) {
  const Settings settings = ParseArgs(argc, argv);
  Bench bench(settings);
  const double alone = bench.BestP99("latency", "");
  if (alone <= 0) return 1;
  std::printf("best p99 of %d runs, 1 ms requests at duty 25 in a 50 %% slice; alone (latency tier) %.1f us\n",
              settings.runs, alone);
  std::printf("%-34s %12s %12s %9s %22s\n", "beside a saturating 50 % slice", "latency/batch", "no tiers",
              "limit", "ratio to limit (<= 1)");
  for (const auto& [kernel_us, depth] : {std::pair{1000, 2}, std::pair{500, 16}}) {
    const double tiered = bench.BestP99("latency", "batch", kernel_us, depth);
    const double untiered = bench.BestP99("standard", "standard", kernel_us, depth);
    if (tiered <= 0 || untiered <= 0) return 1;
    const double limit = alone + kernel_us;
    const std::string label = std::to_string(kernel_us) + " us kernels, " + std::to_string(depth) + " in flight";
    std::printf("%-34s %9.1f us %9.1f us %6.0f us %22.2f\n", label.c_str(), tiered, untiered, limit, tiered / limit);
  }
  return 0;
}
