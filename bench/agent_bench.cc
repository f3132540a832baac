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

  fgpu::net::HttpResponse Call(const std::string& method, const std::string& path, const std::string& body = "") {
    fgpu::net::HttpRequest request;
    request.method = method;
    request.path = path;
    request.body = body;
    request.peer.unix_socket = true;
    request.peer.pid = getpid();
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

}  // namespace

BENCHMARK_MAIN();
