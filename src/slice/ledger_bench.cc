// Ledger hot path, uncontended: one Reserve + Release pair, against the cheapest thing an
// admission counter could be (a std::atomic fetch_add / fetch_sub pair) measured in the same run.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <string>

#include "core/units.h"
#include "slice/slice.h"

namespace fgpu::slice {
namespace {

// One slice for the whole run, in a private temporary directory removed at exit.
Ledger* BenchLedger() {
  static Ledger* ledger = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "fgpu-slice-bench-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    static std::string dir = pattern;
    std::atexit([] { std::filesystem::remove_all(dir); });
    SliceSpec spec;
    spec.id = "bench";
    spec.devices.push_back(DeviceLimit{"GPU-bench", 80 * kGiB, 100});
    Result<SliceAdmin> admin = SliceAdmin::Create(dir + "/slice", spec);
    if (!admin.ok()) std::abort();
    Result<Ledger*> attached = Ledger::Attach((dir + "/slice").c_str());
    if (!attached.ok()) std::abort();
    return *attached;
  }();
  return ledger;
}

void BM_LedgerReserveRelease(benchmark::State& state) {
  Ledger* ledger = BenchLedger();
  for (auto _ : state) {
    const bool admitted = ledger->Reserve(0, kMiB);
    benchmark::DoNotOptimize(admitted);
    ledger->Release(0, kMiB);
  }
  if (ledger->Used(0) != 0) state.SkipWithError("ledger not back to zero");
}
BENCHMARK(BM_LedgerReserveRelease);

void BM_LedgerCapAndUsed(benchmark::State& state) {
  Ledger* ledger = BenchLedger();
  for (auto _ : state) {
    benchmark::DoNotOptimize(ledger->Cap(0));
    benchmark::DoNotOptimize(ledger->Used(0));
  }
}
BENCHMARK(BM_LedgerCapAndUsed);

// Baseline: an unconditional shared counter (no cap check, no crash safety).
void BM_AtomicFetchAddBaseline(benchmark::State& state) {
  static std::atomic<uint64_t> counter{0};
  for (auto _ : state) {
    benchmark::DoNotOptimize(counter.fetch_add(kMiB, std::memory_order_acq_rel));
    counter.fetch_sub(kMiB, std::memory_order_acq_rel);
  }
}
BENCHMARK(BM_AtomicFetchAddBaseline);

}  // namespace
}  // namespace fgpu::slice

BENCHMARK_MAIN();
