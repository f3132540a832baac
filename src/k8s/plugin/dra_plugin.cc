#include "k8s/plugin/dra_plugin.h"

#include <sys/stat.h>

#include <atomic>

#include "k8s/dra/driver.h"
#include "k8s/dra/publisher.h"
#include "k8s/kubelet/registration_server.h"
#include "k8s/kubelet/unix_grpc_server.h"
#include "k8s/plugin/agent_adapter.h"
#include "k8s/plugin/dra_service.h"
#include "k8s/plugin/kube_adapter.h"
#include "k8s/plugin/plugin_log.h"
#include "k8s/plugin/plugin_metrics.h"
#include "k8s/plugin/plugin_runtime.h"

namespace fgpu::k8s {
namespace {

struct DraMetrics {
  const DraDriver* driver;
  const SlicePublisher* publisher;
  const DraServiceStats* stats;
  const std::atomic<bool>* registered;

  std::string Text() const {
    const DriverCounters counters = driver->Counters();
    const PublisherCounters published = publisher->Counters();
    const std::string driver_label = "driver=\"gpu.fgpu.io\",";
    std::string text;
    text += MetricFamily("fgpu_k8s_prepare_seconds", "histogram", "NodePrepareResources per claim, in seconds.",
                         stats->prepare_seconds.Text("fgpu_k8s_prepare_seconds", driver_label));
    text += MetricFamily("fgpu_k8s_unprepare_seconds", "histogram", "NodeUnprepareResources per claim, in seconds.",
                         stats->unprepare_seconds.Text("fgpu_k8s_unprepare_seconds", driver_label));
    text += MetricFamily("fgpu_k8s_prepares_total", "counter", "Claims prepared (each try).",
                         Sample("fgpu_k8s_prepares_total", "", static_cast<double>(counters.prepares)));
    text += MetricFamily("fgpu_k8s_prepare_errors_total", "counter", "Claims whose preparation failed.",
                         Sample("fgpu_k8s_prepare_errors_total", "", static_cast<double>(counters.prepare_errors)));
    text += MetricFamily("fgpu_k8s_unprepares_total", "counter", "Claims unprepared (each try).",
                         Sample("fgpu_k8s_unprepares_total", "", static_cast<double>(counters.unprepares)));
    text += MetricFamily("fgpu_k8s_unprepare_errors_total", "counter", "Claims whose release failed.",
                         Sample("fgpu_k8s_unprepare_errors_total", "", static_cast<double>(counters.unprepare_errors)));
    text += MetricFamily("fgpu_k8s_reconcile_released_slices_total", "counter",
                         "Slices released because their claim was gone or no longer allocated here.",
                         Sample("fgpu_k8s_reconcile_released_slices_total", "",
                                static_cast<double>(counters.reconcile_released)));
    text += MetricFamily("fgpu_k8s_published_devices", "gauge", "Devices in the node's ResourceSlice.",
                         Sample("fgpu_k8s_published_devices", "", static_cast<double>(published.devices)));
    text += MetricFamily("fgpu_k8s_pool_generation", "gauge", "The pool generation last published.",
                         Sample("fgpu_k8s_pool_generation", "", static_cast<double>(published.generation)));
    text += MetricFamily("fgpu_k8s_publishes_total", "counter", "ResourceSlice writes.",
                         Sample("fgpu_k8s_publishes_total", "", static_cast<double>(published.publishes)));
    text += MetricFamily("fgpu_k8s_publish_errors_total", "counter", "Failed attempts to read the agent or write the ResourceSlice.",
                         Sample("fgpu_k8s_publish_errors_total", "", static_cast<double>(published.errors)));
    text += MetricFamily("fgpu_k8s_registered", "gauge", "1 while the kubelet has the plugin registered.",
                         Sample("fgpu_k8s_registered", "", registered->load() ? 1 : 0));
    return text;
  }
};

}  // namespace

int RunDraPlugin(const DraPluginOptions& options) {
  if (options.node_name.empty()) return FailToStart("--node-name (or NODE_NAME) is required");
  BlockStopSignals();  // before any thread starts, so all inherit it
  Result<api::AgentClient> agent_client = ConnectAgent(options.agent);
  if (!agent_client.ok()) return FailToStart(agent_client.status().message());
  Result<std::unique_ptr<KubeClient>> kube = ConnectApiServer(options.kubeconfig);
  if (!kube.ok()) return FailToStart(kube.status().message());
  for (const std::string& dir : {options.plugin_dir, options.cdi_dir}) {
    if (::mkdir(dir.c_str(), 0750) != 0 && errno != EEXIST) return FailToStart("cannot create " + dir);
  }

  AgentAdapter agent(std::move(*agent_client));
  KubeAdapter cluster(kube->get(), options.node_name);
  DraOptions driver_options;
  driver_options.node = options.node_name;
  driver_options.cdi_dir = options.cdi_dir;
  driver_options.edits.read_only_files = options.read_only_files;
  driver_options.default_owner_uid = options.default_owner_uid;
  driver_options.claims = options.claims;
  DraDriver driver(driver_options, &agent, &cluster);
  SlicePublisher publisher(options.node_name, options.policy, &agent, &cluster);

  const ReconcileReport first = driver.Reconcile();
  Log(first.errors.empty() ? "INFO" : "WARN", "reconciled",
      {{"kept", std::to_string(first.slices_kept)},
       {"released", std::to_string(first.slices_released)},
       {"specs_removed", std::to_string(first.specs_removed)},
       {"errors", first.errors.empty() ? "" : first.errors.front()}});

  DraServiceStats stats;
  DraServiceV1 v1(&driver, &stats);
  DraServiceV1beta1 v1beta1(&driver, &stats);
  const std::string socket = options.plugin_dir + "/dra.sock";
  Result<std::unique_ptr<UnixGrpcServer>> server = UnixGrpcServer::Start(socket, {&v1, &v1beta1});
  if (!server.ok()) return FailToStart("cannot serve " + socket + ": " + server.status().message());

  std::atomic<bool> registered{false};
  PluginInfo info{kDraPluginType, kDriverName, socket, {kDraV1Service, kDraV1beta1Service}};
  Result<std::unique_ptr<RegistrationServer>> registration =
      RegistrationServer::Start(options.registry_dir, info, [&registered](const RegistrationReport& report) {
        registered.store(report.registered);
        if (report.registered) {
          Log("INFO", "registered", {{"driver", kDriverName}});
        } else {
          Log("ERROR", "registration_refused", {{"reason", report.error}});
        }
      });
  if (!registration.ok()) return FailToStart("cannot register with the kubelet: " + registration.status().message());

  DraMetrics metrics{&driver, &publisher, &stats, &registered};
  Result<std::unique_ptr<net::HttpServer>> metrics_server =
      ServeMetrics(options.metrics_listen, [&metrics] { return metrics.Text(); });
  if (!metrics_server.ok()) return FailToStart(metrics_server.status().message());
  Log("INFO", "serving", {{"socket", socket}, {"node", options.node_name}, {"agent", options.agent}});

  auto last_reconcile = std::chrono::steady_clock::now();
  std::string last_publish_error;
  RunUntilSignalled(options.publish_interval, [&] {
    Result<bool> published = publisher.PublishOnce();
    if (!published.ok() && published.status().message() != last_publish_error) {
      Log("WARN", "publish_failed", {{"reason", published.status().message()}});
    } else if (published.ok() && *published) {
      Log("INFO", "published", {{"generation", std::to_string(publisher.Counters().generation)},
                                {"devices", std::to_string(publisher.Counters().devices)}});
    }
    last_publish_error = published.ok() ? "" : published.status().message();
    if (std::chrono::steady_clock::now() - last_reconcile >= options.reconcile_interval) {
      last_reconcile = std::chrono::steady_clock::now();
      const ReconcileReport report = driver.Reconcile();
      if (report.slices_released > 0 || !report.errors.empty()) {
        Log(report.errors.empty() ? "INFO" : "WARN", "reconciled",
            {{"kept", std::to_string(report.slices_kept)},
             {"released", std::to_string(report.slices_released)},
             {"errors", report.errors.empty() ? "" : report.errors.front()}});
      }
    }
  });
  (*registration)->Stop();
  (*server)->Shutdown(std::chrono::seconds(2));
  return 0;
}

}  // namespace fgpu::k8s
