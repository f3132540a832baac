#include "agent/agent.h"

#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <iostream>

#include "agent/api.h"
#include "agent/metrics.h"
#include "agent/nvml_client.h"
#include "agent/sched_placer.h"
#include "agent/slice_service.h"
#include "agent/stop_loss.h"
#include "agent/store.h"
#include "core/units.h"
#include "net/http_client.h"
#include "net/http_server.h"

namespace fgpu::agent {
namespace {

int64_t UnixMsNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The agent's configuration file; absent: the defaults (bypass → evict, 5 s grace, no
// free-memory threshold, starvation not watched).
Result<StopLossPolicy> LoadStopLossPolicy(const std::string& path) {
  StopLossPolicy policy;
  if (path.empty()) return policy;
  std::ifstream file(path);
  if (!file) return Status::NotFound("cannot read the configuration " + path);
  const nlohmann::json config = nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) return Status::InvalidArgument(path + " is not a JSON object");
  if (!config.contains("stop_loss")) return policy;
  const nlohmann::json& stop = config["stop_loss"];
  const auto bad = [&](const std::string& what) { return Status::InvalidArgument(path + ": stop_loss." + what); };
  if (!stop.is_object()) return bad("must be an object");
  for (const auto& [key, value] : stop.items()) {
    if (key == "bypass" && value.is_string() && (value == "evict" || value == "alert")) {
      policy.bypass = value == "evict" ? StopLossPolicy::Bypass::kEvict : StopLossPolicy::Bypass::kAlert;
    } else if (key == "grace_s" && value.is_number() && value.get<double>() >= 0) {
      policy.grace_ms = static_cast<int64_t>(value.get<double>() * 1000);
    } else if (key == "min_free" && value.is_string() && ParseByteSize(value.get<std::string>()).ok()) {
      policy.min_free_bytes = *ParseByteSize(value.get<std::string>());
    } else if (key == "starved_below" && value.is_number() && value.get<double>() >= 0 && value.get<double>() <= 1) {
      policy.starved_below = value.get<double>();
    } else if (key == "starve_window_s" && value.is_number() && value.get<double>() >= 1) {
      policy.starve_window_ms = static_cast<int64_t>(value.get<double>() * 1000);
    } else {
      return bad(key + ": expected bypass \"evict\"|\"alert\", grace_s >= 0, min_free \"2GiB\", starved_below 0..1, "
                       "starve_window_s >= 1");
    }
  }
  return policy;
}

int Fail(const std::string& message) {
  std::cerr << "fgpu agent: " << message << "\n";
  return 1;
}

// Blocks SIGINT/SIGTERM in every thread (the server's threads inherit the mask) and waits for one.
sigset_t StopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  return signals;
}

}  // namespace

int RunAgent(const AgentOptions& options) {
  const sigset_t signals = StopSignals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::error_code error;
  std::filesystem::create_directories(options.state_dir, error);
  if (error) return Fail("cannot create the state directory " + options.state_dir + ": " + error.message());
  Result<std::shared_ptr<NvmlClient>> nvml = NvmlClient::Load();
  if (!nvml.ok()) return Fail(nvml.status().message());
  Result<std::vector<GpuState>> gpus = (*nvml)->Gpus();
  if (!gpus.ok()) return Fail(gpus.status().message());
  Result<std::unique_ptr<Store>> store = Store::Open(options.state_dir + "/agent.db");
  if (!store.ok()) return Fail(store.status().message());
  const char* compute_dir_env = std::getenv("FGPU_COMPUTE_DIR");
  const std::string compute_dir =
      compute_dir_env != nullptr && *compute_dir_env != '\0' ? compute_dir_env : "/dev/shm/fgpu-compute";
  UsageReader busy(compute_dir);
  Result<SchedPlacer> placer = SchedPlacer::Create(options.policy);
  if (!placer.ok()) return Fail("--policy: " + placer.status().message());
  SliceService slices(
      store->get(), *gpus, options.state_dir + "/slices", [&busy](const SliceRecord& slice) { return busy.BusyNs(slice); },
      [&placer](const std::vector<GpuRoom>& rooms, const std::vector<SliceRecord>& held, uint64_t memory,
                uint32_t share) { return placer->Choose(rooms, held, memory, share); });
  if (Status restored = slices.Restore(); !restored.ok()) return Fail("cannot restore the slices: " + restored.message());

  Result<StopLossPolicy> policy = LoadStopLossPolicy(options.config);
  if (!policy.ok()) return Fail(policy.status().message());
  StopLoss stop_loss(&slices, *nvml, *policy, [&busy](const SliceRecord& slice) {
    const SliceUsage usage = busy.Read({slice}).front();
    return ComputeSample{usage.busy_ns, usage.throttled_ns};
  });
  Api api(&slices, *nvml, compute_dir);
  api.SetWorkloadEnvironment({options.workload_preload, options.workload_env});
  api.SetStopLoss(&stop_loss);
  net::HttpServer server([&api](const net::HttpRequest& request) { return api.Handle(request); }, {});
  std::string where;
  if (!options.listen.empty()) {
    Result<net::Endpoint> endpoint = net::ParseEndpoint(options.listen, /*any_port=*/true);
    if (!endpoint.ok() || endpoint->unix_socket) return Fail("--listen wants HOST:PORT, got '" + options.listen + "'");
    if (endpoint->host != "127.0.0.1") return Fail("--listen is loopback only (127.0.0.1): the API has no TLS");
    Result<int> port = server.ListenTcp(endpoint->host, endpoint->port);
    if (!port.ok()) return Fail(port.status().message());
    where = "http://127.0.0.1:" + std::to_string(*port) + " and ";
  }
  const std::string socket = options.socket.empty() ? options.state_dir + "/agent.sock" : options.socket;
  if (Status listening = server.ListenUnix(socket, 0666); !listening.ok()) return Fail(listening.message());
  if (Status started = server.Start(); !started.ok()) return Fail(started.message());
  std::cout << "fgpu agent: placement policy " << placer->policy() << "; " << gpus->size() << " GPU(s), " << slices.List().size() << " slice(s) restored; serving "
            << where << "unix:" << socket << std::endl;

  // Between signals, release the slices whose workloads have exited and serve the queue.
  int received = -1;
  const timespec tick{0, 250'000'000};
  auto next_account = std::chrono::steady_clock::now();
  auto next_check = std::chrono::steady_clock::now();
  while (received < 0) {
    received = sigtimedwait(&signals, nullptr, &tick);
    for (const std::string& id : slices.Reap()) std::cout << "fgpu agent: released slice " << id << std::endl;
    if (std::chrono::steady_clock::now() >= next_check) {
      stop_loss.Tick(UnixMsNow());
      next_check += std::chrono::milliseconds(1000);
    }
    if (std::chrono::steady_clock::now() >= next_account) {
      if (Status billed = slices.Account(UnixMsNow()); !billed.ok()) {
        std::cerr << "fgpu agent: usage records: " << billed.message() << std::endl;
      }
      next_account += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(options.account_interval_s));
    }
  }
  (void)slices.Account(UnixMsNow());  // a clean stop bills up to now
  std::cout << "fgpu agent: stopping (signal " << received << ")" << std::endl;
  server.Stop();
  return 0;
}

}  // namespace fgpu::agent
