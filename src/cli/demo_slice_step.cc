// Step 5 of `fgpu demo`: the same probe, run by `fgpu run` in a slice with a memory cap,
// sees a GPU of the slice's size and is refused past it — the interposer at work.
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "cli/demo_steps.h"
#include "cli/sim_dir.h"
#include "core/units.h"

namespace fgpu::cli {
namespace {

constexpr uint64_t kSliceBytes = 10ull << 30;
constexpr std::chrono::seconds kSliceTimeout{60};

// fgpu run --memory 10GiB -- fgpu-probe ARGS, read like a probe: `fgpu run` passes the
// probe's stdout through.
[[maybe_unused]] Result<nlohmann::json> RunInSlice(const DemoContext& demo, const std::vector<std::string>& probe_args,
                                  const std::string& event) {
  Result<std::string> self = SelfExecutablePath();
  if (!self.ok()) return self.status();
  std::vector<std::string> args = {"run", "--memory", "10GiB", "--", demo.probe.path()};
  args.insert(args.end(), probe_args.begin(), probe_args.end());
  Result<std::vector<nlohmann::json>> events = ProbeClient(*self).Run(args, DeadlineIn(kSliceTimeout));
  if (!events.ok()) return events.status();
  const nlohmann::json* found = FindLastEvent(*events, event);
  if (found == nullptr) return Status::Corrupt("fgpu run -- fgpu-probe printed no '" + event + "' event");
  return *found;
}

}  // namespace

Status ShowSlice(const DemoContext& demo) {
  std::ostream& out = *demo.out;
  out << "\n[5/5] A slice: `fgpu run --memory 10GiB` runs the probe with libfgpu.so enforcing the cap\n";
#if defined(__SANITIZE_THREAD__)
  out << "  skipped: a ThreadSanitizer build cannot preload an instrumented libfgpu.so\n";
  return Status::Ok();
#else
#if defined(__SANITIZE_ADDRESS__)
  // An AddressSanitizer build preloads an instrumented libfgpu.so into an instrumented probe.
  setenv("ASAN_OPTIONS", "verify_asan_link_order=0", 0);
#endif
  Result<nlohmann::json> info = RunInSlice(demo, {"info"}, "info");
  if (!info.ok()) return info.status();
  EventReader view(*info);
  const uint64_t total = view.Uint("mem_get_info.total");
  const uint64_t free = view.Uint("mem_get_info.free");
  const uint64_t nvml_total = view.Uint("nvml.memory.total");
  if (!view.status().ok()) return view.status();
  out << "  inside the slice cuMemGetInfo says " << FormatByteSize(free) << " free of " << FormatByteSize(total)
      << ", NVML says " << FormatByteSize(nvml_total) << " total: the workload sees a 10 GiB GPU\n";
  if (total != kSliceBytes || nvml_total != kSliceBytes) {
    return Status::Unavailable("the slice's virtual device reports " + FormatByteSize(total) + ", not 10 GiB");
  }
  Result<nlohmann::json> fill = RunInSlice(demo, {"fill", "--chunk", "512MiB"}, "fill");
  if (!fill.ok()) return fill.status();
  EventReader reader(*fill);
  const uint64_t allocated = reader.Uint("allocated_bytes");
  const std::string stop = reader.String("stop_error");
  if (!reader.status().ok()) return reader.status();
  out << "  fill got " << FormatByteSize(allocated) << " (the cap minus the context the hook measured), then "
      << stop << "\n";
  if (stop != "CUDA_ERROR_OUT_OF_MEMORY" || allocated > kSliceBytes) {
    return Status::Unavailable("the slice's fill got " + FormatByteSize(allocated) + " and stopped with " + stop);
  }
  out << "  the physical GPU had ~80 GiB free; the slice held the workload to 10 GiB\n";
  return Status::Ok();
#endif
}

}  // namespace fgpu::cli
