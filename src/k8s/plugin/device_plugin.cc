#include "k8s/plugin/device_plugin.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "k8s/deviceplugin/allocator.h"
#include "k8s/kubelet/device_plugin_registrar.h"
#include "k8s/kubelet/unix_grpc_server.h"
#include "k8s/plugin/agent_adapter.h"
#include "k8s/plugin/device_plugin_service.h"
#include "k8s/plugin/plugin_log.h"
#include "k8s/plugin/plugin_metrics.h"
#include "k8s/plugin/plugin_runtime.h"

namespace fgpu::k8s {
namespace {

// What one extended resource needs: its allocator, its gRPC service on its own socket, and its
// registration with the kubelet (re-made when the kubelet restarts).
struct ResourceSpec {
  std::string resource_name;  // fgpu.io/gpu, fgpu.io/mig-3g.40gb
  std::string endpoint;       // our socket's name in plugin_dir
  std::string checkpoint;     // its allocations, in plugin_dir
  SharePlan plan;
  std::optional<std::string> isolation;
};

class ResourceServer {
 public:
  static Result<std::unique_ptr<ResourceServer>> Start(const DevicePluginOptions& options, ResourceSpec spec,
                                                       SliceAgent* agent) {
    auto server = std::unique_ptr<ResourceServer>(new ResourceServer(options, std::move(spec), agent));
    if (Status started = server->Serve(options); !started.ok()) return started;
    return server;
  }

  ~ResourceServer() {
    if (registrar_) registrar_->Stop();
    std::lock_guard lock(server_mutex_);
    service_.EndStreams();
    if (serving_) serving_->Shutdown(std::chrono::seconds(1));
  }

  const std::string& resource_name() const { return spec_.resource_name; }
  AllocatorCounters counters() const { return allocator_.Counters(); }
  const DevicePluginService& service() const { return service_; }
  int kubelet_restarts() const { return kubelet_restarts_.load(); }

 private:
  ResourceServer(const DevicePluginOptions& options, ResourceSpec spec, SliceAgent* agent)
      : spec_(std::move(spec)),
        allocator_(AllocatorOptionsOf(options, spec_), spec_.plan, agent),
        service_(&allocator_, options.poll_interval) {}

  static AllocatorOptions AllocatorOptionsOf(const DevicePluginOptions& options, const ResourceSpec& spec) {
    AllocatorOptions allocator;
    allocator.checkpoint_path = options.plugin_dir + "/" + spec.checkpoint;
    allocator.edits.read_only_files = options.read_only_files;
    allocator.owner_uid = options.owner_uid;
    allocator.isolation = spec.isolation;
    return allocator;
  }

  Status Serve(const DevicePluginOptions& options) {
    socket_ = options.plugin_dir + "/" + spec_.endpoint;
    Result<std::unique_ptr<UnixGrpcServer>> server = UnixGrpcServer::Start(socket_, {&service_});
    if (!server.ok()) return Status::Unavailable("cannot serve " + socket_ + ": " + server.status().message());
    serving_ = std::move(*server);
    DevicePluginRegistration registration;
    registration.plugin_dir = options.plugin_dir;
    registration.endpoint = spec_.endpoint;
    registration.resource_name = spec_.resource_name;
    registration.get_preferred_allocation_available = true;
    DevicePluginRegistrar::Hooks hooks;
    // A restarted kubelet deleted our socket and dropped its streams: serve afresh, then it
    // registers us again.
    hooks.recreate_endpoint = [this]() -> Status {
      std::lock_guard lock(server_mutex_);
      service_.EndStreams();
      serving_->Shutdown(std::chrono::seconds(1));
      Result<std::unique_ptr<UnixGrpcServer>> again = UnixGrpcServer::Start(socket_, {&service_});
      if (!again.ok()) return again.status();
      serving_ = std::move(*again);
      ++kubelet_restarts_;
      return Status::Ok();
    };
    hooks.on_register = [resource = spec_.resource_name](const Status& status) {
      if (status.ok()) {
        Log("INFO", "registered_again", {{"resource", resource}});
      } else {
        Log("ERROR", "register_failed", {{"resource", resource}, {"reason", status.message()}});
      }
    };
    Result<std::unique_ptr<DevicePluginRegistrar>> registrar = DevicePluginRegistrar::Start(registration, hooks);
    if (!registrar.ok()) {
      return Status::Unavailable("cannot register " + spec_.resource_name + ": " + registrar.status().message());
    }
    registrar_ = std::move(*registrar);
    Log("INFO", "registered", {{"resource", spec_.resource_name}, {"socket", socket_}});
    return Status::Ok();
  }

  ResourceSpec spec_;
  ShareAllocator allocator_;
  DevicePluginService service_;
  std::string socket_;
  std::mutex server_mutex_;
  std::unique_ptr<UnixGrpcServer> serving_;
  std::unique_ptr<DevicePluginRegistrar> registrar_;
  std::atomic<int> kubelet_restarts_{0};
};

// Every family once, with a series per resource (labelled with its name).
std::string MetricsOf(const std::map<std::string, std::unique_ptr<ResourceServer>>& servers) {
  const auto family = [&](const char* name, const char* type, const char* help, auto value) {
    std::string samples;
    for (const auto& [resource, server] : servers) {
      samples += Sample(name, "resource=\"" + resource + "\"", value(*server));
    }
    return MetricFamily(name, type, help, samples);
  };
  std::string histograms;
  for (const auto& [resource, server] : servers) {
    histograms += server->service().allocate_seconds().Text("fgpu_k8s_allocate_seconds", "resource=\"" + resource + "\"");
  }
  std::string text = MetricFamily("fgpu_k8s_allocate_seconds", "histogram", "Allocate calls, in seconds.", histograms);
  text += family("fgpu_k8s_allocations_total", "counter", "Allocate calls for a container (each try, refused ones too).",
                 [](const ResourceServer& s) { return static_cast<double>(s.counters().allocations); });
  text += family("fgpu_k8s_allocation_errors_total", "counter", "Allocate calls refused.",
                 [](const ResourceServer& s) { return static_cast<double>(s.counters().errors); });
  text += family("fgpu_k8s_released_slices_total", "counter",
                 "Slices released because the kubelet allocated their shares again.",
                 [](const ResourceServer& s) { return static_cast<double>(s.counters().released); });
  text += family("fgpu_k8s_published_devices", "gauge", "Share devices advertised to the kubelet.",
                 [](const ResourceServer& s) { return static_cast<double>(s.service().advertised()); });
  text += family("fgpu_k8s_kubelet_restarts_total", "counter", "Kubelet restarts survived.",
                 [](const ResourceServer& s) { return static_cast<double>(s.kubelet_restarts()); });
  return text;
}

// The MIG profiles the agent has instances of now.
std::set<std::string> MigProfiles(SliceAgent& agent) {
  std::set<std::string> profiles;
  Result<std::vector<PublishedGpu>> gpus = agent.Gpus();
  if (!gpus.ok()) return profiles;
  for (const PublishedGpu& gpu : *gpus) {
    if (!gpu.parent_uuid.empty() && !gpu.mig_profile.empty()) profiles.insert(gpu.mig_profile);
  }
  return profiles;
}

ResourceSpec MigResource(const std::string& profile) {
  std::string name = MigResourceName(profile);
  const std::string local = name.substr(name.find('/') + 1);  // "mig-3g.40gb"
  return {std::move(name), "fgpu-" + local + ".sock", "fgpu-allocations-" + local + ".json",
          SharePlan(1, {}, {ShareScope::Kind::kMigProfile, profile}), std::string("hard")};
}

}  // namespace

int RunDevicePlugin(const DevicePluginOptions& options) {
  if (options.shares_per_gpu < 1 || options.shares_per_gpu > 100) return FailToStart("--shares-per-gpu must be 1..100");
  if (options.mig_strategy != "none" && options.mig_strategy != "mixed") return FailToStart("--mig-strategy must be none or mixed");
  const bool mixed = options.mig_strategy == "mixed";
  BlockStopSignals();
  Result<api::AgentClient> agent_client = ConnectAgent(options.agent);
  if (!agent_client.ok()) return FailToStart(agent_client.status().message());
  AgentAdapter agent(std::move(*agent_client));

  // fgpu.io/gpu: shares of every GPU (none), or of the whole GPUs only (mixed: each MIG profile
  // is a resource of its own, one device per instance, a slice with the whole instance).
  const ShareScope scope{mixed ? ShareScope::Kind::kWholeGpus : ShareScope::Kind::kEveryGpu, ""};
  std::mutex servers_mutex;
  std::map<std::string, std::unique_ptr<ResourceServer>> servers;  // by resource name
  Result<std::unique_ptr<ResourceServer>> shares = ResourceServer::Start(
      options,
      {options.resource_name, options.endpoint, "fgpu-allocations.json", SharePlan(options.shares_per_gpu, {}, scope), std::nullopt},
      &agent);
  if (!shares.ok()) return FailToStart(shares.status().message());
  servers.emplace(options.resource_name, std::move(*shares));
  // A profile seen later (the agent's geometry changed) gets its resource then; one whose
  // instances are gone stays registered with no devices.
  const auto add_mig_resources = [&]() -> Status {
    if (!mixed) return Status::Ok();
    for (const std::string& profile : MigProfiles(agent)) {
      ResourceSpec spec = MigResource(profile);
      std::lock_guard lock(servers_mutex);
      if (servers.count(spec.resource_name) != 0) continue;
      const std::string name = spec.resource_name;
      Result<std::unique_ptr<ResourceServer>> server = ResourceServer::Start(options, std::move(spec), &agent);
      if (!server.ok()) return server.status();
      servers.emplace(name, std::move(*server));
    }
    return Status::Ok();
  };
  if (Status added = add_mig_resources(); !added.ok()) return FailToStart(added.message());

  Result<std::unique_ptr<net::HttpServer>> metrics_server = ServeMetrics(options.metrics_listen, [&] {
    std::lock_guard lock(servers_mutex);
    return MetricsOf(servers);
  });
  if (!metrics_server.ok()) return FailToStart(metrics_server.status().message());

  RunUntilSignalled(std::chrono::seconds(1), [&] {
    if (Status added = add_mig_resources(); !added.ok()) Log("ERROR", "register_failed", {{"reason", added.message()}});
  });
  std::lock_guard lock(servers_mutex);
  servers.clear();
  return 0;
}

}  // namespace fgpu::k8s
