// `spin`: an open-loop stream of fixed-length kernels at a target duty cycle, the
// compute workload whose achieved share and latency the scheduler tests measure.
//
// A launch is one cuLaunchKernel of `fgpu_spin`, or (--graph-kernels G) one
// cuGraphLaunch of a graph built once with G chained `fgpu_spin` kernel nodes: G
// kernels' worth of device time.
//
// Schedule: launch i is due at start + i * device time per launch * 100 / duty. A
// launch that is late happens at once (open loop: lateness is not forgiven by
// skipping). Launches happen while both the wall clock and the next due time are
// before start + seconds, so a throttled process runs for `seconds` and launches
// less rather than running longer. At most --depth launches (default 2) are in
// flight: the oldest is synchronized before another is launched. With --sync-each 1
// every launch is followed by cuStreamSynchronize (as a program that synchronizes
// after every step), so one is in flight at a time.
//
// Measurement: latency is launch-to-completion per launch, with completion seen by
// cuStreamSynchronize (--sync-each), by cuEventSynchronize (when the probe has to
// wait) or by cuEventQuery polled every few microseconds while it waits for the
// next due time. elapsed ends at the last launch's completion. With --window-ms every
// launch is also followed by a timing event, and the device's own clock (cuEventElapsedTime
// from an event recorded at the start) gives each completion for the device duty of each
// window (spin_windows.h): a poll that runs late on a loaded host moves no device time.
#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <optional>
#include <thread>
#include <vector>

#include "probe/commands.h"
#include "probe/host_wait.h"
#include "probe/json_line.h"
#include "probe/spin_ptx.h"
#include "probe/spin_windows.h"

namespace fgpu::probe {

namespace {

using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

struct InFlight {
  CUevent event = nullptr;
  Clock::time_point launched;
};

// The module, stream, events and graph of one run, released on every path out.
struct SpinResources {
  explicit SpinResources(const Session& s) : session(s) {}
  ~SpinResources() {
    if (exec != nullptr) FGPU_PROBE_CALL(session, cuGraphExecDestroy, exec);
    if (graph != nullptr) FGPU_PROBE_CALL(session, cuGraphDestroy, graph);
    for (CUevent event : events) FGPU_PROBE_CALL(session, cuEventDestroy_v2, event);
    if (origin != nullptr) FGPU_PROBE_CALL(session, cuEventDestroy_v2, origin);
    if (stream != nullptr) FGPU_PROBE_CALL(session, cuStreamDestroy_v2, stream);
    if (module != nullptr) FGPU_PROBE_CALL(session, cuModuleUnload, module);
  }
  SpinResources(const SpinResources&) = delete;
  SpinResources& operator=(const SpinResources&) = delete;

  bool Create(const SpinOptions& options) {
    if (!FGPU_PROBE_CALL(session, cuModuleLoadData, &module, kSpinPtx) ||
        !FGPU_PROBE_CALL(session, cuModuleGetFunction, &function, module, kSpinKernelName) ||
        !FGPU_PROBE_CALL(session, cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING)) {
      return false;
    }
    // One event per in-flight slot (one in all with --sync-each, only to time windows); timing
    // events, and an origin event, only when windows are asked for.
    timed = options.window_ms > 0;
    const uint64_t slots = options.sync_each ? (timed ? 1 : 0) : options.depth;
    const unsigned flags = timed ? 0 : CU_EVENT_DISABLE_TIMING;
    events.reserve(slots);
    for (uint64_t i = 0; i < slots; ++i) {
      CUevent event = nullptr;
      if (!FGPU_PROBE_CALL(session, cuEventCreate, &event, flags)) return false;
      events.push_back(event);
    }
    if (timed && !FGPU_PROBE_CALL(session, cuEventCreate, &origin, 0)) return false;
    return options.graph_kernels == 0 || CreateGraph(options.graph_kernels, options.kernel_us * 1000);
  }

  // A chain of `kernels` fgpu_spin nodes (1x1x1, `kernel_ns` each), instantiated.
  bool CreateGraph(uint64_t kernels, uint64_t kernel_ns) {
    if (!FGPU_PROBE_CALL(session, cuGraphCreate, &graph, 0)) return false;
    void* params[] = {&kernel_ns};  // copied into each node when it is added
    CUgraphNode previous = nullptr;
    for (uint64_t i = 0; i < kernels; ++i) {
      CUDA_KERNEL_NODE_PARAMS node{};
      node.func = function;
      node.gridDimX = node.gridDimY = node.gridDimZ = 1;
      node.blockDimX = node.blockDimY = node.blockDimZ = 1;
      node.sharedMemBytes = 0;
      node.kernelParams = params;
      node.extra = nullptr;
      CUgraphNode added = nullptr;
      if (!FGPU_PROBE_CALL(session, cuGraphAddKernelNode_v2, &added, graph, previous == nullptr ? nullptr : &previous,
                           previous == nullptr ? 0 : 1, &node)) {
        return false;
      }
      previous = added;
    }
    return FGPU_PROBE_CALL(session, cuGraphInstantiateWithFlags, &exec, graph, 0);
  }

  const Session& session;
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  CUstream stream = nullptr;
  std::vector<CUevent> events;
  bool timed = false;        // --window-ms: events time completions on the device's clock
  CUevent origin = nullptr;  // recorded at the start: the device clock's zero
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
};

// Nearest-rank percentile of sorted values.
double Percentile(const std::vector<double>& sorted, double fraction) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<size_t>(std::ceil(fraction * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

class SpinRun {
 public:
  SpinRun(const Session& session, const SpinOptions& options, SpinResources* resources)
      : session_(session), options_(options), resources_(*resources) {}

  bool Run() {
    uint64_t kernel_ns = options_.kernel_us * 1000;
    void* params[] = {&kernel_ns};
    const auto launch_us = static_cast<double>(options_.kernel_us * options_.KernelsPerLaunch());
    const auto period =
        std::chrono::duration_cast<Clock::duration>(Seconds(launch_us * 1e-6 * 100.0 / options_.duty_percent));
    // Waiting for a due time, completions are polled this often: a twentieth of a
    // launch, so the latency resolution stays around 5% of the launch's length.
    const auto poll = std::chrono::microseconds(std::clamp<uint64_t>(static_cast<uint64_t>(launch_us) / 20, 5, 200));
    start_ = Clock::now();
    last_completion_ = start_;
    if (resources_.timed && !FGPU_PROBE_CALL(session_, cuEventRecord, resources_.origin, resources_.stream)) {
      return false;
    }
    window_ = std::chrono::duration_cast<Clock::duration>(std::chrono::milliseconds(options_.window_ms));
    next_boundary_ = start_ + window_;
    last_wait_ns_ = ProcessRunQueueWaitNs();
    const Clock::time_point end = start_ + std::chrono::duration_cast<Clock::duration>(Seconds(options_.seconds));
    uint64_t next = 0;
    for (;;) {
      if (!ObserveCompletions()) return false;
      const Clock::time_point now = Clock::now();
      SampleHostWait(now);
      const Clock::time_point due = start_ + period * static_cast<int64_t>(next);
      const bool more = due < end && now < end;
      if (!more && in_flight_.empty()) break;
      if (!more) {
        if (!WaitOldest()) return false;  // draining: a blocking wait is exact
        continue;
      }
      if (now >= due) {
        if (in_flight_.size() >= options_.depth && !WaitOldest()) return false;
        if (!Launch(next, params)) return false;
        ++next;
        continue;
      }
      std::this_thread::sleep_until(in_flight_.empty() ? due : std::min(due, now + poll));
    }
    return true;
  }

  void Emit() {
    const double elapsed = Seconds(last_completion_ - start_).count();
    // Windows run on the device's clock, up to the last completion it gave.
    const double device_elapsed = completions_s_.empty() ? 0 : completions_s_.back();
    const uint64_t launches = latencies_us_.size();
    const uint64_t kernels = launches * options_.KernelsPerLaunch();
    const double launch_s = static_cast<double>(options_.kernel_us * options_.KernelsPerLaunch()) * 1e-6;
    const double busy_s = static_cast<double>(launches) * launch_s;
    std::sort(latencies_us_.begin(), latencies_us_.end());
    JsonLine line("spin");
    line.Num("target_duty", options_.duty_percent)
        .Num("elapsed_s", elapsed)
        .Uint("kernels", kernels)
        .Uint("kernel_us", options_.kernel_us)
        .Num("achieved_duty", elapsed > 0 ? 100.0 * busy_s / elapsed : 0)
        .Num("busy_s", busy_s)
        .Num("throughput_kps", elapsed > 0 ? static_cast<double>(kernels) / elapsed : 0);
    line.BeginObject("latency_us")
        .Num("p50", Percentile(latencies_us_, 0.50))
        .Num("p90", Percentile(latencies_us_, 0.90))
        .Num("p99", Percentile(latencies_us_, 0.99))
        .Num("max", latencies_us_.empty() ? 0 : latencies_us_.back())
        .EndObject();
    line.Uint("launches", launches)
        .Uint("graph_kernels", options_.graph_kernels)
        .Uint("depth", options_.sync_each ? 1 : options_.depth)
        .Bool("sync_each", options_.sync_each);
    if (options_.window_ms > 0) {
      const std::vector<double> windows =
          WindowDuties(completions_s_, launch_s, static_cast<double>(options_.window_ms) * 1e-3, device_elapsed);
      line.BeginArray("windows");
      for (double duty : windows) line.Num("", std::round(duty * 10) / 10);
      line.EndArray();
      if (!host_waits_ms_.empty()) {
        line.BeginArray("host_wait_ms");
        for (size_t i = 0; i < std::min(windows.size(), host_waits_ms_.size()); ++i) {
          line.Num("", std::round(host_waits_ms_[i] * 10) / 10);
        }
        line.EndArray();
      }
    }
    line.Emit();
  }

 private:
  bool Launch(uint64_t index, void** params) {
    const DriverTable& cu = session_.cu();
    const Clock::time_point launched = Clock::now();
    const bool graph = resources_.exec != nullptr;
    const CUresult rc = graph ? cu.cuGraphLaunch(resources_.exec, resources_.stream)
                              : cu.cuLaunchKernel(resources_.function, 1, 1, 1, 1, 1, 1, 0, resources_.stream,
                                                  params, nullptr);
    if (!session_.Check(rc, graph ? "cuGraphLaunch" : "cuLaunchKernel")) return false;
    CUevent event = resources_.events.empty() ? nullptr : resources_.events[index % resources_.events.size()];
    if (event != nullptr && !FGPU_PROBE_CALL(session_, cuEventRecord, event, resources_.stream)) return false;
    if (options_.sync_each) {
      if (!FGPU_PROBE_CALL(session_, cuStreamSynchronize, resources_.stream)) return false;
      return Complete({event, launched}, Clock::now());
    }
    in_flight_.push_back({event, launched});
    return true;
  }

  // At each window boundary the host clock passes, the run-queue wait of the window just ended
  // (host_wait.h); nothing where the kernel keeps no schedstat.
  void SampleHostWait(Clock::time_point now) {
    if (options_.window_ms == 0 || !last_wait_ns_ || now < next_boundary_) return;
    const std::optional<uint64_t> wait_ns = ProcessRunQueueWaitNs();
    if (!wait_ns) {
      last_wait_ns_.reset();
      host_waits_ms_.clear();
      return;
    }
    // A blocking wait may have spanned several boundaries: its wait is spread over them.
    int crossed = 0;
    for (; next_boundary_ <= now; next_boundary_ += window_) ++crossed;
    const double wait_ms = static_cast<double>(*wait_ns - std::min(*wait_ns, *last_wait_ns_)) * 1e-6;
    host_waits_ms_.insert(host_waits_ms_.end(), static_cast<size_t>(crossed), wait_ms / crossed);
    last_wait_ns_ = wait_ns;
  }

  bool Complete(const InFlight& launch, Clock::time_point when) {
    latencies_us_.push_back(std::chrono::duration<double, std::micro>(when - launch.launched).count());
    last_completion_ = when;
    if (!resources_.timed) return true;
    float since_origin_ms = 0;
    if (!FGPU_PROBE_CALL(session_, cuEventElapsedTime, &since_origin_ms, resources_.origin, launch.event)) return false;
    completions_s_.push_back(static_cast<double>(since_origin_ms) * 1e-3);
    return true;
  }

  bool CompleteOldest(Clock::time_point when) {
    const InFlight oldest = in_flight_.front();
    in_flight_.pop_front();
    return Complete(oldest, when);
  }

  // Retires, oldest first, every in-flight launch that has finished.
  bool ObserveCompletions() {
    while (!in_flight_.empty()) {
      const CUresult rc = session_.cu().cuEventQuery(in_flight_.front().event);
      if (rc == CUDA_ERROR_NOT_READY) return true;
      if (!session_.Check(rc, "cuEventQuery")) return false;
      if (!CompleteOldest(Clock::now())) return false;
    }
    return true;
  }

  bool WaitOldest() {
    if (!FGPU_PROBE_CALL(session_, cuEventSynchronize, in_flight_.front().event)) return false;
    return CompleteOldest(Clock::now());
  }

  const Session& session_;
  const SpinOptions& options_;
  SpinResources& resources_;
  std::deque<InFlight> in_flight_;  // empty between launches with --sync-each
  std::vector<double> latencies_us_;
  std::vector<double> completions_s_;  // device clock since the origin event, only with --window-ms
  std::vector<double> host_waits_ms_;  // per window the host clock passed, only with --window-ms
  std::optional<uint64_t> last_wait_ns_;
  Clock::duration window_{};
  Clock::time_point next_boundary_;
  Clock::time_point start_;
  Clock::time_point last_completion_;
};

}  // namespace

int RunSpin(const Session& session, const SpinOptions& options) {
  // Microsecond sleeps need a timer slack below the default 50 us.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  SpinResources resources(session);
  if (!resources.Create(options)) return kExitCudaError;
  SpinRun run(session, options, &resources);
  if (!run.Run()) return kExitCudaError;
  run.Emit();
  return kExitOk;
}

}  // namespace fgpu::probe
