// Metrics: the agent's Prometheus text exposition (GET /metrics), built fresh on each scrape
// from NVML, the agent's records, each slice's ledger and each GPU's compute board
// (docs/agent.md "Metrics"). Names follow Prometheus conventions: base units (bytes, seconds,
// ratios 0..1), `_total` for counters, one family per name with HELP and TYPE.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "agent/nvml_client.h"
#include "net/server_stats.h"
#include "agent/slice_service.h"
#include "agent/stop_loss.h"
#include "slice/slice.h"

namespace fgpu::compute {
class Board;
}

namespace fgpu::agent {

// One scrape's worth of facts about a slice beyond its record.
struct SliceUsage {
  uint64_t memory_used = 0;  // charged in its ledger
  int processes = 0;         // live process slots
  bool ledger_readable = false;
  std::string ledger_problem;  // why not readable (the slice is degraded): for its owner and admins
  // The interposer's refusals and degraded modes, from the ledger (meaningless unless readable).
  slice::LedgerCounters counters;
  // From the compute board (0 when the slice has not launched yet).
  uint64_t busy_ns = 0;
  uint64_t throttled_ns = 0;
  uint64_t launches = 0;
};

struct MetricsSnapshot {
  std::vector<GpuState> gpus;  // live NVML readings; empty when NVML could not be read
  std::vector<GpuRoom> rooms;
  std::vector<SliceRecord> slices;
  std::vector<SliceUsage> usage;  // parallel to slices
  int queued = 0;
  StopLossCounters stop_loss;
  uint64_t disk_full_events = 0;  // state database writes that found the disk full
  int pending_releases = 0;       // released slices whose last interval waits for the disk
  std::optional<net::ServerStats> http;  // the API server's connections and refusals
  // The compute board handout (managed node with board_socket); nullopt without one.
  std::optional<std::pair<uint64_t, uint64_t>> boards_handed_out_refused;
};

// Reads every slice's ledger and board row. Keeps the slices' ledgers and the GPUs' boards
// mapped between scrapes (opening and validating them is most of a scrape's cost); a slice no
// longer listed is let go. Thread-safe (scrapes are serialised). The boards are the files in
// `compute_dir`, or after UseSealedBoards the agent's own mappings of the sealed memfds (a
// managed node with board_socket: no file to open, nothing anyone can truncate under it); a
// slice's row is found by its key in the board's policy table when it has one.
class UsageReader {
 public:
  explicit UsageReader(std::string compute_dir);
  ~UsageReader();
  std::vector<SliceUsage> Read(const std::vector<SliceRecord>& slices);
  // The slice's measured busy counter (0 before its first launch).
  uint64_t BusyNs(const SliceRecord& slice);
  // The slice's busy and throttled counters from its board row alone (no ledger is opened):
  // what stop-loss samples every second.
  ComputeSample Compute(const SliceRecord& slice);
  // Lets the slice's ledger go now (its mapping and descriptor), not at the next Read: a deleted
  // slice's files are closed at once (SliceService observer).
  void Forget(const std::string& slice_id);
  // How many slices' ledgers it holds mapped (tests).
  std::size_t LedgersHeld();

 private:
  struct Cache;
  const compute::Board* BoardFor(const std::string& gpu_uuid);  // under mutex_

  std::string compute_dir_;
  std::mutex mutex_;
  std::unique_ptr<Cache> cache_;
};

std::string RenderMetrics(const MetricsSnapshot& snapshot);

// The agent's sealed boards (board_registry.h), by GPU uuid (null: none), for every UsageReader
// of this process — the API's and the agent's own. Set once at start, before any reader runs.
using SealedBoards = std::function<const compute::Board*(const std::string& uuid)>;
void UseSealedBoards(SealedBoards boards);

}  // namespace fgpu::agent
