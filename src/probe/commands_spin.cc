// `spin`: an open-loop stream of fixed-length kernels at a target duty cycle, the
// compute workload whose achieved share and latency the scheduler tests measure.
//
// Schedule: kernel i is due at start + i * kernel_us * 100 / duty. A kernel that is
// late launches at once (open loop: lateness is not forgiven by skipping). Kernels
// are launched while both the wall clock and the next due time are before
// start + seconds, so a throttled process runs for `seconds` and launches fewer
// kernels rather than running longer. At most two kernels are in flight: the older
// one is synchronized before a third is launched.
//
// Measurement: latency is launch-to-completion per kernel, with completion seen by
// cuEventSynchronize (when the probe has to wait) or by cuEventQuery polled every
// few microseconds while it waits for the next due time. elapsed ends at the last
// kernel's completion.
#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <thread>
#include <vector>

#include "probe/commands.h"
#include "probe/json_line.h"
#include "probe/spin_ptx.h"

namespace fgpu::probe {

namespace {

using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

constexpr size_t kMaxInFlight = 2;

struct InFlight {
  CUevent event = nullptr;
  Clock::time_point launched;
};

// The module, stream and events of one run, released on every path out.
struct SpinResources {
  explicit SpinResources(const Session& s) : session(s) {}
  ~SpinResources() {
    for (CUevent event : events) {
      if (event != nullptr) FGPU_PROBE_CALL(session, cuEventDestroy_v2, event);
    }
    if (stream != nullptr) FGPU_PROBE_CALL(session, cuStreamDestroy_v2, stream);
    if (module != nullptr) FGPU_PROBE_CALL(session, cuModuleUnload, module);
  }
  SpinResources(const SpinResources&) = delete;
  SpinResources& operator=(const SpinResources&) = delete;

  bool Create() {
    if (!FGPU_PROBE_CALL(session, cuModuleLoadData, &module, kSpinPtx) ||
        !FGPU_PROBE_CALL(session, cuModuleGetFunction, &function, module, kSpinKernelName) ||
        !FGPU_PROBE_CALL(session, cuStreamCreate, &stream, CU_STREAM_NON_BLOCKING)) {
      return false;
    }
    for (CUevent& event : events) {
      if (!FGPU_PROBE_CALL(session, cuEventCreate, &event, CU_EVENT_DISABLE_TIMING)) return false;
    }
    return true;
  }

  const Session& session;
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  CUstream stream = nullptr;
  CUevent events[kMaxInFlight] = {};
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
    const auto period = std::chrono::duration_cast<Clock::duration>(
        Seconds(static_cast<double>(options_.kernel_us) * 1e-6 * 100.0 / options_.duty_percent));
    // Waiting for a due time, completions are polled this often: a twentieth of a
    // kernel, so the latency resolution stays around 5% of the kernel's length.
    const auto poll = std::chrono::microseconds(std::clamp<uint64_t>(options_.kernel_us / 20, 5, 200));
    start_ = Clock::now();
    last_completion_ = start_;
    const Clock::time_point end = start_ + std::chrono::duration_cast<Clock::duration>(Seconds(options_.seconds));
    uint64_t next = 0;
    for (;;) {
      if (!ObserveCompletions()) return false;
      const Clock::time_point now = Clock::now();
      const Clock::time_point due = start_ + period * static_cast<int64_t>(next);
      const bool more = due < end && now < end;
      if (!more && in_flight_.empty()) break;
      if (!more) {
        if (!WaitOldest()) return false;  // draining: a blocking wait is exact
        continue;
      }
      if (now >= due) {
        if (in_flight_.size() == kMaxInFlight && !WaitOldest()) return false;
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
    const auto kernels = static_cast<double>(latencies_us_.size());
    std::sort(latencies_us_.begin(), latencies_us_.end());
    JsonLine line("spin");
    line.Num("target_duty", options_.duty_percent)
        .Num("elapsed_s", elapsed)
        .Uint("kernels", latencies_us_.size())
        .Uint("kernel_us", options_.kernel_us)
        .Num("achieved_duty", elapsed > 0 ? 100.0 * kernels * static_cast<double>(options_.kernel_us) * 1e-6 / elapsed : 0)
        .Num("throughput_kps", elapsed > 0 ? kernels / elapsed : 0);
    line.BeginObject("latency_us")
        .Num("p50", Percentile(latencies_us_, 0.50))
        .Num("p90", Percentile(latencies_us_, 0.90))
        .Num("p99", Percentile(latencies_us_, 0.99))
        .Num("max", latencies_us_.empty() ? 0 : latencies_us_.back())
        .EndObject();
    line.Emit();
  }

 private:
  bool Launch(uint64_t index, void** params) {
    const DriverTable& cu = session_.cu();
    CUevent event = resources_.events[index % kMaxInFlight];
    const Clock::time_point launched = Clock::now();
    if (!session_.Check(cu.cuLaunchKernel(resources_.function, 1, 1, 1, 1, 1, 1, 0, resources_.stream, params,
                                          nullptr),
                        "cuLaunchKernel") ||
        !FGPU_PROBE_CALL(session_, cuEventRecord, event, resources_.stream)) {
      return false;
    }
    in_flight_.push_back({event, launched});
    return true;
  }

  void Complete(Clock::time_point when) {
    latencies_us_.push_back(std::chrono::duration<double, std::micro>(when - in_flight_.front().launched).count());
    last_completion_ = when;
    in_flight_.pop_front();
  }

  // Retires, oldest first, every in-flight kernel that has finished.
  bool ObserveCompletions() {
    while (!in_flight_.empty()) {
      const CUresult rc = session_.cu().cuEventQuery(in_flight_.front().event);
      if (rc == CUDA_ERROR_NOT_READY) return true;
      if (!session_.Check(rc, "cuEventQuery")) return false;
      Complete(Clock::now());
    }
    return true;
  }

  bool WaitOldest() {
    if (!FGPU_PROBE_CALL(session_, cuEventSynchronize, in_flight_.front().event)) return false;
    Complete(Clock::now());
    return true;
  }

  const Session& session_;
  const SpinOptions& options_;
  SpinResources& resources_;
  std::deque<InFlight> in_flight_;
  std::vector<double> latencies_us_;
  Clock::time_point start_;
  Clock::time_point last_completion_;
};

}  // namespace

int RunSpin(const Session& session, const SpinOptions& options) {
  // Microsecond sleeps need a timer slack below the default 50 us.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  SpinResources resources(session);
  if (!resources.Create()) return kExitCudaError;
  SpinRun run(session, options, &resources);
  if (!run.Run()) return kExitCudaError;
  run.Emit();
  return kExitOk;
}

}  // namespace fgpu::probe
