#include "agent/metrics.h"

#include <limits.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <memory>
#include <sstream>

#include "compute/board.h"
#include "slice/compute_spec.h"

namespace fgpu::agent {
namespace {

std::string Escape(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// Integers exactly (byte counts exceed the default 6 significant digits), others in full.
std::string Number(double value) {
  if (value == static_cast<double>(static_cast<int64_t>(value)) && value < 9.0e15 && value > -9.0e15) {
    return std::to_string(static_cast<int64_t>(value));
  }
  std::ostringstream text;
  text.precision(17);
  text << value;
  return text.str();
}

class Exposition {
 public:
  // Starts a family; samples follow with Sample().
  void Family(const char* name, const char* type, const char* help) {
    out_ << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
    name_ = name;
  }
  void Sample(const std::vector<std::pair<std::string, std::string>>& labels, double value) {
    out_ << name_;
    if (!labels.empty()) {
      out_ << "{";
      for (std::size_t i = 0; i < labels.size(); ++i) {
        out_ << (i ? "," : "") << labels[i].first << "=\"" << Escape(labels[i].second) << "\"";
      }
      out_ << "}";
    }
    out_ << " " << Number(value) << "\n";
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
  std::string name_;
};

using Labels = std::vector<std::pair<std::string, std::string>>;

Labels GpuLabels(const GpuState& gpu) {
  return {{"gpu", std::to_string(gpu.index)}, {"uuid", gpu.uuid}, {"name", gpu.name}};
}

// A slice's series carry the Kubernetes namespace, pod and claim only when set: Prometheus
// treats an empty label as an absent one, so leaving them out changes no existing series of a
// Slurm or `fgpu run` slice (docs/agent.md "Metrics").
Labels SliceLabels(const SliceRecord& slice) {
  Labels labels = {{"slice", slice.id}, {"gpu", slice.gpu_uuid}, {"tenant", slice.tenant},
                   {"tier", slice::ToString(slice.tier)}};
  const std::pair<const char*, const std::string*> kube[] = {
      {"namespace", &slice.kube.kube_namespace}, {"pod", &slice.kube.pod}, {"claim", &slice.kube.claim}};
  for (const auto& [name, value] : kube) {
    if (!value->empty()) labels.emplace_back(name, *value);
  }
  return labels;
}

void GpuFamilies(const MetricsSnapshot& snapshot, Exposition& out) {
  out.Family("fgpu_gpu_memory_total_bytes", "gauge", "Memory of the GPU, as NVML reports it.");
  for (const GpuState& gpu : snapshot.gpus) out.Sample(GpuLabels(gpu), static_cast<double>(gpu.memory_total));
  out.Family("fgpu_gpu_memory_used_bytes", "gauge", "Memory in use on the GPU, as NVML reports it (every process).");
  for (const GpuState& gpu : snapshot.gpus) out.Sample(GpuLabels(gpu), static_cast<double>(gpu.memory_used));
  out.Family("fgpu_gpu_utilization_ratio", "gauge", "NVML utilization: share of time some kernel ran (0..1).");
  for (const GpuState& gpu : snapshot.gpus) {
    if (gpu.utilization_pct >= 0) out.Sample(GpuLabels(gpu), gpu.utilization_pct / 100.0);
  }
  out.Family("fgpu_gpu_memory_reserved_bytes", "gauge", "Sum of the memory caps of the GPU's slices.");
  for (const GpuRoom& room : snapshot.rooms) out.Sample(GpuLabels(room.gpu), static_cast<double>(room.memory_reserved));
  out.Family("fgpu_gpu_compute_reserved_ratio", "gauge", "Sum of the compute shares of the GPU's slices (0..1).");
  for (const GpuRoom& room : snapshot.rooms) out.Sample(GpuLabels(room.gpu), room.compute_reserved / 100.0);
  out.Family("fgpu_gpu_exclusive", "gauge", "1 when the GPU is switched out of sharing (no new placements).");
  for (const GpuRoom& room : snapshot.rooms) out.Sample(GpuLabels(room.gpu), room.exclusive ? 1 : 0);
  out.Family("fgpu_gpu_fenced", "gauge",
             "1 while stop-loss holds new placements off the GPU (free memory under the threshold, a starved slice).");
  for (const GpuRoom& room : snapshot.rooms) out.Sample(GpuLabels(room.gpu), room.fenced.empty() ? 0 : 1);
  out.Family("fgpu_gpu_slices", "gauge", "Slices placed on the GPU.");
  for (const GpuRoom& room : snapshot.rooms) out.Sample(GpuLabels(room.gpu), room.slices);
  // Each placement target's class, and a MIG instance's GPU, profile and memory: join a slice's
  // `gpu` (its target's UUID) to `uuid` here to group slices by instance or by physical GPU.
  out.Family("fgpu_gpu_class_info", "gauge",
             "1 per placement target: its isolation class (shared, exclusive, mig); a MIG instance also "
             "names its GPU (parent_uuid), profile and first memory slice; a GPU whose instances are made "
             "per request has dynamic=\"true\".");
  for (const GpuRoom& room : snapshot.rooms) {
    Labels labels = GpuLabels(room.gpu);
    labels.emplace_back("class", std::string(ToString(room.gpu.isolation)));
    if (!room.gpu.parent_uuid.empty()) {
      labels.emplace_back("parent_uuid", room.gpu.parent_uuid);
      labels.emplace_back("profile", room.gpu.mig_profile);
      labels.emplace_back("start", std::to_string(room.gpu.mig_start));
    } else if (room.gpu.mig_dynamic) {
      labels.emplace_back("dynamic", "true");  // its instances come and go with the requests
    }
    out.Sample(labels, 1);
  }
  out.Family("fgpu_mig_instance_memory_total_bytes", "gauge", "Memory of a MIG instance, as NVML reports it.");
  for (const GpuRoom& room : snapshot.rooms) {
    if (!room.gpu.parent_uuid.empty()) out.Sample(GpuLabels(room.gpu), static_cast<double>(room.gpu.memory_total));
  }
  out.Family("fgpu_gpu_mig_geometry_pending", "gauge",
             "1 when a MIG GPU's configured geometry is not (all) applied (fgpu status says why).");
  for (const GpuRoom& room : snapshot.rooms) {
    if (room.gpu.isolation == IsolationClass::kMig && room.gpu.parent_uuid.empty()) {
      out.Sample(GpuLabels(room.gpu), room.gpu.mig_note.empty() ? 0 : 1);
    }
  }
}

void SliceFamilies(const MetricsSnapshot& snapshot, Exposition& out) {
  const auto each = [&](const char* name, const char* type, const char* help, auto value) {
    out.Family(name, type, help);
    for (std::size_t i = 0; i < snapshot.slices.size(); ++i) {
      out.Sample(SliceLabels(snapshot.slices[i]), value(snapshot.slices[i], snapshot.usage[i]));
    }
  };
  each("fgpu_slice_memory_cap_bytes", "gauge", "The slice's memory cap.",
       [](const SliceRecord& s, const SliceUsage&) { return static_cast<double>(s.memory_bytes); });
  each("fgpu_slice_memory_used_bytes", "gauge", "Memory charged to the slice in its ledger.",
       [](const SliceRecord&, const SliceUsage& u) { return static_cast<double>(u.memory_used); });
  each("fgpu_slice_compute_share_ratio", "gauge", "The slice's compute share (0..1).",
       [](const SliceRecord& s, const SliceUsage&) { return s.compute_share / 100.0; });
  each("fgpu_slice_compute_cap", "gauge", "1 when the share is a cap (never more), 0 when a guarantee.",
       [](const SliceRecord& s, const SliceUsage&) { return s.compute_mode == slice::ComputeMode::kCap ? 1.0 : 0.0; });
  each("fgpu_slice_compute_busy_seconds_total", "counter",
       "Measured GPU occupancy of the slice's work; its rate is the achieved share.",
       [](const SliceRecord&, const SliceUsage& u) { return static_cast<double>(u.busy_ns) / 1e9; });
  each("fgpu_slice_compute_throttled_seconds_total", "counter", "Time the slice's launches waited in the compute gate.",
       [](const SliceRecord&, const SliceUsage& u) { return static_cast<double>(u.throttled_ns) / 1e9; });
  each("fgpu_slice_launches_total", "counter", "Kernel and graph launches of the slice, measured.",
       [](const SliceRecord&, const SliceUsage& u) { return static_cast<double>(u.launches); });
  each("fgpu_slice_processes", "gauge", "Live processes of the slice (ledger slots).",
       [](const SliceRecord&, const SliceUsage& u) { return static_cast<double>(u.processes); });
  each("fgpu_slice_ledger_readable", "gauge", "0 when the slice's ledger cannot be read (degraded: usage unknown).",
       [](const SliceRecord&, const SliceUsage& u) { return u.ledger_readable ? 1.0 : 0.0; });
}

// The interposer's counters, kept in each slice's ledger; no sample for a slice whose ledger
// cannot be read (fgpu_slice_ledger_readable 0 says so), rather than a 0 that would read as
// "nothing happened".
void InterposerFamilies(const MetricsSnapshot& snapshot, Exposition& out) {
  const auto readable = [&](auto sample) {
    for (std::size_t i = 0; i < snapshot.slices.size(); ++i) {
      if (snapshot.usage[i].ledger_readable) sample(snapshot.slices[i], snapshot.usage[i].counters);
    }
  };
  out.Family("fgpu_slice_oom_refusals_total", "counter",
             "Allocations the interposer refused with CUDA_ERROR_OUT_OF_MEMORY because the slice's memory cap "
             "would be exceeded.");
  readable([&](const SliceRecord& slice, const slice::LedgerCounters& counters) {
    out.Sample(SliceLabels(slice), static_cast<double>(counters.oom_refusals));
  });
  out.Family("fgpu_slice_interposer_degraded_total", "counter",
             "Times the interposer ran degraded, by mode: fail_closed (requests refused because their cost "
             "was unknown), compute_unenforced (processes on a GPU whose compute board was unusable), "
             "no_free_slot (processes refused: every process slot held), pass_through (processes run "
             "with FGPU_DISABLE=1).");
  readable([&](const SliceRecord& slice, const slice::LedgerCounters& counters) {
    const std::pair<const char*, uint32_t> modes[] = {{"fail_closed", counters.fail_closed_refusals},
                                                      {"compute_unenforced", counters.compute_unenforced},
                                                      {"no_free_slot", counters.no_free_slot},
                                                      {"pass_through", counters.pass_through}};
    for (const auto& [mode, value] : modes) {
      Labels labels = SliceLabels(slice);
      labels.emplace_back("mode", mode);
      out.Sample(labels, static_cast<double>(value));
    }
  });
}

}  // namespace

struct UsageReader::Cache {
  struct Ledger {
    std::string dir;
    slice::SliceAdmin admin;
    uint64_t board_key = 0;  // the slice's key on its GPU's compute board
  };
  std::map<std::string, Ledger> ledgers;                           // by slice id
  std::map<std::string, std::unique_ptr<compute::Board>> boards;  // by GPU uuid; null: none yet
};

UsageReader::UsageReader(std::string compute_dir) : compute_dir_(std::move(compute_dir)), cache_(new Cache) {}
UsageReader::~UsageReader() = default;

namespace {

uint64_t BoardKey(const std::string& dir) {
  char resolved[PATH_MAX];
  return compute::SliceKey(realpath(dir.c_str(), resolved) != nullptr ? resolved : dir);
}

// The slice's row (by its key: in the policy table on a sealed board, else the row's own).
void ReadRow(const compute::Board& board, uint64_t key, SliceUsage* usage) {
  const int row = board.Find(key);
  if (row < 0) return;
  const compute::layout::BoardEntry* entry = board.entry(row);
  usage->busy_ns = __atomic_load_n(&entry->busy_ns, __ATOMIC_RELAXED);
  usage->throttled_ns = __atomic_load_n(&entry->throttled_ns, __ATOMIC_RELAXED);
  usage->launches = __atomic_load_n(&entry->launches, __ATOMIC_RELAXED);
}

// Set once before the readers run (UseSealedBoards), read by them after: no lock.
SealedBoards& Sealed() {
  static SealedBoards boards;
  return boards;
}

}  // namespace

void UseSealedBoards(SealedBoards boards) { Sealed() = std::move(boards); }

// The GPU's compute board, mapped once; null while it does not exist (nothing launched there
// yet). The reader never creates a board.
const compute::Board* UsageReader::BoardFor(const std::string& gpu_uuid) {
  if (Sealed()) return Sealed()(gpu_uuid);
  std::unique_ptr<compute::Board>& board = cache_->boards[gpu_uuid];
  std::error_code error;
  if (board == nullptr && std::filesystem::exists(compute_dir_ + "/" + gpu_uuid, error)) {
    Result<compute::Board*> opened = compute::Board::Open(compute_dir_, gpu_uuid);
    if (opened.ok()) board.reset(*opened);
  }
  return board.get();
}

std::vector<SliceUsage> UsageReader::Read(const std::vector<SliceRecord>& slices) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<std::string, Cache::Ledger> kept;
  std::vector<SliceUsage> usage(slices.size());
  for (std::size_t i = 0; i < slices.size(); ++i) {
    const SliceRecord& slice = slices[i];
    auto cached = cache_->ledgers.find(slice.id);
    if (cached == cache_->ledgers.end() || cached->second.dir != slice.dir) {
      Result<slice::SliceAdmin> admin = slice::SliceAdmin::Open(slice.dir);
      if (!admin.ok()) {
        usage[i].ledger_problem = admin.status().message();
        continue;  // ledger_readable stays false
      }
      cached = cache_->ledgers.insert_or_assign(slice.id, Cache::Ledger{slice.dir, std::move(*admin), BoardKey(slice.dir)})
                   .first;
    }
    const slice::UsageSnapshot snapshot = cached->second.admin.Usage();
    usage[i].ledger_readable = !snapshot.used.empty();  // empty: unreadable or failed validation
    usage[i].ledger_problem = snapshot.problem;
    usage[i].memory_used = snapshot.used.empty() ? 0 : snapshot.used[0];
    usage[i].processes = static_cast<int>(snapshot.processes.size());
    usage[i].counters = snapshot.counters;
    if (const compute::Board* board = BoardFor(slice.gpu_uuid)) ReadRow(*board, cached->second.board_key, &usage[i]);
    kept.insert(cache_->ledgers.extract(cached));
  }
  cache_->ledgers = std::move(kept);  // slices no longer listed are let go
  return usage;
}

uint64_t UsageReader::BusyNs(const SliceRecord& slice) { return Compute(slice).busy_ns; }

ComputeSample UsageReader::Compute(const SliceRecord& slice) {
  std::lock_guard<std::mutex> lock(mutex_);
  const compute::Board* board = BoardFor(slice.gpu_uuid);
  if (board == nullptr) return {};
  SliceUsage usage;
  ReadRow(*board, BoardKey(slice.dir), &usage);
  return {usage.busy_ns, usage.throttled_ns};
}

void UsageReader::Forget(const std::string& slice_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  cache_->ledgers.erase(slice_id);
}

std::size_t UsageReader::LedgersHeld() {
  std::lock_guard<std::mutex> lock(mutex_);
  return cache_->ledgers.size();
}

std::string RenderMetrics(const MetricsSnapshot& snapshot) {
  Exposition out;
  GpuFamilies(snapshot, out);
  SliceFamilies(snapshot, out);
  InterposerFamilies(snapshot, out);
  out.Family("fgpu_slice_unaccounted_bytes", "gauge",
             "Device memory NVML sees the slice's processes use minus what its ledger charged.");
  for (const SliceRecord& slice : snapshot.slices) {
    const auto it = snapshot.stop_loss.unaccounted_bytes.find(slice.id);
    if (it != snapshot.stop_loss.unaccounted_bytes.end()) out.Sample(SliceLabels(slice), static_cast<double>(it->second));
  }
  if (snapshot.http) {
    const net::ServerStats& http = *snapshot.http;
    out.Family("fgpu_agent_http_open_connections", "gauge", "Connections of the API being read, queued or answered.");
    out.Sample({}, static_cast<double>(http.open_connections));
    out.Family("fgpu_agent_http_requests_total", "counter", "Requests of the API answered by its handler.");
    out.Sample({}, static_cast<double>(http.handled));
    out.Family("fgpu_agent_http_refused_total", "counter",
               "Connections and requests of the API refused or cut, by reason (docs/net.md).");
    const std::pair<const char*, uint64_t> reasons[] = {
        {"peer_limit", http.refused_peer_limit}, {"server_full", http.refused_server_full},
        {"queue_full", http.refused_queue_full}, {"head_timeout", http.head_timeouts},
        {"read_timeout", http.read_timeouts},     {"malformed", http.malformed},
        {"write_failure", http.write_failures},   {"accept_failure", http.accept_failures}};
    for (const auto& [reason, count] : reasons) out.Sample({{"reason", reason}}, static_cast<double>(count));
  }
  if (snapshot.boards_handed_out_refused) {
    out.Family("fgpu_agent_board_handouts_total", "counter",
               "Compute boards handed out on the board socket, and refused (no slice on that GPU, bad request).");
    out.Sample({{"result", "handed_out"}}, static_cast<double>(snapshot.boards_handed_out_refused->first));
    out.Sample({{"result", "refused"}}, static_cast<double>(snapshot.boards_handed_out_refused->second));
  }
  out.Family("fgpu_agent_state_disk_full_total", "counter",
             "Writes of the agent's state database that found its disk full (the 4 MiB reserve was freed).");
  out.Sample({}, static_cast<double>(snapshot.disk_full_events));
  out.Family("fgpu_agent_pending_releases", "gauge",
             "Slices released while the state database could not be written, to be billed and forgotten once it can.");
  out.Sample({}, snapshot.pending_releases);
  out.Family("fgpu_stop_loss_bypasses_total", "counter", "Times a slice's processes were seen over its cap.");
  out.Sample({{"resource", "memory"}},
             static_cast<double>(snapshot.stop_loss.bypasses - snapshot.stop_loss.compute_bypasses));
  out.Sample({{"resource", "compute"}}, static_cast<double>(snapshot.stop_loss.compute_bypasses));
  out.Family("fgpu_gpu_unattributed_processes", "gauge",
             "Processes on the GPU, which has slices, that belong to none of them (started outside fgpu, or escaped "
             "their slice).");
  for (const auto& [gpu, count] : snapshot.stop_loss.unattributed_now) out.Sample({{"uuid", gpu}}, count);
  out.Family("fgpu_stop_loss_unattributed_processes_total", "counter",
             "Distinct processes seen on a GPU with slices outside every slice.");
  out.Sample({}, static_cast<double>(snapshot.stop_loss.unattributed_seen));
  out.Family("fgpu_stop_loss_unattributed_kills_total", "counter",
             "Processes outside every slice killed (stop_loss.unattributed = kill).");
  out.Sample({}, static_cast<double>(snapshot.stop_loss.unattributed_killed));
  out.Family("fgpu_stop_loss_signals_refused_total", "counter",
             "Signals not sent because the process was gone or its pid named another process by then.");
  out.Sample({}, static_cast<double>(snapshot.stop_loss.signals_refused));
  out.Family("fgpu_stop_loss_starvations_unconfirmed_total", "counter",
             "Windows a slice's own counters called it starved but NVML did not confirm (no action taken).");
  out.Sample({}, static_cast<double>(snapshot.stop_loss.starvations_unconfirmed));
  out.Family("fgpu_slice_compute_busy_unconfirmed_seconds", "gauge",
             "The slice's self-reported busy time minus what NVML measured for its processes, since the agent "
             "started watching it: positive means billed time the driver did not see.");
  for (const SliceRecord& slice : snapshot.slices) {
    const auto it = snapshot.stop_loss.busy_difference_ns.find(slice.id);
    if (it != snapshot.stop_loss.busy_difference_ns.end()) {
      out.Sample(SliceLabels(slice), static_cast<double>(it->second) / 1e9);
    }
  }
  out.Family("fgpu_slice_compute_busy_measured_seconds_total", "counter",
             "GPU time of the slice's processes by the driver's per-process SM utilization (NVML): the check on "
             "fgpu_slice_compute_busy_seconds_total, which the slice's interposer reports.");
  for (const SliceRecord& slice : snapshot.slices) {
    const auto it = snapshot.stop_loss.measured_busy_ns.find(slice.id);
    if (it != snapshot.stop_loss.measured_busy_ns.end()) {
      out.Sample(SliceLabels(slice), static_cast<double>(it->second) / 1e9);
    }
  }
  out.Family("fgpu_stop_loss_evictions_total", "counter",
             "Slices evicted by stop-loss (bypass, low memory, starvation, preemption).");
  out.Sample({}, static_cast<double>(snapshot.stop_loss.evictions));
  out.Family("fgpu_stop_loss_starvations_total", "counter",
             "Windows in which a slice waited in the compute gate yet got under its starvation bound.");
  out.Sample({}, static_cast<double>(snapshot.stop_loss.starvations));
  out.Family("fgpu_slice_starved", "gauge",
             "1 while the slice's last starvation window found it starved: its launches waited in the compute gate "
             "yet it got under its starvation bound of its share.");
  for (const SliceRecord& slice : snapshot.slices) out.Sample(SliceLabels(slice), snapshot.stop_loss.starved.count(slice.id) ? 1 : 0);
  out.Family("fgpu_slices", "gauge", "Slices the agent holds.");
  out.Sample({}, static_cast<double>(snapshot.slices.size()));
  out.Family("fgpu_queue_length", "gauge", "Requests waiting for room.");
  out.Sample({}, snapshot.queued);
  return out.str();
}

}  // namespace fgpu::agent
