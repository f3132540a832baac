// What both Kubernetes plugins need around their gRPC services: the agent's client, the API
// server's client, a /metrics endpoint, and a main loop that runs periodic work until SIGTERM or
// SIGINT (the DaemonSet's stop).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "api/agent_client.h"
#include "core/status.h"
#include "k8s/client/kube_client.h"
#include "net/http_server.h"

namespace fgpu::k8s {

// The agent at `endpoint` ("unix:/run/fgpu/agent.sock").
Result<api::AgentClient> ConnectAgent(const std::string& endpoint);

// The API server from a kubeconfig file, else from the pod's service account.
Result<std::unique_ptr<KubeClient>> ConnectApiServer(const std::string& kubeconfig);

// Serves `text()` as Prometheus text at GET /metrics on `listen` ("127.0.0.1:9478"; port 0 any;
// empty: not served). The bound port is logged.
Result<std::unique_ptr<net::HttpServer>> ServeMetrics(const std::string& listen, std::function<std::string()> text);

// Logs `start_failed reason=<why>` and returns 1, the plugins' exit status when they cannot start.
int FailToStart(const std::string& why);

// Blocks SIGTERM and SIGINT in the calling thread (call before starting threads, so every
// thread inherits the mask), then runs `tick` every `period` until one arrives.
void RunUntilSignalled(std::chrono::milliseconds period, const std::function<void()>& tick);
// The first half alone, for callers that start threads between.
void BlockStopSignals();

}  // namespace fgpu::k8s
