// The agent's API as value types: every request and reply of docs/agent.md "API", so the agent,
// `fgpu`, the Slurm plugin and the Kubernetes plugin share one spelling of each field. The JSON
// itself is codec.h's; these types hold no JSON and do no I/O.
//
// compute_mode and tier stay strings here: their meaning (and the agent's messages for a bad
// one) belongs to `slice`, which this library may not include; the agent parses them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace fgpu::api {

// A slice's workload environment, in order: (name, value).
using Env = std::vector<std::pair<std::string, std::string>>;

// Whose work a slice holds, for chargeback and for people reading `fgpu status`: a batch
// system's job ("1234.0"), user and account (each 1..63 of [A-Za-z0-9._-], '@' and '+' also in
// user and account; the agent checks), and Kubernetes' namespace, pod and resource claim (each
// up to 253 of [a-z0-9.-], checked by the codec). Empty: not set.
struct Labels {
  std::string job;
  std::string user;
  std::string account;
  std::string kube_namespace;  // "namespace" in JSON
  std::string pod;
  std::string claim;
  // The pod's UID (admins only; up to 64 of [A-Za-z0-9-]): the agent then counts the processes in
  // the pod's cgroup as the slice's, as a Slurm job's cgroup. "pod_uid" in JSON, full view only.
  std::string pod_uid{};

  bool operator==(const Labels&) const = default;
};

// POST /v1/slices.
struct SliceRequest {
  uint64_t memory_bytes = 0;              // required, > 0 ("memory": bytes or "10GiB")
  std::optional<uint32_t> compute;        // 1..100; absent: in proportion to the memory
  std::optional<std::string> compute_mode;  // "share" | "cap"
  std::optional<std::string> tier;          // "batch" | "standard" | "latency"
  std::optional<std::string> tenant;        // absent: "default"
  std::optional<std::string> gpu;           // an NVML index ("0") or a UUID; absent: the agent places it
  // "trusted" (default: beside other slices), "hard" (a MIG instance whole), "exclusive" (a GPU
  // of the exclusive class whole); docs/mig.md "Isolation classes".
  std::optional<std::string> isolation;
  // With hard isolation on a GPU in MIG mode: the instance's profile ("3g.40gb") and, with it,
  // its first memory slice; `gpu` then names the GPU. A dynamic GPU makes the instance
  // (docs/mig.md "Dynamic MIG"); on another the instance must exist.
  std::optional<std::string> mig_profile;
  std::optional<int> mig_start;
  bool release_on_exit = false;
  bool wait = false;
  Labels labels;
  // A uid, or a user name the agent's machine knows (admins: a slice for that user).
  std::optional<std::variant<uint32_t, std::string>> owner;
  // Retrying a create with the same key (and owner) answers the slice already made for it,
  // 1..128 of [A-Za-z0-9._:/-] (docs/agent.md "Idempotent creates").
  std::optional<std::string> idempotency_key;
  // A gang (with `wait`): the `gang_size` requests of one owner naming `gang` are placed all at
  // once or none (docs/governance.md "Gangs"); each gets its own ticket and slice.
  std::optional<std::string> gang;
  std::optional<int> gang_size;

  bool operator==(const SliceRequest&) const = default;
};

// PATCH /v1/slices/{id}: only what is set changes.
struct SliceResize {
  std::optional<uint64_t> memory_bytes;
  std::optional<uint32_t> compute;
  std::optional<std::string> compute_mode;
  std::optional<std::string> tier;

  bool operator==(const SliceResize&) const = default;
};

// What only a slice's owner and admins read of it.
struct SliceDetails {
  int64_t owner_uid = -1;  // -1: made over TCP
  int64_t owner_pid = -1;
  bool release_on_exit = false;
  std::string dir;              // the slice directory (FGPU_SLICE)
  Env env;                      // what its workloads need (workload_env.h)
  std::string idempotency_key;  // "" when created without one

  bool operator==(const SliceDetails&) const = default;
};

// What GET /v1/slices?usage=1 adds: what the slice uses now.
struct SliceUsage {
  uint64_t memory_used_bytes = 0;
  int processes = 0;
  double compute_busy_seconds = 0;
  bool ledger_readable = true;
  std::string ledger_problem;  // owners and admins, when the ledger is unreadable

  bool operator==(const SliceUsage&) const = default;
};

// A slice as the agent answers it. Everyone who may read the API sees the public fields (what
// /metrics shows); `details` only its owner and admins; `usage` only with ?usage=1.
struct Slice {
  std::string id;
  std::string gpu;  // the GPU's UUID
  uint64_t memory_bytes = 0;
  uint32_t compute = 0;
  std::string compute_mode;
  std::string tier;
  std::string tenant;
  std::string isolation;  // "trusted", "hard" or "exclusive" ("" from an agent before the field)
  int64_t created_unix_ms = 0;
  // Seconds its launches waited in the compute gate. The agent always sends it; absent: an agent
  // from before the field (`fgpu status` then shows no THROTTLED column rather than zeros).
  std::optional<double> compute_throttled_seconds;
  bool starved = false;
  // job, user and account are written only with `details` (chargeback is the admins'); the
  // Kubernetes labels are public, as /metrics exports them.
  Labels labels;
  std::optional<SliceDetails> details;
  std::optional<SliceUsage> usage;

  bool operator==(const Slice&) const = default;
};

// 202 to a create with "wait" and no room, and 200 to GET /v1/queue/{ticket} while queued.
struct QueueTicket {
  std::string ticket;
  int position = 0;  // 1 = next

  bool operator==(const QueueTicket&) const = default;
};

// POST /v1/slices: the slice (201, or 200 for an idempotent retry), or a place in the queue.
struct CreateReply {
  std::optional<Slice> slice;
  std::optional<QueueTicket> ticket;
  bool existing = false;  // the slice was made earlier for the same idempotency key

  bool queued() const { return !slice.has_value(); }
};

// One GPU of GET /v1/gpus and what its slices hold.
struct Gpu {
  int index = 0;
  std::string uuid;
  std::string name;
  uint64_t memory_total = 0;
  uint64_t memory_reserved = 0;
  uint32_t compute_reserved = 0;
  bool exclusive = false;
  std::string fenced;  // why stop-loss holds placements off it; "" when not fenced
  int slices = 0;
  // From NVML, for schedulers' selectors; empty or -1 where the driver does not say.
  std::string compute_capability{};  // "9.0"
  std::string driver_version{};      // "550.54.15"
  bool mig_capable = false;
  int minor_number = -1;  // /dev/nvidia<minor_number>
  // How the agent uses it: "shared", "exclusive" or "mig" ("" from an agent before the field).
  // A MIG instance is listed after its GPU, with the GPU's UUID as parent_uuid; the GPU itself
  // takes no slice and says in mig_note why its configured geometry is not applied, if it is not.
  std::string isolation{};
  std::string parent_uuid{};
  std::string mig_profile{};  // "3g.40gb"
  int mig_start = -1;         // first memory slice
  std::string mig_note{};
  // A GPU in MIG mode whose instances are made for the hard-isolation requests that come and
  // destroyed when their last slice ends (no geometry is kept).
  bool mig_dynamic = false;

  bool operator==(const Gpu&) const = default;
};

// GET /v1/health.
struct Health {
  std::string status = "ok";
  int gpus = 0;
  int slices = 0;

  bool operator==(const Health&) const = default;
};

// POST /v1/slices/{id}/join.
struct JoinReply {
  std::string slice;
  int64_t pid = 0;
  std::string cgroup;  // "" when the slice has none

  bool operator==(const JoinReply&) const = default;
};

// One row of GET /v1/usage: usage records summed by one key (a tenant, slice, account, user or
// job; "" for records without one), prorated to the window asked for (docs/agent.md "Chargeback").
struct UsageTotal {
  std::string key;
  double reserved_gpu_seconds = 0;  // wall time x compute share
  double memory_gib_hours = 0;      // memory cap x wall time
  double busy_gpu_seconds = 0;      // measured GPU occupancy
  int64_t records = 0;

  bool operator==(const UsageTotal&) const = default;
};

// PUT /v1/gpus/{gpu}: the exclusive switch.
struct GpuMode {
  bool exclusive = false;

  bool operator==(const GpuMode&) const = default;
};

// One waiting request of GET /v1/queue, in the order the agent will serve them.
struct QueueItem {
  int position = 0;             // 1 = next
  std::string ticket;           // its first characters, to its owner and admins ("" to others)
  int64_t owner_uid = -1;
  uint64_t memory_bytes = 0;
  std::optional<uint32_t> compute{};  // percent of one GPU; absent: from the memory asked
  std::string tier;
  std::string tenant;
  int64_t waited_ms = 0;
  std::string reason;  // why it waits

  bool operator==(const QueueItem&) const = default;
};

// One quota of GET /v1/quotas: what it holds against its nominal and its limit (nominal plus
// borrowing limit), in GPU memory and compute (percent of one GPU).
struct Quota {
  std::string name;
  std::string parent;  // "" at the top
  uint64_t memory_used = 0;
  uint64_t memory_nominal = 0;
  uint64_t memory_limit = 0;
  uint32_t compute_used = 0;
  uint32_t compute_nominal = 0;
  uint32_t compute_limit = 0;

  bool operator==(const Quota&) const = default;
};

// Every 4xx/5xx body: {"error": "..."}.
struct ApiError {
  std::string error;

  bool operator==(const ApiError&) const = default;
};

}  // namespace fgpu::api
