// Api: the agent's JSON-over-HTTP API (docs/agent.md "API"), as a handler for net::HttpServer.
//
//   GET    / and /dashboard       the dashboard: an HTML page over this API (docs/agent.md "Dashboard")
//   GET    /metrics               Prometheus text (docs/agent.md "Metrics")
//   GET    /v1/usage?since=&until=&by=tenant|slice|account|user|job   chargeback totals (Unix ms; prorated)
//   GET    /v1/health             {"status":"ok","gpus":N,"slices":M}
//   GET    /v1/gpus               GPUs with what their slices reserve
//   PUT    /v1/gpus/{gpu}         {"exclusive": true|false}: no new shared placements on it
//   GET    /v1/slices[?usage=1][&idempotency_key=K]   every slice [with memory used, processes,
//                                  busy seconds] [only the one made for K, to who may read it in full]
//   POST   /v1/slices             {"memory":"10GiB"|bytes,"compute":30,"compute_mode":"share",
//                                  "tier":"standard","tenant":"team-a","gpu":"0",
//                                  "release_on_exit":false,"wait":false,
//                                  "job":"1234.0","user":"alice","account":"physics",
//                                  "namespace","pod","claim" (Kubernetes),
//                                  "idempotency_key":"K"} → 201
//                                  slice (with "env": what its workloads need), or with
//                                  "wait" and no room 202 {"ticket","position"}; 200 and the
//                                  live slice of the same owner already made for K (or 202 and
//                                  its ticket, still queued); 409 when its limits differ or K is
//                                  another owner's
//   GET    /v1/queue/{ticket}     200 {"ticket","position"} while queued; 201 slice once placed
//   DELETE /v1/queue/{ticket}     → 204 (gives up the place, or the slice made for it)
//   GET    /v1/slices/{id}
//   PATCH  /v1/slices/{id}        any of memory, compute, compute_mode, tier → 200
//   DELETE /v1/slices/{id}        → 204
//   POST   /v1/slices/{id}/join   the calling process (Unix socket) becomes a member of the slice
//                                  (moved into its cgroup) → 200 {"slice","pid","cgroup"}
//
//   POST   /v1/slices also takes "owner": a uid or user name (admins: a slice for that user).
//
// Who may call what (Access, docs/security.md): every route checks the caller first. Viewers
// (TCP without the token) read health, GPUs, metrics, the dashboard, usage by tenant or slice
// and every slice's public fields; users (Unix socket) also create slices within their rule and
// read in full, resize and delete their own, and poll or cancel their own queue tickets; admins
// (root, the admin group, TCP with the token) do everything.
//
// Every slice's JSON (GET /v1/slices, /v1/slices/{id}, and the slice a create, a resize or a
// queue poll answers) also has, for anyone who may read it,
// "compute_throttled_seconds" (how long its launches waited in the compute gate, from its board
// row: the counter /metrics shows) and "starved" (stop-loss's starvation detection flags it
// now; false without stop-loss).
//
// Errors are {"error": "..."} with 400 (malformed JSON, a bad field, an unknown field, a body
// nested deeper than kMaxJsonDepth, a path or query that is not UTF-8), 403 (not allowed: the
// reason), 404 (no such slice, GPU or ticket), 405, 409 (no room), 415 (not JSON), 500.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "agent/access.h"
#include "agent/metrics.h"
#include "agent/mig_manager.h"
#include "agent/nvml_client.h"
#include "agent/slice_service.h"
#include "agent/stop_loss.h"
#include "api/codec.h"
#include "api/types.h"
#include "api/workload_env.h"
#include "net/http_message.h"

namespace fgpu::agent {

// What a slice's workloads need besides FGPU_SLICE and CUDA_VISIBLE_DEVICES=<uuid>: the
// interposer to preload and, under the simulator, the variables that reach the simulated GPUs.
// Each slice's JSON carries the whole set as "env" (api/workload_env.h), so a launcher other
// than `fgpu run` (the Slurm plugin, the Kubernetes plugin) starts workloads exactly as fgpu run does.
using WorkloadEnvironment = api::WorkloadSetup;

class Api {
 public:
  // A JSON body nested deeper is refused before it is parsed (the API's bodies are flat).
  static constexpr int kMaxJsonDepth = api::kMaxJsonDepth;

  // `nvml` (may be null: GPU readings are then omitted) and `compute_dir` (the GPUs' compute
  // boards) feed GET /metrics.
  // The usage reader lets a slice's ledger go as soon as the slice is deleted (an observer of
  // `slices`, removed by the destructor).
  explicit Api(SliceService* slices, std::shared_ptr<NvmlClient> nvml = nullptr,
               std::string compute_dir = "/dev/shm/fgpu-compute");
  ~Api();
  Api(const Api&) = delete;
  Api& operator=(const Api&) = delete;
  // Answers the request; a refusal (4xx, 5xx) is logged with its reason and who asked
  // (docs/agent.md "Logs").
  net::HttpResponse Handle(const net::HttpRequest& request);
  // Stop-loss counters for /metrics (none when unset).
  void SetStopLoss(const StopLoss* stop_loss) { stop_loss_ = stop_loss; }
  void SetWorkloadEnvironment(WorkloadEnvironment workload) { workload_ = std::move(workload); }
  // The API server's counters and the board handout's (handed out, refused), for /metrics.
  void SetHttpStats(std::function<net::ServerStats()> stats) { http_stats_ = std::move(stats); }
  void SetBoardStats(std::function<std::pair<uint64_t, uint64_t>()> stats) { board_stats_ = std::move(stats); }
  // Who may do what; until set: root (and TCP with no token) as in AccessPolicy's defaults.
  void SetAccess(std::shared_ptr<const Access> access) { access_ = std::move(access); }
  // Creates go through it (a dynamic MIG GPU's instances are made for hard-isolation requests);
  // unset: straight to the slice service.
  void SetMig(MigManager* mig) { mig_ = mig; }

 private:
  net::HttpResponse Answer(const net::HttpRequest& request);
  net::HttpResponse Route(const net::HttpRequest& request, const Caller& caller);
  net::HttpResponse Health();
  net::HttpResponse ListQueue(const Caller& caller);
  net::HttpResponse ListQuotas();
  net::HttpResponse ListGpus();
  net::HttpResponse SetGpuMode(const net::HttpRequest& request, const Caller& caller, const std::string& gpu);
  net::HttpResponse ListSlices(const net::HttpRequest& request, const Caller& caller);
  net::HttpResponse CreateSlice(const net::HttpRequest& request, const Caller& caller);
  net::HttpResponse OneSlice(const net::HttpRequest& request, const Caller& caller, const std::string& id);
  net::HttpResponse Join(const net::HttpRequest& request, const Caller& caller, const std::string& id);
  net::HttpResponse Queued(const net::HttpRequest& request, const Caller& caller, const std::string& ticket);

  net::HttpResponse Metrics();
  // A slice's JSON: in full (its owner, admins) or its public fields, with the board's throttled
  // time and stop-loss's verdict (read now by the second form).
  api::Slice Describe(const SliceRecord& slice, bool full, uint64_t throttled_ns, bool starved) const;
  nlohmann::json Describe(const SliceRecord& slice, bool full);
  net::HttpResponse Usage(const net::HttpRequest& request, const Caller& caller);

  SliceService* slices_;
  std::shared_ptr<NvmlClient> nvml_;
  UsageReader usage_;
  const StopLoss* stop_loss_ = nullptr;
  MigManager* mig_ = nullptr;
  WorkloadEnvironment workload_;
  std::shared_ptr<const Access> access_ = std::make_shared<Access>(AccessPolicy{});
  std::function<net::ServerStats()> http_stats_;
  std::function<std::pair<uint64_t, uint64_t>()> board_stats_;
  int observer_ = 0;  // the handle of the usage reader's observer of slices_
};

}  // namespace fgpu::agent
