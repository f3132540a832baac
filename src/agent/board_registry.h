// BoardRegistry: on a managed node whose configuration names board_socket, every GPU's sealed
// compute board and policy table (compute/sealed.h) and which slice holds which row
// (docs/compute.md "The board on a managed node").
//
// Contract
// - Open(gpus, candidates, owner): for each GPU, the pair a live process still maps, recovered
//   through /proc (board_recovery.h: after a restart the workloads keep arbitrating on the boards
//   they have), else a new pair. Each is mapped here with the policy table writable: the agent
//   is its only writer. Unavailable when a pair can be neither recovered nor made.
// - Rebuild(slices), once, after Open: the rows from the agent's records. A row whose key is a
//   recorded slice's on that GPU stays where it is (live processes know their row by index) with
//   the record's share, mode and tier; a row of no record is freed; a record without a row gets
//   one. Returns one line per change worth logging.
// - Observe(slice, gone) is SliceService's observer (a GPU it has not seen — a MIG instance made
//   after the start, docs/mig.md — gets a new pair first): a created slice gets a free row of its GPU's
//   table (key = compute::SliceKey of its directory's realpath, the identity the interposer
//   uses; the board row's dynamic state reset), a resized one its new share, mode and tier, a
//   deleted one's row is freed. A freed row is reused last (policy_table.h FreeRowIndex). With no
//   free row (SliceService's per-GPU limit prevents it) the slice has none: its workloads run
//   with compute unenforced, counted, and the agent logs it.
// - Handout(uuid): the descriptors to send to a workload (borrowed: valid while the registry
//   lives): the board, read-write, and an O_RDONLY description of the policy table. nullopt for
//   an unknown GPU. BoardOf(uuid): the agent's own mapping, for its readers (UsageReader).
// - Thread-safe: one mutex. Observe runs under SliceService's lock and takes only this one.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agent/slice_record.h"
#include "compute/board.h"
#include "compute/sealed.h"
#include "core/status.h"

namespace fgpu::agent {

// A slice's key on its GPU's board: compute::SliceKey of its directory's realpath.
uint64_t SliceKeyOf(const std::string& dir);

class BoardRegistry {
 public:
  static Result<std::unique_ptr<BoardRegistry>> Open(const std::vector<std::string>& gpu_uuids,
                                                     const std::vector<pid_t>& candidates, uid_t owner);
  ~BoardRegistry();
  BoardRegistry(const BoardRegistry&) = delete;
  BoardRegistry& operator=(const BoardRegistry&) = delete;

  std::vector<std::string> Rebuild(const std::vector<SliceRecord>& slices);
  void Observe(const SliceRecord& slice, bool gone);

  std::optional<compute::SealedPair> Handout(const std::string& uuid) const;
  const compute::Board* BoardOf(const std::string& uuid) const;
  // Whether GPU `uuid`'s pair came from a live process (a restart), for the start-up line and tests.
  bool Recovered(const std::string& uuid) const;
  // The row slice `id` holds (-1: none), for tests.
  int RowOf(const std::string& id) const;

 private:
  struct Gpu {
    compute::SealedPair own;    // read-write descriptors: the agent's
    int policy_read_only = -1;  // what workloads get for the policy table
    std::unique_ptr<compute::Board> board;
    bool recovered = false;
    int64_t freed_at_ns[compute::layout::kEntryCount] = {};  // when this agent freed each row
  };
  struct Held {
    std::string gpu;
    int row = -1;
  };

  BoardRegistry() = default;
  // GPU `uuid`'s pair: recovered from `candidates`, else new; mapped with the policy writable.
  static Result<Gpu> OpenGpu(const std::string& uuid, const std::vector<pid_t>& candidates, uid_t owner);
  // Gives `slice` a row on its GPU, or updates the one it holds. Under mutex_.
  void PlaceLocked(const SliceRecord& slice, uint64_t key);

  uid_t owner_ = 0;
  mutable std::mutex mutex_;
  std::map<std::string, Gpu> gpus_;   // by uuid
  std::map<std::string, Held> held_;  // by slice id
};

}  // namespace fgpu::agent
