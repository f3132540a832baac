#include "k8s/plugin/device_plugin.h"

#include <atomic>
#include <mutex>

#include "k8s/deviceplugin/allocator.h"
#include "k8s/kubelet/device_plugin_registrar.h"
#include "k8s/kubelet/unix_grpc_server.h"
#include "k8s/plugin/agent_adapter.h"
#include "k8s/plugin/device_plugin_service.h"
#include "k8s/plugin/plugin_log.h"
#include "k8s/plugin/plugin_metrics.h"
#include "k8s/plugin/plugin_runtime.h"

namespace fgpu::k8s {
int RunDevicePlugin(const DevicePluginOptions& options) {
  if (options.shares_per_gpu < 1 || options.shares_per_gpu > 100) return FailToStart("--shares-per-gpu must be 1..100");
  BlockStopSignals();
  Result<api::AgentClient> agent_client = ConnectAgent(options.agent);
  if (!agent_client.ok()) return FailToStart(agent_client.status().message());
  AgentAdapter agent(std::move(*agent_client));

  AllocatorOptions allocator_options;
  allocator_options.checkpoint_path = options.plugin_dir + "/fgpu-allocations.json";
  allocator_options.edits.read_only_files = options.read_only_files;
  allocator_options.owner_uid = options.owner_uid;
  ShareAllocator allocator(allocator_options, SharePlan(options.shares_per_gpu, {}), &agent);
  DevicePluginService service(&allocator, options.poll_interval);

  const std::string socket = options.plugin_dir + "/" + options.endpoint;
  std::mutex server_mutex;
  Result<std::unique_ptr<UnixGrpcServer>> server = UnixGrpcServer::Start(socket, {&service});
  if (!server.ok()) return FailToStart("cannot serve " + socket + ": " + server.status().message());
  std::unique_ptr<UnixGrpcServer> serving = std::move(*server);

  DevicePluginRegistration registration;
  registration.plugin_dir = options.plugin_dir;
  registration.endpoint = options.endpoint;
  registration.resource_name = options.resource_name;
  registration.get_preferred_allocation_available = true;
  std::atomic<int> kubelet_restarts{0};
  DevicePluginRegistrar::Hooks hooks;
  // A restarted kubelet deleted our socket and dropped its streams: serve afresh, then it
  // registers us again.
  hooks.recreate_endpoint = [&]() -> Status {
    std::lock_guard lock(server_mutex);
    service.EndStreams();
    serving->Shutdown(std::chrono::seconds(1));
    Result<std::unique_ptr<UnixGrpcServer>> again = UnixGrpcServer::Start(socket, {&service});
    if (!again.ok()) return again.status();
    serving = std::move(*again);
    ++kubelet_restarts;
    return Status::Ok();
  };
  hooks.on_register = [](const Status& status) {
    if (status.ok()) {
      Log("INFO", "registered_again", {});
    } else {
      Log("ERROR", "register_failed", {{"reason", status.message()}});
    }
  };
  Result<std::unique_ptr<DevicePluginRegistrar>> registrar = DevicePluginRegistrar::Start(registration, hooks);
  if (!registrar.ok()) return FailToStart("cannot register " + options.resource_name + ": " + registrar.status().message());
  Log("INFO", "registered", {{"resource", options.resource_name}, {"socket", socket}});

  Result<std::unique_ptr<net::HttpServer>> metrics_server = ServeMetrics(options.metrics_listen, [&] {
    const AllocatorCounters counters = allocator.Counters();
    std::string text;
    text += MetricFamily("fgpu_k8s_allocate_seconds", "histogram", "Allocate calls, in seconds.",
                         service.allocate_seconds().Text("fgpu_k8s_allocate_seconds", ""));
    text += MetricFamily("fgpu_k8s_allocations_total", "counter", "Allocate calls for a container (each try, refused ones too).",
                         Sample("fgpu_k8s_allocations_total", "", static_cast<double>(counters.allocations)));
    text += MetricFamily("fgpu_k8s_allocation_errors_total", "counter", "Allocate calls refused.",
                         Sample("fgpu_k8s_allocation_errors_total", "", static_cast<double>(counters.errors)));
    text += MetricFamily("fgpu_k8s_released_slices_total", "counter",
                         "Slices released because the kubelet allocated their shares again.",
                         Sample("fgpu_k8s_released_slices_total", "", static_cast<double>(counters.released)));
    text += MetricFamily("fgpu_k8s_published_devices", "gauge", "Share devices advertised to the kubelet.",
                         Sample("fgpu_k8s_published_devices", "", static_cast<double>(service.advertised())));
    text += MetricFamily("fgpu_k8s_kubelet_restarts_total", "counter", "Kubelet restarts survived.",
                         Sample("fgpu_k8s_kubelet_restarts_total", "", kubelet_restarts.load()));
    return text;
  });
  if (!metrics_server.ok()) return FailToStart(metrics_server.status().message());

  RunUntilSignalled(std::chrono::seconds(1), [] {});
  (*registrar)->Stop();
  std::lock_guard lock(server_mutex);
  service.EndStreams();
  serving->Shutdown(std::chrono::seconds(1));
  return 0;
}

}  // namespace fgpu::k8s
