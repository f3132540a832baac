// SliceService: the slices of this machine — placement on its GPUs, the slice directories the
// interposer reads, and the agent's records of them (docs/agent.md).
//
// Contract
// - Placement, the queue and preemption are decided in one place: a sched::Governor over a
//   sched::Scheduler that lives as long as the service (docs/governance.md), one node per GPU.
//   A named GPU is the NodeName filter, an exclusive or fenced GPU a cordon, the board rows a
//   filter of the service's own, tenant quotas the Governor's PreFilter. The service keeps the
//   slices' records and files; the Governor, what is reserved where.
// - Create validates the request, asks the Governor for a place (it never preempts for a
//   request that will not wait), writes the slice directory and then the record; if the record
//   cannot be written the directory is removed and the reservation given back (nothing
//   half-made survives). A GPU is full when its slices' memory caps would exceed its memory or
//   their compute shares 100 %: shares are guarantees, never oversubscribed.
// - Resize changes limits live (the interposer rereads them) within the same room rules.
// - Delete bills the slice's last interval, then removes the record and the directory. When the
//   state database cannot be written (a full disk) the slice is released all the same (room
//   and directory freed) and billed up to the release, and its record removed, by the next
//   Account that can write (PendingReleases counts those waiting; a restart before then
//   restores the slice).
// - Restore (at start) re-creates the directory of every stored slice whose directory is
//   missing or unreadable, keeps the ones that are intact (running workloads reattach) and
//   removes directories under `slices_dir` that have no record.
// - Ids ("s<N>") are never reused while the state directory lives: the next number is above the
//   store's counter (Store::LastSliceNumber), which each slice's record raises as it is stored,
//   so not after a clean stop, kill -9 or a restart with no slice left either.
// - Queue: a request with `wait` that does not fit gets a ticket and waits in the Governor's
//   order (tier, fair share, arrival; EASY backfill around a blocked request); it is placed when
//   room frees, and may preempt lower tiers or reclaim borrowed quota. The victims the Governor
//   names are handed to stop-loss (TakePreemptions), which evicts them gracefully.
// - Idempotent creates: a request with an idempotency key that a live slice of the same owner
//   holds is answered with that slice (or, queued, with its ticket) under the same lock that
//   creates, so concurrent retries make one slice. Other limits than the slice's, or another
//   owner's key, are ResourceExhausted (409), naming nothing of the other's slice.
// - Thread-safe: one mutex orders every change, so concurrent creates never overbook a GPU
//   nor reuse an id.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "agent/membership.h"
#include "agent/nvml_client.h"
#include "agent/slice_record.h"
#include "agent/store.h"
#include "core/status.h"
#include "net/http_message.h"
#include "sched/governance/governor.h"
#include "sched/scheduler.h"
#include "slice/slice_files.h"

namespace fgpu::agent {

struct CreateRequest {
  // NVML index ("0") or UUID (a MIG instance's "MIG-..."); absent: placed by the agent
  std::optional<std::string> gpu;
  uint64_t memory_bytes = 0;
  // Absent: the GPU's compute in proportion to the memory asked (at least 1 %), so slices that
  // ask only memory still pack and each keeps a guarantee.
  std::optional<uint32_t> compute_share;
  slice::ComputeMode compute_mode = slice::ComputeMode::kShare;
  slice::Tier tier = slice::Tier::kStandard;
  // trusted: a slice on a shared GPU or inside a MIG instance; hard: the smallest free MIG
  // instance that holds `memory_bytes`, whole; exclusive: a free GPU of the exclusive class,
  // whole. A whole target's slice has all its memory and compute.
  Isolation isolation = Isolation::kTrusted;
  // Hard isolation: the instance of this profile (at this first memory slice) on the GPU `gpu`
  // names. MigManager resolves them to the instance (making it on a dynamic GPU); the service
  // itself refuses a request that still carries them.
  std::optional<std::string> mig_profile;
  std::optional<int> mig_start;
  std::string tenant = "default";
  JobLabels labels;
  KubeLabels kube;
  // A live slice (or queued request) of the same owner with this key is answered instead of a
  // new one; "" = none.
  std::string idempotency_key;
  bool release_on_exit = false;  // needs a Unix-socket peer (the kernel names the owner)
  bool wait = false;             // no room: queue instead of refusing
  // The user the slice is for (an admin creating one on a user's behalf); absent: the peer.
  std::optional<uid_t> owner;
  // The most compute the agent may give a request that names none (the caller's rule).
  uint32_t max_share = 100;
  // A gang (needs `wait`): the gang_size requests of one owner naming `gang`, with the same
  // limits, are placed all at once or none (docs/governance.md "Gangs").
  std::string gang;
  int gang_size = 0;
};

// How the service governs its GPUs: the placement policy and the Governor's options and quotas
// (the agent's configuration, "governance").
struct Governance {
  std::string policy = "FGD+";
  sched::GovernorOptions options{};
  std::vector<sched::QuotaSpec> quotas{};  // none: no quotas
  std::string default_quota{};             // the leaf for tenants with none ("": refused)
};

// A queued request as the queue shows it: where it stands and why it waits.
struct QueueEntry {
  std::string ticket_tag;  // the first characters of its ticket, never the secret
  int position = 0;
  int64_t owner_uid = -1;
  uint64_t memory_bytes = 0;
  std::optional<uint32_t> compute_share;
  slice::Tier tier = slice::Tier::kStandard;
  std::string tenant;
  int64_t waited_ms = 0;
  std::string reason;
};

// A quota as the service's quota tree holds it.
struct QuotaUsage {
  std::string name;
  std::string parent;
  uint64_t memory_used = 0, memory_nominal = 0, memory_limit = 0;  // limit: nominal + borrowing
  uint32_t compute_used = 0, compute_nominal = 0, compute_limit = 0;  // percent of one GPU
};

// A slice the Governor chose to make room with: stop-loss evicts it.
struct Preemption {
  SliceRecord slice;
  std::string why;
};

// A queued request: where it stands, or the slice it became.
struct QueueStatus {
  std::string ticket;
  int position = 0;  // 1 = next; 0 once placed
  std::optional<SliceRecord> slice;
  bool existing = false;  // answered for its idempotency key: made (or queued) by an earlier request
};

struct ResizeRequest {
  std::optional<uint64_t> memory_bytes;
  std::optional<uint32_t> compute_share;
  std::optional<slice::ComputeMode> compute_mode;
  std::optional<slice::Tier> tier;
};

// What is left of a GPU after its slices.
struct GpuRoom {
  GpuState gpu;
  bool exclusive = false;  // switched out of sharing: no new placements
  uint64_t memory_reserved = 0;
  uint32_t compute_reserved = 0;
  int slices = 0;
  std::string fenced{};  // why stop-loss holds new placements off it now ("" = not fenced)
  int max_slices = 0;    // the most slices it may hold (0: no limit; SetMaxSlicesPerGpu)
};

// The sched models placement targets are of (SliceService's nodes), one per isolation class.
inline constexpr int kSharedModel = 0;
inline constexpr int kExclusiveModel = 1;
inline constexpr int kMigInstanceModel = 2;
inline constexpr int kMigGpuModel = 3;  // a GPU in MIG mode: no request takes it whole

// The fence MigManager puts on MIG instances a new geometry removes while their slices drain.
inline constexpr std::string_view kMigDrainFence = "draining for a MIG reconfiguration";

// Ok, or why the policy or the quotas cannot be used.
Status ValidateGovernance(const Governance& governance);

class SliceService {
 public:
  // A slice's measured busy counter now (its compute board row), for chargeback.
  using BusyReader = std::function<uint64_t(const SliceRecord&)>;

  // Told of every change to the slices, under the service's lock (so it must not call back into
  // the service): a slice created or resized (`gone` false, the record as it now is) or deleted
  // (`gone` true). Restore tells nothing: the observer reads List() once restored.
  using Observer = std::function<void(const SliceRecord& slice, bool gone)>;

  // `governance` must be valid (ValidateGovernance); an invalid policy or quota tree is
  // replaced by the defaults, with an error logged.
  SliceService(Store* store, std::vector<GpuState> gpus, std::string slices_dir, BusyReader busy = nullptr,
               Governance governance = {});
  ~SliceService();

  Status Restore();
  // InvalidArgument: a malformed request; NotFound: unknown GPU; ResourceExhausted: no room.
  Result<SliceRecord> Create(const CreateRequest& request, const net::Peer& peer);
  // Create, or with request.wait and no room, a place in the queue (QueueStatus without slice).
  Result<QueueStatus> CreateOrQueue(const CreateRequest& request, const net::Peer& peer);
  // A queued request's position, or its slice once placed (the ticket is then spent).
  Result<QueueStatus> Poll(const std::string& ticket);
  // Who queued the request (its slice's owner-to-be): NotFound for an unknown ticket.
  Result<int64_t> TicketOwner(const std::string& ticket) const;
  Status Cancel(const std::string& ticket);
  // Deletes release-on-exit slices whose owner has exited and whose processes are all gone,
  // drops queued requests whose owner has exited, then places what the queue can. Returns the
  // ids of the slices it deleted.
  std::vector<std::string> Reap();
  std::vector<SliceRecord> List() const;
  Result<SliceRecord> Get(const std::string& id) const;
  Result<SliceRecord> Resize(const std::string& id, const ResizeRequest& request);
  // `why` goes into the log's delete line ("requested by uid 1000", "evicted: …").
  Status Delete(const std::string& id, const std::string& why = "requested");
  std::vector<GpuRoom> Rooms() const;
  int QueueLength() const;
  // The board registry's row assignment (board_registry.h) on a managed node with sealed boards.
  void SetObserver(Observer observer);
  // Further observers (the API's usage reader lets a deleted slice's files go at once); the
  // handle removes it. Called after SetObserver's, in the order added.
  int AddObserver(Observer observer);
  void RemoveObserver(int handle);
  // At most `most` slices on one GPU (0: no limit), so that each gets one of its compute board's
  // rows: a GPU that holds that many has no room.
  void SetMaxSlicesPerGpu(int most);
  const std::string& policy() const { return policy_; }
  // Which processes belong to which slice (membership.h); by default without cgroups.
  void SetMembership(std::shared_ptr<Membership> membership) { membership_ = std::move(membership); }
  const Membership& membership() const { return *membership_; }
  void PruneMembers() { membership_->Prune(); }
  void CloseMembership() { membership_->Close(); }
  // Makes process `pid` a member of slice `id` (moved into its cgroup, recorded in the store).
  // Returns the slice's cgroup path ("" when none). NotFound: no such slice or process.
  Result<std::string> Join(const std::string& id, pid_t pid);
  // The exclusive switch: an exclusive GPU takes no new slices (those on it stay). Persisted.
  Status SetExclusive(const std::string& gpu, bool exclusive);
  // Stop-loss's fence: while `why` is not empty no new slice is placed on the GPU (those on it
  // stay); unlike the exclusive switch it is not persisted, since stop-loss re-decides it every
  // check. Clearing it serves the queue.
  Status SetFenced(const std::string& gpu, const std::string& why);
  // Binds GPU `parent`'s MIG instances to `instances` (mig_setup.h's targets for it) after its
  // geometry changed: an instance that stays keeps its place, one that is gone must hold no
  // slice (ResourceExhausted naming it, and nothing changes), a new one takes a free slot (a GPU
  // in MIG mode has a node per instance it can have). Serves the queue.
  Status SetMigInstances(const std::string& parent, const std::vector<GpuState>& instances);
  // The note a GPU in MIG mode shows (GpuState::mig_note): why its geometry is not applied.
  Status SetMigNote(const std::string& parent, const std::string& note);
  // The queue in the Governor's order, each with why it waits.
  std::vector<QueueEntry> Queue() const;
  // The quotas and what each holds (empty without quotas).
  std::vector<QuotaUsage> Quotas() const;
  // The slices the Governor chose as victims since the last call (stop-loss evicts them).
  std::vector<Preemption> TakePreemptions();
  const sched::GovernorCounters& GovernorCountersLocked() const { return governor_->counters(); }
  // Closes every slice's usage interval at `now_unix_ms` into a usage record (also done for a
  // slice when it is deleted or resized, so every interval is billed at the limits it had).
  // Also retries the pending releases and deletes usage records past the retention.
  Status Account(int64_t now_unix_ms);
  void SetUsageRetention(int64_t retention_ms) { retention_ms_ = retention_ms; }
  int PendingReleases() const;
  uint64_t DiskFullEvents() const { return store_->disk_full_events(); }
  Result<std::vector<UsageTotal>> Totals(int64_t since_unix_ms, int64_t until_unix_ms, const std::string& by) const {
    return store_->Totals(since_unix_ms, until_unix_ms, by);
  }

 private:
  struct Queued {
    std::string ticket;  // 128 random bits: a ticket cannot be guessed, only given
    CreateRequest request;
    net::Peer peer;
    uint64_t owner_start_time = 0;
    std::optional<SliceRecord> placed;
    std::chrono::steady_clock::time_point queued_at;
    sched::WorkloadId workload = 0;  // while it waits
    std::optional<Status> failed;    // placed, but its slice could not be made
  };
  // A gang whose members are still arriving: the Governor sees it once all have.
  struct PendingGang {
    CreateRequest request;  // the first member's: the others must ask the same
    int arrived = 0;
    std::chrono::steady_clock::time_point first;
  };
  class SliceRows;  // the board-rows filter

  struct PendingRelease {
    SliceRecord slice;
    int64_t released_unix_ms = 0;
    uint64_t busy_ns = 0;  // its busy counter at the release
  };

  static UsageRecord IntervalOf(const SliceRecord& slice, int64_t end_unix_ms, uint64_t busy_now);
  void RetryReleasesLocked();
  std::vector<GpuRoom> RoomsLocked() const;
  Status Validate(const CreateRequest& request, const net::Peer& peer) const;
  // The slice or queued request `request`'s idempotency key names (nullopt: none, make one).
  std::optional<Result<QueueStatus>> ExistingLocked(const CreateRequest& request, const net::Peer& peer);
  Result<SliceRecord> CreateLocked(const CreateRequest& request, const net::Peer& peer, uint64_t owner_start_time);
  Status DeleteLocked(const std::string& id, const std::string& why);
  void Notify(const SliceRecord& slice, bool gone) const;
  Status AccountLocked(SliceRecord& slice, int64_t now_unix_ms);
  // One pass of the Governor: queued requests placed (their slices made), victims noted.
  // `direct`, if not 0, is a request being created now: whether it started is returned.
  bool ScheduleLocked(sched::WorkloadId direct = 0);
  int PositionLocked(sched::WorkloadId id) const;  // 1 = next
  Result<const GpuState*> NamedGpu(const std::string& selector) const;
  // The Governor's view of a request: one GPU of the share (percent × 10) and memory it asks.
  sched::WorkloadSpec SpecOf(const CreateRequest& request, bool may_preempt) const;
  uint32_t ShareOf(const CreateRequest& request) const;
  // Why a request that did not start was not placed, in the words the API has always used.
  Status RefusalLocked(const CreateRequest& request, const sched::Workload& workload) const;
  // Makes the slice of a started workload on the GPU the Governor reserved.
  Result<SliceRecord> MakeSliceLocked(sched::WorkloadId workload, const CreateRequest& request, const net::Peer& peer,
                                      uint64_t owner_start_time, size_t member = 0);
  // A gang member: queued with its ticket; the gang goes to the Governor once complete.
  Result<QueueStatus> JoinGangLocked(const CreateRequest& request, const net::Peer& peer, uint64_t owner_start_time);
  // Fails every waiting member of a gang (by owner and name) with `why`.
  void FailGangLocked(int64_t owner, const std::string& gang, const std::string& why);
  static int64_t OwnerOf(const CreateRequest& request, const net::Peer& peer);
  // Whether a request of `isolation` may ever be placed on `gpu` (its class).
  static bool Accepts(const GpuState& gpu, Isolation isolation);
  // Why a request that names `gpu` cannot be placed there by its class ("" when it can).
  static std::string ClassRefusal(const GpuState& gpu, const std::string& selector, Isolation isolation);
  // The cordon of a GPU: exclusive or fenced.
  void CordonLocked(const std::string& uuid);
  double Now() const;
  int NodeOf(const std::string& uuid) const;
  Status WriteDirectory(const SliceRecord& record) const;
  void SecureDirectory(const SliceRecord& record) const;
  static std::optional<slice::FileOwner> LedgerOwner(const SliceRecord& record);
  bool HasLiveProcess(const SliceRecord& slice) const;
  int RemoveOrphans() const;  // how many it removed
  std::string NewId();

  Store* store_;
  BusyReader busy_;
  std::vector<GpuState> gpus_;
  std::string slices_dir_;
  mutable std::mutex mutex_;
  std::vector<SliceRecord> slices_;
  uint64_t next_id_ = 1;
  std::deque<Queued> queue_;  // tickets, by arrival; in memory: after a restart waiting clients ask again
  std::chrono::steady_clock::time_point epoch_ = std::chrono::steady_clock::now();
  std::unique_ptr<sched::Scheduler> scheduler_;
  std::unique_ptr<sched::Governor> governor_;
  std::shared_ptr<std::vector<int>> slice_rows_;  // per GPU: slices on it (the SliceRows filter's)
  std::map<std::string, sched::WorkloadId> workload_of_;  // slice id → its workload
  std::map<sched::WorkloadId, std::vector<std::string>> slices_of_;  // a gang's workload has several
  std::map<std::pair<int64_t, std::string>, PendingGang> gangs_;  // by owner and name
  std::vector<Preemption> preemptions_;
  std::string policy_;
  std::set<std::string> exclusive_;  // GPU uuids
  std::map<std::string, std::string> fenced_;  // GPU uuid -> why
  std::vector<PendingRelease> pending_releases_;
  std::shared_ptr<Membership> membership_ = std::make_shared<Membership>("", "");
  int64_t retention_ms_ = 0;
  Observer observer_;
  std::map<int, Observer> observers_;  // by handle
  int next_observer_ = 1;
  int max_slices_per_gpu_ = 0;
};

}  // namespace fgpu::agent
