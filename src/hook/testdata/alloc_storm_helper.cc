// fgpu_hook_alloc_storm_helper: many threads of one process allocating and freeing device memory
// through the driver API, for hook_contention_test.cc (run under LD_PRELOAD=libfgpu.so on the
// simulated GPU). Links the simulated libcuda.so.1 by soname, like the other helpers.
//
//   fgpu_hook_alloc_storm_helper [--threads T] [--rounds R] [--size BYTES] [--hold-forever | --fill]
//
// storm (default): cuInit, the primary context of device 0, then T threads (each makes it
//   current) do R rounds of cuMemAlloc_v2(BYTES) → on success a sched_yield (so holders overlap
//   even on few cores; the memory is never touched) → cuMemFree_v2. Prints {"event": "ready"}
//   once the context is up and, at the end, {"event": "storm", "successes", "ooms", ...}.
// --hold-forever: one allocation (retried while refused), {"event": "holding"}, then sleeps
//   until killed.
// --fill: allocates BYTES until refused, prints {"event": "fill", "free_before", "successes"}
//   (free_before: cuMemGetInfo_v2's free before the first allocation), frees them all.
//
// CUDA_ERROR_OUT_OF_MEMORY is the only refusal expected; any other code from any call is a
// failure (message on stderr, exit 1). A refused primary context (the slice was full when this
// process arrived) is retried for up to 10 s and counted as context_ooms. Exit 2: bad arguments.
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/abi/cuda_api.h"

namespace {

constexpr auto kRetryFor = std::chrono::seconds(10);

std::atomic<bool> g_failed{false};

// Reports an unexpected result; returns main's failure status.
int Fail(const char* call, CUresult rc) {
  const char* name = nullptr;
  if (cuGetErrorName(rc, &name) != CUDA_SUCCESS || name == nullptr) name = "?";
  std::fprintf(stderr, "alloc_storm_helper: %s returned %d (%s)\n", call, static_cast<int>(rc), name);
  g_failed.store(true);
  return 1;
}

struct Options {
  int threads = 4;
  long rounds = 1000;
  size_t size = size_t{300} << 20;
  bool hold_forever = false;
  bool fill = false;
};

bool ParseOptions(int argc, char** argv, Options* options) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--threads" && has_value) {
      options->threads = std::atoi(argv[++i]);
    } else if (arg == "--rounds" && has_value) {
      options->rounds = std::atol(argv[++i]);
    } else if (arg == "--size" && has_value) {
      options->size = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--hold-forever") {
      options->hold_forever = true;
    } else if (arg == "--fill") {
      options->fill = true;
    } else {
      return false;
    }
  }
  return options->threads > 0 && options->rounds >= 0 && options->size > 0 &&
         !(options->hold_forever && options->fill);
}

// Retries while `call` answers CUDA_ERROR_OUT_OF_MEMORY (others hold the slice); false on any
// other error or after kRetryFor. `refusals` counts the retries.
template <typename Call>
bool RetryWhileRefused(const char* what, Call call, long* refusals) {
  const auto deadline = std::chrono::steady_clock::now() + kRetryFor;
  for (;;) {
    const CUresult rc = call();
    if (rc == CUDA_SUCCESS) return true;
    if (rc != CUDA_ERROR_OUT_OF_MEMORY || std::chrono::steady_clock::now() > deadline) {
      Fail(what, rc);
      return false;
    }
    ++*refusals;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

void Storm(CUcontext ctx, const Options& options, std::atomic<long>* successes, std::atomic<long>* ooms) {
  CUresult rc = cuCtxSetCurrent(ctx);
  if (rc != CUDA_SUCCESS) {
    Fail("cuCtxSetCurrent", rc);
    return;
  }
  long ok = 0, refused = 0;
  for (long round = 0; round < options.rounds && !g_failed.load(std::memory_order_relaxed); ++round) {
    CUdeviceptr ptr = 0;
    rc = cuMemAlloc_v2(&ptr, options.size);
    if (rc == CUDA_ERROR_OUT_OF_MEMORY) {
      ++refused;
      sched_yield();  // let a holder run to its free, as a real allocator would back off
      continue;
    }
    if (rc != CUDA_SUCCESS) {
      Fail("cuMemAlloc_v2", rc);
      break;
    }
    ++ok;
    sched_yield();
    rc = cuMemFree_v2(ptr);
    if (rc != CUDA_SUCCESS) {
      Fail("cuMemFree_v2", rc);
      break;
    }
  }
  successes->fetch_add(ok);
  ooms->fetch_add(refused);
}

}  // namespace

int main(int argc, char** argv) {
  // No stray holders outliving a crashed or timed-out test.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) return 1;  // the parent is already gone
  Options options;
  if (!ParseOptions(argc, argv, &options)) {
    std::fprintf(stderr,
                 "usage: %s [--threads T] [--rounds R] [--size BYTES] [--hold-forever | --fill]\n",
                 argv[0]);
    return 2;
  }
  CUdevice device = 0;
  CUcontext ctx = nullptr;
  CUresult rc = cuInit(0);
  if (rc != CUDA_SUCCESS) return Fail("cuInit", rc);
  rc = cuDeviceGet(&device, 0);
  if (rc != CUDA_SUCCESS) return Fail("cuDeviceGet", rc);
  long context_ooms = 0;
  if (!RetryWhileRefused("cuDevicePrimaryCtxRetain", [&] { return cuDevicePrimaryCtxRetain(&ctx, device); },
                         &context_ooms)) {
    return 1;
  }
  rc = cuCtxSetCurrent(ctx);
  if (rc != CUDA_SUCCESS) return Fail("cuCtxSetCurrent", rc);

  if (options.hold_forever) {
    CUdeviceptr ptr = 0;
    long refusals = 0;
    if (!RetryWhileRefused("cuMemAlloc_v2", [&] { return cuMemAlloc_v2(&ptr, options.size); }, &refusals)) {
      return 1;
    }
    std::printf("{\"event\": \"holding\", \"size\": %zu, \"refusals\": %ld, \"context_ooms\": %ld}\n",
                options.size, refusals, context_ooms);
    std::fflush(stdout);
    // Until SIGKILL: whatever it holds must come back through reaping. Should the test itself
    // die first, the parent-death signal (set in main) ends this process; the bound is a backstop.
    std::this_thread::sleep_for(std::chrono::minutes(10));
    return 0;
  }

  if (options.fill) {
    // Under the hook: the slice's free memory as this process found it (cap - ledger usage).
    size_t free_before = 0, total = 0;
    rc = cuMemGetInfo_v2(&free_before, &total);
    if (rc != CUDA_SUCCESS) return Fail("cuMemGetInfo_v2", rc);
    std::vector<CUdeviceptr> held;
    for (;;) {
      CUdeviceptr ptr = 0;
      rc = cuMemAlloc_v2(&ptr, options.size);
      if (rc == CUDA_ERROR_OUT_OF_MEMORY) break;
      if (rc != CUDA_SUCCESS) return Fail("cuMemAlloc_v2", rc);
      held.push_back(ptr);
    }
    std::printf(
        "{\"event\": \"fill\", \"size\": %zu, \"free_before\": %zu, \"successes\": %zu, \"context_ooms\": %ld}\n",
        options.size, free_before, held.size(), context_ooms);
    for (CUdeviceptr ptr : held) {
      rc = cuMemFree_v2(ptr);
      if (rc != CUDA_SUCCESS) return Fail("cuMemFree_v2", rc);
    }
  } else {
    std::printf("{\"event\": \"ready\", \"context_ooms\": %ld}\n", context_ooms);
    std::fflush(stdout);
    std::atomic<long> successes{0}, ooms{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < options.threads; ++t) threads.emplace_back(Storm, ctx, options, &successes, &ooms);
    for (std::thread& thread : threads) thread.join();
    std::printf(
        "{\"event\": \"storm\", \"threads\": %d, \"rounds\": %ld, \"size\": %zu, \"successes\": %ld, "
        "\"ooms\": %ld, \"context_ooms\": %ld}\n",
        options.threads, options.rounds, options.size, successes.load(), ooms.load(), context_ooms);
  }
  // A clean exit gives the context back, so its charge returns without any reaping.
  rc = cuDevicePrimaryCtxRelease_v2(device);
  if (rc != CUDA_SUCCESS) Fail("cuDevicePrimaryCtxRelease_v2", rc);
  std::fflush(stdout);
  return g_failed.load() ? 1 : 0;
}
