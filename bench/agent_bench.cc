// The agent's costs (issue bars: /metrics < 5 ms and RSS < 30 MB with 100 slices; slice
// creation latency): the real SliceService, store and API in one process, on made-up GPUs,
// against a baseline of an empty agent in the same run.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "agent/access.h"
#include "agent/api.h"
#include "agent/store.h"

namespace {

using fgpu::agent::Api;
using fgpu::agent::GpuState;
using fgpu::agent::SliceService;
using fgpu::agent::Store;

constexpr uint64_t kGiB = uint64_t{1} << 30;

struct Agent {
  std::string dir;
  std::unique_ptr<Store> store;
  std::unique_ptr<SliceService> slices;
  std::unique_ptr<Api> api;

  explicit Agent(int slice_count) {
    dir = "/tmp/fgpu-agent-bench-" + std::to_string(getpid()) + "-" + std::to_string(slice_count);
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    store = std::move(Store::Open(dir + "/agent.db").value());
    std::vector<GpuState> gpus;
    for (int i = 0; i < 8; ++i) gpus.push_back({i, "GPU-bench-" + std::to_string(i), "H100", 80 * kGiB, 0, 0});
    slices = std::make_unique<SliceService>(store.get(), gpus, dir + "/slices");
    api = std::make_unique<Api>(slices.get(), nullptr, dir + "/boards");
    for (int i = 0; i < slice_count; ++i) Call("POST", "/v1/slices", R"({"memory":"1GiB","compute":5})");
  }
  ~Agent() { std::filesystem::remove_all(dir); }

  // As `uid` over the Unix socket (this process's own: root, an admin, when run as root).
  fgpu::net::HttpResponse Call(const std::string& method, const std::string& path, const std::string& body = "",
                               uid_t uid = getuid()) {
    fgpu::net::HttpRequest request;
    request.method = method;
    request.path = path;
    request.body = body;
    request.peer.unix_socket = true;
    request.peer.pid = getpid();
    request.peer.uid = uid;
    return api->Handle(request);
  }
};

double RssMiB() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return 0;
}

void BM_Metrics(benchmark::State& state) {
  Agent agent(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(agent.Call("GET", "/metrics").body.size());
  state.counters["rss_MiB"] = RssMiB();
}
BENCHMARK(BM_Metrics)->Arg(0)->Arg(100)->Unit(benchmark::kMicrosecond);

void BM_ListSlices(benchmark::State& state) {
  Agent agent(static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(agent.Call("GET", "/v1/slices").body.size());
}
BENCHMARK(BM_ListSlices)->Arg(0)->Arg(100)->Unit(benchmark::kMicrosecond);

// Create + delete: two committed transactions and a slice directory each way.
void BM_CreateDeleteSlice(benchmark::State& state) {
  Agent agent(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    const auto created = agent.Call("POST", "/v1/slices", R"({"memory":"1GiB","compute":1})");
    const std::size_t at = created.body.find("\"id\":\"");
    const std::string id = created.body.substr(at + 6, created.body.find('"', at + 6) - at - 6);
    agent.Call("DELETE", "/v1/slices/" + id);
  }
}
BENCHMARK(BM_CreateDeleteSlice)->Arg(0)->Arg(100)->Unit(benchmark::kMillisecond);

// Authorization's own cost per API call (issue 13: < 5 µs): who asks (SO_PEERCRED's uid, its
// name and groups from the per-uid cache) and whether they may change a slice, for a user who
// owns it, another user, and root. Beside it, a whole GET of one slice through the API.
void BM_Authorize(benchmark::State& state) {
  fgpu::agent::AccessPolicy policy;
  policy.admin_group = "fgpu-admin";
  policy.groups["nogroup"].max_compute = 50;
  const fgpu::agent::Access access(policy);
  fgpu::agent::SliceRecord slice;
  slice.id = "s1";
  slice.owner_uid = 65534;
  fgpu::net::HttpRequest request;
  request.method = "PATCH";
  request.path = "/v1/slices/s1";
  request.peer = {true, getpid(), static_cast<uid_t>(state.range(0)), 0, "sock"};
  fgpu::agent::ResizeRequest resize;
  resize.compute_share = 30;
  for (auto _ : state) {
    const fgpu::Result<fgpu::agent::Caller> caller = access.Identify(request);
    benchmark::DoNotOptimize(access.MayResize(*caller, slice, resize).ok());
  }
  state.SetLabel(state.range(0) == 0 ? "root" : state.range(0) == 65534 ? "the owner" : "another user");
}
BENCHMARK(BM_Authorize)->Arg(65534)->Arg(1001)->Arg(0)->Unit(benchmark::kNanosecond);

void BM_GetSlice(benchmark::State& state) {
  Agent agent(1);
  for (auto _ : state) benchmark::DoNotOptimize(agent.Call("GET", "/v1/slices/s1").body.size());
}
BENCHMARK(BM_GetSlice)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
