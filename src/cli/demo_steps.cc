#include "cli/demo_steps.h"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "core/units.h"
#include "sim/state/shared_devices.h"

namespace fgpu::cli {

namespace {

using nlohmann::json;

// Generous: a sanitizer build on two busy cores starts a probe in well under a second.
constexpr std::chrono::seconds kProbeTimeout{60};
constexpr uint64_t kShareBytes = 20 * kGiB;
constexpr const char* kShareBytesArg = "20GiB";
constexpr const char* kHoldMs = "1500";
constexpr const char* kSpinSeconds = "2";

std::string PercentText(double value) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(1) << value << "%";
  return text.str();
}

std::string SecondsText(double value) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(2) << value << " s";
  return text.str();
}

std::string Microseconds(double value) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(0) << value << " us";
  return text.str();
}

Result<json> RunForEvent(const DemoContext& demo, const std::vector<std::string>& args,
                         const std::string& name) {
  Result<std::vector<json>> events = demo.probe.Run(args, DeadlineIn(kProbeTimeout));
  if (!events.ok()) return events.status();
  const json* event = FindLastEvent(*events, name);
  if (event == nullptr) return Status::Corrupt("fgpu-probe " + args[0] + " printed no '" + name + "' event");
  return *event;
}

struct SpinResult {
  double achieved_duty = 0;
  uint64_t kernels = 0;
  uint64_t kernel_us = 0;
  double p50_us = 0;
  double p99_us = 0;
};

Result<SpinResult> ReadSpin(const json& event) {
  EventReader reader(event);
  SpinResult spin{reader.Number("achieved_duty"), reader.Uint("kernels"), reader.Uint("kernel_us"),
                  reader.Number("latency_us.p50"), reader.Number("latency_us.p99")};
  if (!reader.status().ok()) return reader.status();
  return spin;
}

struct SpinRound {
  std::vector<std::pair<int, SpinResult>> spinners;  // pid, result
  uint32_t utilization_percent = 0;                  // read from the segment as the last spinner reported
  double busy_s = 0;                                 // device time of all their kernels
  double wall_s = 0;                                 // from starting the spinners to the last report
};

// Runs `count` spinners at once. The utilization is read the moment the last one reports:
// its kernels have just finished, so the window is the busiest one.
Result<SpinRound> SpinTogether(const DemoContext& demo, sim::SharedDevices& segment, int count) {
  const std::vector<std::string> args = {"spin", "--duty", "100", "--seconds", kSpinSeconds};
  const auto started = std::chrono::steady_clock::now();
  std::vector<ProbeProcess> spinners;
  for (int i = 0; i < count; ++i) {
    Result<ProbeProcess> spinner = demo.probe.Start(args);
    if (!spinner.ok()) return spinner.status();
    spinners.push_back(std::move(spinner).value());
  }
  const Deadline deadline = DeadlineIn(kProbeTimeout);
  SpinRound round;
  for (ProbeProcess& spinner : spinners) {
    Result<json> event = spinner.WaitForEvent("spin", deadline);
    if (!event.ok()) return event.status();
    Result<SpinResult> spin = ReadSpin(*event);
    if (!spin.ok()) return spin.status();
    round.busy_s += static_cast<double>(spin->kernels) * static_cast<double>(spin->kernel_us) * 1e-6;
    round.spinners.emplace_back(spinner.pid(), *spin);
  }
  round.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  round.utilization_percent = segment.UtilizationPercent(0, demo.target.config.utilization_period_ns);
  for (ProbeProcess& spinner : spinners) {
    Status finished = spinner.Finish(deadline);
    if (!finished.ok()) return finished;
  }
  return round;
}

}  // namespace

Result<DeviceFacts> ShowDevice(const DemoContext& demo) {
  std::ostream& out = *demo.out;
  out << "\n[1/5] What a CUDA program sees (fgpu-probe info)\n";
  Result<json> info = RunForEvent(demo, {"info"}, "info");
  if (!info.ok()) return info.status();
  EventReader reader(*info);
  const std::string name = reader.String("name");
  const std::string uuid = reader.String("uuid");
  const std::string cc = reader.String("cc");
  const uint64_t sm_count = reader.Uint("sm_count");
  const uint64_t driver_version = reader.Uint("driver_version");
  DeviceFacts facts{reader.Uint("total_mem"), reader.Uint("mem_get_info.free")};
  const bool nvml = reader.Bool("nvml.available");
  if (!reader.status().ok()) return reader.status();
  out << "  device 0: " << name << " (" << uuid << "), compute capability " << cc << ", " << sm_count
      << " SMs, driver version " << driver_version << "\n";
  out << "  cuMemGetInfo: " << FormatByteSize(facts.idle_free) << " free of "
      << FormatByteSize(facts.total_mem) << " (the probe's own context holds the difference)\n";
  if (!nvml) {
    out << "  NVML: not available\n";
    return facts;
  }
  const uint64_t used = reader.Uint("nvml.memory.used");
  const size_t processes = reader.Array("nvml.processes").size();
  if (!reader.status().ok()) return reader.status();
  out << "  NVML: " << FormatByteSize(used) << " used, by " << processes << " process(es)\n";
  return facts;
}

Status ShareMemory(const DemoContext& demo, const DeviceFacts& device) {
  std::ostream& out = *demo.out;
  // 20 GiB each when two fit with room for the contexts; a small configured device gets a
  // quarter of its memory per process instead.
  const uint64_t context = demo.target.config.devices.at(0).context_overhead;
  const bool default_size = 2 * kShareBytes + 3 * context <= device.total_mem;
  const uint64_t bytes = default_size ? kShareBytes : device.total_mem / 4 / kMiB * kMiB;
  const std::string bytes_arg = default_size ? kShareBytesArg : std::to_string(bytes);
  out << "\n[2/5] Two processes hold " << FormatByteSize(bytes)
      << " each at the same time (fgpu-probe alloc)\n";

  const std::vector<std::string> args = {"alloc", "--bytes", bytes_arg, "--hold-ms", kHoldMs};
  std::vector<ProbeProcess> holders;
  for (int i = 0; i < 2; ++i) {
    Result<ProbeProcess> holder = demo.probe.Start(args);
    if (!holder.ok()) return holder.status();
    holders.push_back(std::move(holder).value());
  }
  const Deadline deadline = DeadlineIn(kProbeTimeout);
  for (ProbeProcess& holder : holders) {
    Result<json> holding = holder.WaitForEvent("mem_get_info", deadline);
    if (!holding.ok()) {
      std::string message = holding.status().message();
      if (const json* alloc = holder.LastEvent("alloc")) message += "; its allocation: " + alloc->dump();
      return Status::Unavailable(message);
    }
    EventReader reader(*holding);
    const uint64_t free_bytes = reader.Uint("free");
    if (!reader.status().ok()) return reader.status();
    out << "  pid " << holder.pid() << " allocated " << FormatByteSize(bytes) << "; cuMemGetInfo then said "
        << FormatByteSize(free_bytes) << " free\n";
  }

  // Both hold their memory now (each prints mem_get_info only after allocating); a third
  // process asks NVML who is on the device.
  Result<json> info = RunForEvent(demo, {"info"}, "info");
  if (!info.ok()) return info.status();
  EventReader reader(*info);
  const uint64_t used = reader.Uint("nvml.memory.used");
  const json& processes = reader.Array("nvml.processes");
  if (!reader.status().ok()) return reader.status();
  out << "  NVML, asked by a third process while both hold: " << FormatByteSize(used) << " used\n";
  for (const json& process : processes) {
    EventReader entry(process);
    const uint64_t pid = entry.Uint("pid");
    const uint64_t process_used = entry.Uint("used");
    if (!entry.status().ok()) return entry.status();
    const bool holder = std::ranges::any_of(holders, [pid](const ProbeProcess& candidate) {
      return static_cast<uint64_t>(candidate.pid()) == pid;
    });
    out << "    pid " << pid << ": " << FormatByteSize(process_used)
        << (holder ? " (one of the two)" : " (the asking process's context)") << "\n";
  }
  for (const ProbeProcess& holder : holders) {
    const bool listed = std::ranges::any_of(processes, [&](const json& process) {
      EventReader entry(process);
      return entry.Uint("pid") == static_cast<uint64_t>(holder.pid()) && entry.Uint("used") >= bytes;
    });
    if (!listed) {
      return Status::Unavailable("NVML's process list does not show pid " + std::to_string(holder.pid()) +
                                 " holding " + FormatByteSize(bytes) + ": " + processes.dump());
    }
  }
  for (ProbeProcess& holder : holders) {
    Status finished = holder.Finish(DeadlineIn(kProbeTimeout));
    if (!finished.ok()) return finished;
  }
  out << "  both were in NVML's list with their memory, and exited after holding it " << kHoldMs << " ms\n";
  return Status::Ok();
}

Status FillToOutOfMemory(const DemoContext& demo, const DeviceFacts& device) {
  std::ostream& out = *demo.out;
  out << "\n[3/5] One process allocates until the device refuses (fgpu-probe fill)\n";
  Result<json> fill = RunForEvent(demo, {"fill"}, "fill");
  if (!fill.ok()) return fill.status();
  EventReader reader(*fill);
  const uint64_t chunk = reader.Uint("chunk");
  const uint64_t allocations = reader.Uint("allocations");
  const uint64_t allocated = reader.Uint("allocated_bytes");
  const std::string stop_error = reader.String("stop_error");
  const uint64_t stop_code = reader.Uint("stop_code");
  if (!reader.status().ok()) return reader.status();
  out << "  " << allocations << " allocations of " << FormatByteSize(chunk) << " = "
      << FormatByteSize(allocated) << ", then " << stop_error << " (code " << stop_code << ")\n";
  if (stop_error != "CUDA_ERROR_OUT_OF_MEMORY") {
    return Status::Unavailable("the fill stopped with " + stop_error + ", not CUDA_ERROR_OUT_OF_MEMORY");
  }
  // An idle device offered idle_free in step 1; if the fill gets much less, the memory of
  // the processes of step 2 was not given back when they exited.
  if (allocated > device.idle_free || device.idle_free - allocated >= 2 * chunk) {
    return Status::Unavailable("the fill got " + FormatByteSize(allocated) + " but an idle device offered " +
                               FormatByteSize(device.idle_free) + " in step 1");
  }
  out << "  an idle device offered " << FormatByteSize(device.idle_free) << " in step 1 and the fill left "
      << FormatByteSize(device.idle_free - allocated)
      << " of it: step 2's processes gave their memory back\n";
  return Status::Ok();
}

Status ShareCompute(const DemoContext& demo) {
  std::ostream& out = *demo.out;
  out << "\n[4/5] Compute is time-sliced: processes spinning at 100% duty for " << kSpinSeconds
      << " s (fgpu-probe spin)\n";
  Result<std::unique_ptr<sim::SharedDevices>> segment =
      sim::SharedDevices::Attach(demo.target.config, demo.target.segment);
  if (!segment.ok()) return segment.status();

  Result<SpinRound> alone = SpinTogether(demo, **segment, 1);
  if (!alone.ok()) return alone.status();
  const SpinResult& solo = alone->spinners.at(0).second;
  out << "  alone:    achieved " << PercentText(solo.achieved_duty) << " of the device (" << solo.kernels
      << " kernels, latency p50 " << Microseconds(solo.p50_us) << ", p99 " << Microseconds(solo.p99_us)
      << "); device utilization " << alone->utilization_percent << "%\n";

  Result<SpinRound> pair = SpinTogether(demo, **segment, 2);
  if (!pair.ok()) return pair.status();
  out << "  together:";
  double sum = 0;
  for (const auto& [pid, spin] : pair->spinners) {
    out << " pid " << pid << " " << PercentText(spin.achieved_duty) << " (p50 " << Microseconds(spin.p50_us)
        << ");";
    sum += spin.achieved_duty;
  }
  out << " sum " << PercentText(sum) << "; device utilization " << pair->utilization_percent << "%\n";
  out << "  their kernels took " << SecondsText(pair->busy_s) << " of device time in " << SecondsText(pair->wall_s)
      << " of wall time\n";
  // Every kernel of both ran between the spawn and the last report, so on one device their
  // times cannot add up to more than that interval; no allowance is needed for slow hosts,
  // which only lower the sum. The 2% covers rounding in the probes' reports.
  if (pair->busy_s > pair->wall_s * 1.02) {
    return Status::Unavailable("the two processes' kernels took " + SecondsText(pair->busy_s) +
                               " of device time in " + SecondsText(pair->wall_s) +
                               " of wall time, more than one device has: they did not share its timeline");
  }
  out << "  one device's time, split between the processes, as on a real GPU without MPS\n";
  out << "  (utilization is NVML's view: the share of the last "
      << demo.target.config.utilization_period_ns / 1'000'000
      << " ms a kernel was running, read from the segment)\n";
  return Status::Ok();
}

}  // namespace fgpu::cli
