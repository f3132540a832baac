#include "k8s/plugin/plugin_runtime.h"

#include <signal.h>

#include <ctime>

#include "k8s/client/kube_config.h"
#include "k8s/plugin/plugin_log.h"
#include "net/http_client.h"

namespace fgpu::k8s {

Result<api::AgentClient> ConnectAgent(const std::string& endpoint) {
  Result<net::Endpoint> parsed = net::ParseEndpoint(endpoint);
  if (!parsed.ok()) return Status::InvalidArgument("--agent: " + parsed.status().message());
  return api::AgentClient(*parsed, /*timeout_ms=*/10'000);
}

Result<std::unique_ptr<KubeClient>> ConnectApiServer(const std::string& kubeconfig) {
  Result<KubeConfig> config = kubeconfig.empty() ? InClusterConfig() : LoadKubeconfig(kubeconfig);
  if (!config.ok()) {
    return Status::WithCode(config.status().code(),
                            (kubeconfig.empty() ? "in-cluster configuration: " : "--kubeconfig " + kubeconfig + ": ") +
                                config.status().message());
  }
  config->user_agent = "fgpu-k8s-plugin";
  return KubeClient::FromConfig(*config);
}

Result<std::unique_ptr<net::HttpServer>> ServeMetrics(const std::string& listen, std::function<std::string()> text) {
  if (listen.empty()) return std::unique_ptr<net::HttpServer>();
  Result<net::Endpoint> endpoint = net::ParseEndpoint(listen, /*any_port=*/true);
  if (!endpoint.ok() || endpoint->unix_socket) return Status::InvalidArgument("--metrics must be host:port, not '" + listen + "'");
  auto server = std::make_unique<net::HttpServer>(
      [text = std::move(text)](const net::HttpRequest& request) {
        net::HttpResponse response;
        if (request.method != "GET" || request.path != "/metrics") {
          response.status = 404;
          response.body = "{\"error\":\"only GET /metrics is served here\"}";
          return response;
        }
        response.status = 200;
        response.content_type = "text/plain; version=0.0.4";
        response.body = text();
        return response;
      },
      net::HttpServer::Options{});
  Result<int> port = server->ListenTcp(endpoint->host, endpoint->port);
  if (!port.ok()) return port.status();
  if (Status started = server->Start(); !started.ok()) return started;
  Log("INFO", "metrics_listening", {{"address", endpoint->host + ":" + std::to_string(*port)}});
  return server;
}

int FailToStart(const std::string& why) {
  Log("ERROR", "start_failed", {{"reason", why}});
  return 1;
}

void BlockStopSignals() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
}

void RunUntilSignalled(std::chrono::milliseconds period, const std::function<void()>& tick) {
  BlockStopSignals();
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  const timespec wait{static_cast<time_t>(period.count() / 1000), static_cast<long>(period.count() % 1000) * 1'000'000};
  while (true) {
    tick();
    const int signal = sigtimedwait(&stop, nullptr, &wait);
    if (signal == SIGTERM || signal == SIGINT) {
      Log("INFO", "stopping", {{"signal", signal == SIGTERM ? "SIGTERM" : "SIGINT"}});
      return;
    }
  }
}

}  // namespace fgpu::k8s
