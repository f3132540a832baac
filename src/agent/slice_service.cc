#include "agent/slice_service.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <fcntl.h>
#include <pwd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/log.h"
#include "agent/processes.h"
#include "core/units.h"
#include "sched/policies/registry.h"
#include "slice/compute_spec.h"
#include "slice/process_liveness.h"
#include "slice/slice_files.h"

namespace fgpu::agent {
namespace {

int64_t UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

slice::SliceSpec SliceSpecOf(const SliceRecord& record) {
  slice::SliceSpec spec;
  spec.id = record.id;
  spec.devices.push_back({.uuid = record.gpu_uuid,
                          .memory_cap = record.memory_bytes,
                          .compute_share = record.compute_share,
                          .compute_mode = record.compute_mode,
                          .tier = record.tier});
  return spec;
}

// Names that go into records, reports and metric labels: 1-63 of [A-Za-z0-9._-] (and, for a
// job's user or account, '@' and '+', which sites use in directory-service names).
bool ValidName(const std::string& name, bool allow_at_plus = false) {
  if (name.empty() || name.size() > 63) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '_' || c == '.' || (allow_at_plus && (c == '@' || c == '+'));
    if (!ok) return false;
  }
  return true;
}

Status ValidateLabels(const JobLabels& labels) {
  if (!labels.job.empty() && !ValidName(labels.job)) return Status::InvalidArgument("job must be 1-63 of [A-Za-z0-9._-]");
  if (!labels.user.empty() && !ValidName(labels.user, true)) {
    return Status::InvalidArgument("user must be 1-63 of [A-Za-z0-9._@+-]");
  }
  if (!labels.account.empty() && !ValidName(labels.account, true)) {
    return Status::InvalidArgument("account must be 1-63 of [A-Za-z0-9._@+-]");
  }
  return Status::Ok();
}

// A queue ticket: 128 bits from the kernel's CSPRNG, in hex.
std::string NewTicket() {
  unsigned char bytes[16] = {};
  std::size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n > 0) got += static_cast<std::size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string ticket = "q";
  for (unsigned char byte : bytes) {
    ticket += kHex[byte >> 4];
    ticket += kHex[byte & 0xf];
  }
  return ticket;
}

// What a log line says of a slice: who it is, where, its limits and whose it is.
LogFields SliceFields(const SliceRecord& record) {
  LogFields fields = {{"slice", record.id},
                      {"gpu", record.gpu_uuid},
                      {"memory", CompactBytes(record.memory_bytes)},
                      {"compute", std::to_string(record.compute_share)},
                      {"mode", slice::ToString(record.compute_mode)},
                      {"tier", slice::ToString(record.tier)},
                      {"tenant", record.tenant},
                      {"uid", std::to_string(record.owner_uid)}};
  if (!record.labels.job.empty()) fields.emplace_back("job", record.labels.job);
  return fields;
}

// A ticket's first 8 characters: enough to follow it through the log, never the whole secret.
std::string TicketTag(const std::string& ticket) { return ticket.substr(0, 9); }

}  // namespace

// The board rows: a GPU holding max_slices slices takes no more (each slice needs a row of its
// compute board). Counts what is reserved per node; the limit changes through Touch.
class SliceService::SliceRows final : public sched::FilterPlugin, public sched::ReservePlugin {
 public:
  SliceRows(std::shared_ptr<std::vector<int>> rows, const int* most) : rows_(std::move(rows)), most_(most) {}
  std::string_view name() const override { return "BoardRows"; }
  bool Filter(const sched::NodeView& node, const sched::Request& /*request*/) const override {
    return *most_ == 0 || (*rows_)[node.id] < *most_;
  }
  void Reserve(const sched::Request& /*request*/, const sched::Placement& placement) override {
    ++(*rows_)[placement.node];
  }
  void Unreserve(const sched::Request& /*request*/, const sched::Placement& placement) override {
    --(*rows_)[placement.node];
  }

 private:
  std::shared_ptr<std::vector<int>> rows_;
  const int* most_;
};

namespace {

// A filter and a reserve plugin that share one object: the scheduler owns each through its own
// handle, both forwarding to the object the service keeps.
class RowsFilter final : public sched::FilterPlugin {
 public:
  explicit RowsFilter(std::shared_ptr<sched::FilterPlugin> inner) : inner_(std::move(inner)) {}
  std::string_view name() const override { return inner_->name(); }
  bool Filter(const sched::NodeView& node, const sched::Request& request) const override {
    return inner_->Filter(node, request);
  }

 private:
  std::shared_ptr<sched::FilterPlugin> inner_;
};

class RowsCounter final : public sched::ReservePlugin {
 public:
  explicit RowsCounter(std::shared_ptr<sched::ReservePlugin> inner) : inner_(std::move(inner)) {}
  std::string_view name() const override { return inner_->name(); }
  void Reserve(const sched::Request& request, const sched::Placement& placement) override {
    inner_->Reserve(request, placement);
  }
  void Unreserve(const sched::Request& request, const sched::Placement& placement) override {
    inner_->Unreserve(request, placement);
  }

 private:
  std::shared_ptr<sched::ReservePlugin> inner_;
};

constexpr int64_t kUnmodelled = int64_t{1} << 40;  // host CPU and RAM: not the agent's concern

constexpr sched::ModelSet Bit(int model) { return sched::ModelSet{1} << model; }

sched::ModelSet ModelsFor(Isolation isolation) {
  switch (isolation) {
    case Isolation::kHard:
      return Bit(kMigInstanceModel);
    case Isolation::kExclusive:
      return Bit(kExclusiveModel);
    case Isolation::kTrusted:
      break;
  }
  return Bit(kSharedModel) | Bit(kMigInstanceModel);
}

int ModelOf(const GpuState& gpu) {
  switch (gpu.isolation) {
    case IsolationClass::kExclusive:
      return kExclusiveModel;
    case IsolationClass::kMig:
      return gpu.parent_uuid.empty() ? kMigGpuModel : kMigInstanceModel;
    case IsolationClass::kShared:
      break;
  }
  return kSharedModel;
}

// A request for a whole MIG instance takes the smallest that holds it: the larger stay for the
// requests only they can hold. Outweighs any policy's score (those are within ±1e4).
class SmallestWholeInstance final : public sched::ScorePlugin {
 public:
  std::string_view name() const override { return "SmallestWholeInstance"; }
  double Score(const sched::NodeView& node, const sched::Request& request) const override {
    if (request.models != ModelsFor(Isolation::kHard)) return 0;
    return -static_cast<double>(node.spec.gpu_memory_bytes) / static_cast<double>(uint64_t{1} << 20) * 1e4;
  }
};

sched::Tier TierOf(slice::Tier tier) {
  switch (tier) {
    case slice::Tier::kBatch:
      return sched::Tier::kBatch;
    case slice::Tier::kLatency:
      return sched::Tier::kLatency;
    case slice::Tier::kStandard:
      break;
  }
  return sched::Tier::kStandard;
}

}  // namespace

Status ValidateGovernance(const Governance& governance) {
  if (Result<std::string_view> policy = sched::CanonicalPolicyName(governance.policy); !policy.ok()) {
    return policy.status();
  }
  if (governance.quotas.empty()) return Status::Ok();
  return sched::QuotaTree::Create(governance.quotas, {.capacity = std::nullopt, .default_leaf = governance.default_quota})
      .status();
}

namespace {

// A node of GPU `parent` (in MIG mode) that holds no instance: no UUID, no memory.
GpuState UnboundSlot(int index, const std::string& parent, int minor) {
  GpuState slot;
  slot.index = index;
  slot.isolation = IsolationClass::kMig;
  slot.parent_uuid = parent;
  slot.minor = minor;
  return slot;
}

// Each GPU in MIG mode gets as many nodes as it can have instances (7): its instances' and
// unbound ones that a geometry change binds (SetMigInstances).
std::vector<GpuState> WithMigSlots(std::vector<GpuState> gpus) {
  std::vector<GpuState> slotted;
  for (size_t i = 0; i < gpus.size(); ++i) {
    slotted.push_back(gpus[i]);
    if (gpus[i].isolation != IsolationClass::kMig || !gpus[i].parent_uuid.empty()) continue;
    const GpuState parent = gpus[i];
    size_t instances = 0;
    while (i + 1 < gpus.size() && gpus[i + 1].parent_uuid == parent.uuid) {
      slotted.push_back(gpus[++i]);
      ++instances;
    }
    for (size_t k = instances; k < static_cast<size_t>(mig::kComputeSlices); ++k) {
      slotted.push_back(UnboundSlot(parent.index, parent.uuid, parent.minor));
    }
  }
  return slotted;
}

// The engine's name of a node: its GPU's UUID, or for an unbound MIG slot its GPU's and place.
std::string NodeNameOf(const GpuState& gpu, size_t node) {
  return gpu.uuid.empty() ? gpu.parent_uuid + "/slot-" + std::to_string(node) : gpu.uuid;
}

}  // namespace

SliceService::SliceService(Store* store, std::vector<GpuState> gpus, std::string slices_dir, BusyReader busy,
                           Governance governance)
    : store_(store), busy_(std::move(busy)), gpus_(WithMigSlots(std::move(gpus))), slices_dir_(std::move(slices_dir)) {
  if (Status valid = ValidateGovernance(governance); !valid.ok()) {
    Log(LogLevel::kError, "governance", {{"reason", valid.message() + " (the defaults are used)"}});
    governance = Governance{};
  }
  sched::ModelTable models;
  for (const char* name : {"shared", "exclusive", "mig-instance", "mig-gpu"}) (void)models.Intern(name);
  std::vector<sched::NodeSpec> nodes;
  for (size_t node = 0; node < gpus_.size(); ++node) {
    const GpuState& gpu = gpus_[node];
    nodes.push_back({NodeNameOf(gpu, node), kUnmodelled, kUnmodelled, ModelOf(gpu), 1, static_cast<int64_t>(gpu.memory_total)});
  }
  Result<sched::Cluster> cluster = sched::Cluster::Create(std::move(models), std::move(nodes));
  if (!cluster.ok()) {  // two GPUs with one UUID: model none, place nothing
    Log(LogLevel::kError, "governance", {{"reason", cluster.status().message()}});
    cluster = sched::Cluster::Create({}, {});
  }
  policy_ = std::string(*sched::CanonicalPolicyName(governance.policy));
  // Fragmentation-aware policies measure against whole-GPU and half-GPU slices until they learn
  // the machine's mix (FGD+ observes every request).
  std::vector<sched::Request> typical(2);
  for (sched::Request& request : typical) request.gpu_count = 1;
  typical[0].gpu_milli = sched::kMilliPerGpu;
  typical[1].gpu_milli = sched::kMilliPerGpu / 2;
  Result<std::unique_ptr<sched::Policy>> policy =
      sched::MakePolicy(policy_, {sched::TargetWorkload::MostFrequent(typical, 1.0)});
  scheduler_ = std::make_unique<sched::Scheduler>(std::move(*cluster), std::move(*policy));
  slice_rows_ = std::make_shared<std::vector<int>>(gpus_.size(), 0);
  auto rows = std::make_shared<SliceRows>(slice_rows_, &max_slices_per_gpu_);
  scheduler_->AddFilter(std::make_unique<RowsFilter>(rows));
  scheduler_->AddReservePlugin(std::make_unique<RowsCounter>(rows));
  scheduler_->AddScorePlugin(std::make_unique<SmallestWholeInstance>());
  Result<sched::QuotaTree> quotas =
      governance.quotas.empty()
          ? Result<sched::QuotaTree>(sched::QuotaTree{})
          : sched::QuotaTree::Create(governance.quotas, {.capacity = std::nullopt, .default_leaf = governance.default_quota});
  governor_ = std::make_unique<sched::Governor>(scheduler_.get(), std::move(*quotas), governance.options);
}

SliceService::~SliceService() = default;

double SliceService::Now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_).count();
}

int SliceService::NodeOf(const std::string& uuid) const {
  for (size_t i = 0; i < gpus_.size(); ++i) {
    if (!uuid.empty() && gpus_[i].uuid == uuid) return static_cast<int>(i);
  }
  return -1;
}

bool SliceService::Accepts(const GpuState& gpu, Isolation isolation) {
  return sched::Accepts(ModelsFor(isolation), ModelOf(gpu));
}

std::string SliceService::ClassRefusal(const GpuState& gpu, const std::string& selector, Isolation isolation) {
  if (Accepts(gpu, isolation)) return "";
  const std::string named = "GPU " + selector;
  if (ModelOf(gpu) == kMigGpuModel) return named + " is in MIG mode: name one of its instances (fgpu status lists them)";
  switch (isolation) {
    case Isolation::kHard:
      return named + " is not a MIG instance: hard isolation takes a MIG instance whole";
    case Isolation::kExclusive:
      return named + " is not of the exclusive class: it cannot be had whole";
    case Isolation::kTrusted:
      break;
  }
  return named + " is of the exclusive class: ask for it with isolation exclusive";
}

void SliceService::CordonLocked(const std::string& uuid) {
  const int node = NodeOf(uuid);
  if (node < 0) return;
  const bool cordoned = exclusive_.count(uuid) != 0 || fenced_.count(uuid) != 0;
  (void)scheduler_->SetCordoned(static_cast<sched::NodeId>(node), cordoned);
}

uint32_t SliceService::ShareOf(const CreateRequest& request) const {
  if (request.isolation != Isolation::kTrusted) return 100;  // the whole instance or GPU
  if (request.compute_share) return *request.compute_share;
  // In proportion to the memory asked, of the named GPU (else the first: a machine's GPUs are
  // alike), at least 1 %.
  uint64_t total = gpus_.empty() ? 1 : gpus_.front().memory_total;
  if (request.gpu) {
    if (Result<const GpuState*> named = NamedGpu(*request.gpu); named.ok()) total = (*named)->memory_total;
  }
  total = std::max<uint64_t>(total, 1);
  const uint64_t most = std::clamp<uint32_t>(request.max_share, 1, 100);
  return static_cast<uint32_t>(std::clamp<uint64_t>((request.memory_bytes * 100 + total - 1) / total, 1, most));
}

sched::WorkloadSpec SliceService::SpecOf(const CreateRequest& request, bool may_preempt) const {
  sched::WorkloadSpec spec;
  spec.request.gpu_count = 1;
  spec.request.gpu_milli = static_cast<int32_t>(ShareOf(request) * 10);
  spec.request.gpu_memory_bytes = static_cast<int64_t>(request.memory_bytes);
  spec.request.tier = TierOf(request.tier);
  spec.request.tenant = request.tenant;
  spec.request.models = ModelsFor(request.isolation);
  if (request.gpu) {
    if (Result<const GpuState*> named = NamedGpu(*request.gpu); named.ok()) spec.request.node = NodeOf((*named)->uuid);
  }
  spec.may_preempt = may_preempt;
  return spec;
}

Status SliceService::Account(int64_t now_unix_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  RetryReleasesLocked();
  Status result = Status::Ok();
  for (SliceRecord& slice : slices_) {
    if (Status status = AccountLocked(slice, now_unix_ms); !status.ok() && result.ok()) result = status;
  }
  if (retention_ms_ > 0) {
    Result<int64_t> pruned = store_->DeleteUsageBefore(now_unix_ms - retention_ms_);
    if (!pruned.ok() && result.ok()) result = pruned.status();
  }
  store_->RestoreReserve();
  return result;
}

UsageRecord SliceService::IntervalOf(const SliceRecord& slice, int64_t end_unix_ms, uint64_t busy_now) {
  const int64_t start = slice.accounted_until_ms != 0 ? slice.accounted_until_ms : slice.created_unix_ms;
  // A counter below the last reading was reset (the board was re-created): all of it is new.
  const uint64_t busy = busy_now >= slice.accounted_busy_ns ? busy_now - slice.accounted_busy_ns : busy_now;
  const double seconds = static_cast<double>(std::max<int64_t>(end_unix_ms - start, 0)) / 1000.0;
  return UsageRecord{slice.id,
                     slice.tenant,
                     slice.gpu_uuid,
                     start,
                     end_unix_ms,
                     seconds * slice.compute_share / 100.0,
                     static_cast<double>(slice.memory_bytes) / static_cast<double>(uint64_t{1} << 30) * seconds / 3600.0,
                     static_cast<double>(busy) / 1e9,
                     slice.labels};
}

Status SliceService::AccountLocked(SliceRecord& slice, int64_t now_unix_ms) {
  const int64_t start = slice.accounted_until_ms != 0 ? slice.accounted_until_ms : slice.created_unix_ms;
  if (now_unix_ms <= start) return Status::Ok();
  const uint64_t busy_now = busy_ ? busy_(slice) : slice.accounted_busy_ns;
  if (Status status = store_->CloseUsage(IntervalOf(slice, now_unix_ms, busy_now), now_unix_ms, busy_now); !status.ok()) {
    return status;
  }
  slice.accounted_until_ms = now_unix_ms;
  slice.accounted_busy_ns = busy_now;
  return Status::Ok();
}

void SliceService::RetryReleasesLocked() {
  std::erase_if(pending_releases_, [this](PendingRelease& pending) {
    SliceRecord& slice = pending.slice;
    const int64_t start = slice.accounted_until_ms != 0 ? slice.accounted_until_ms : slice.created_unix_ms;
    if (pending.released_unix_ms > start) {
      if (!store_->CloseUsage(IntervalOf(slice, pending.released_unix_ms, pending.busy_ns), pending.released_unix_ms,
                              pending.busy_ns)
               .ok()) {
        return false;
      }
      slice.accounted_until_ms = pending.released_unix_ms;
      slice.accounted_busy_ns = pending.busy_ns;
    }
    const Status forgotten = store_->DeleteSlice(slice.id);
    if (!forgotten.ok() && forgotten.code() != StatusCode::kNotFound) return false;
    Log(LogLevel::kInfo, "billed", {{"slice", slice.id}, {"reason", "the state database recovered"}});
    return true;
  });
}

int SliceService::PendingReleases() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(pending_releases_.size());
}

Status SliceService::Restore() {
  std::lock_guard<std::mutex> lock(mutex_);
  Result<std::vector<SliceRecord>> stored = store_->Slices();
  if (!stored.ok()) return stored.status();
  Result<std::vector<std::string>> exclusive = store_->ExclusiveGpus();
  if (!exclusive.ok()) return exclusive.status();
  exclusive_ = std::set<std::string>(exclusive->begin(), exclusive->end());
  Result<uint64_t> last = store_->LastSliceNumber();
  if (!last.ok()) return last.status();
  next_id_ = *last + 1;  // above every id this state directory ever stored: none is reused
  slices_ = *stored;
  int recreated = 0;
  for (const SliceRecord& record : slices_) {
    if (const std::optional<uint64_t> number = SliceNumberOf(record.id); number && *number >= next_id_) {
      next_id_ = *number + 1;
    }
    LogFields fields = SliceFields(record);
    if (slice::SliceAdmin::Open(record.dir).ok()) {  // intact: its workloads keep running
      SecureDirectory(record);  // made by an older agent: the modes and owner of today's
      fields.emplace_back("directory", "kept");
      Log(LogLevel::kInfo, "restore", fields);
      continue;
    }
    std::error_code ignored;
    std::filesystem::remove_all(record.dir, ignored);
    if (Status status = WriteDirectory(record); !status.ok()) return status;
    ++recreated;
    // Its workloads' ledger is gone with the old directory: their charges start again at 0.
    fields.emplace_back("directory", "recreated (it was missing or unreadable)");
    Log(LogLevel::kWarn, "restore", fields);
  }
  // The engine learns what runs where; a stored slice that no longer fits its GPU's model (it
  // shrank, or a configuration changed) keeps running but is not modelled, loudly.
  const int64_t now_ms = UnixMs();
  for (const SliceRecord& record : slices_) {
    const int node = NodeOf(record.gpu_uuid);
    CreateRequest as_asked;
    as_asked.memory_bytes = record.memory_bytes;
    as_asked.compute_share = record.compute_share;
    as_asked.tier = record.tier;
    as_asked.tenant = record.tenant;
    as_asked.isolation = record.isolation;
    const double age = static_cast<double>(std::max<int64_t>(0, now_ms - record.created_unix_ms)) / 1000;
    Result<sched::WorkloadId> adopted =
        node < 0 ? Result<sched::WorkloadId>(Status::NotFound("its GPU is not on this machine"))
                 : governor_->Adopt(SpecOf(as_asked, false), static_cast<sched::NodeId>(node), sched::GpuBit(0), Now() - age);
    if (!adopted.ok()) {
      Log(LogLevel::kError, "restore",
          {{"slice", record.id}, {"reason", "not placed in the engine: " + adopted.status().message()}});
      continue;
    }
    workload_of_[record.id] = *adopted;
    slices_of_[*adopted].push_back(record.id);
  }
  for (const std::string& uuid : exclusive_) CordonLocked(uuid);
  const int orphans = RemoveOrphans();
  Log(LogLevel::kInfo, "restored",
      {{"slices", std::to_string(slices_.size())},
       {"recreated", std::to_string(recreated)},
       {"orphans_removed", std::to_string(orphans)},
       {"next_id", SliceIdOf(next_id_)}});
  Result<std::vector<std::tuple<std::string, int64_t, uint64_t>>> members = store_->Members();
  if (!members.ok()) return members.status();
  std::map<std::string, std::vector<Member>> by_slice;
  for (const auto& [slice, pid, start_time] : *members) {
    by_slice[slice].push_back({static_cast<pid_t>(pid), start_time});
  }
  for (auto& [slice, list] : by_slice) membership_->Restore(slice, std::move(list));
  return Status::Ok();
}

int SliceService::RemoveOrphans() const {
  int removed = 0;
  // A directory without a record: a delete that crashed between its two steps (the record
  // goes first, so a deleted slice is never resurrected).
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(slices_dir_, error)) {
    const std::string dir = entry.path().string();
    // The same directory however its path was spelled when the record was written
    // ("state//slices/s1" by an agent started with --state state/): compared as files.
    const bool known = std::any_of(slices_.begin(), slices_.end(), [&](const SliceRecord& s) {
      std::error_code ignored;
      return s.dir == dir || std::filesystem::equivalent(s.dir, dir, ignored);
    });
    if (known) continue;
    Result<slice::SliceAdmin> admin = slice::SliceAdmin::Open(dir);
    if (admin.ok()) (void)admin->Remove();
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
    Log(LogLevel::kInfo, "orphan_removed", {{"dir", dir}, {"reason", "no record: a delete interrupted by a crash"}});
    ++removed;
  }
  return removed;
}

std::vector<GpuRoom> SliceService::RoomsLocked() const {
  std::vector<GpuRoom> rooms;
  for (const GpuState& gpu : gpus_) {
    if (gpu.uuid.empty()) continue;  // an unbound MIG slot
    GpuRoom room;
    room.gpu = gpu;
    room.exclusive = exclusive_.count(gpu.uuid) != 0;
    if (const auto fence = fenced_.find(gpu.uuid); fence != fenced_.end()) room.fenced = fence->second;
    for (const SliceRecord& slice : slices_) {
      if (slice.gpu_uuid != gpu.uuid) continue;
      room.memory_reserved += slice.memory_bytes;
      room.compute_reserved += slice.compute_share;
      room.slices++;
    }
    room.max_slices = max_slices_per_gpu_;
    rooms.push_back(room);
  }
  return rooms;
}

Status SliceService::SetExclusive(const std::string& gpu, bool exclusive) {
  std::lock_guard<std::mutex> lock(mutex_);
  Result<const GpuState*> named = NamedGpu(gpu);
  if (!named.ok()) return named.status();
  if (Status stored = store_->SetExclusive((*named)->uuid, exclusive); !stored.ok()) return stored;
  if (exclusive) {
    exclusive_.insert((*named)->uuid);
  } else {
    exclusive_.erase((*named)->uuid);
  }
  CordonLocked((*named)->uuid);
  if (!exclusive) ScheduleLocked();
  return Status::Ok();
}

Status SliceService::SetFenced(const std::string& gpu, const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  Result<const GpuState*> named = NamedGpu(gpu);
  if (!named.ok()) return named.status();
  if (!why.empty()) {
    fenced_[(*named)->uuid] = why;
    CordonLocked((*named)->uuid);
  } else if (fenced_.erase((*named)->uuid) != 0) {
    CordonLocked((*named)->uuid);
    ScheduleLocked();
  }
  return Status::Ok();
}

int SliceService::QueueLength() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(std::count_if(queue_.begin(), queue_.end(), [](const Queued& q) {
    return q.workload != 0 || (!q.request.gang.empty() && !q.placed && !q.failed);
  }));
}

std::vector<QueueEntry> SliceService::Queue() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<QueueEntry> entries;
  const auto now = std::chrono::steady_clock::now();
  int position = 0;
  for (sched::WorkloadId id : governor_->QueueOrder()) {
    const auto entry = std::find_if(queue_.begin(), queue_.end(), [&](const Queued& q) { return q.workload == id; });
    const sched::Workload* workload = governor_->Find(id);
    if (entry == queue_.end() || workload == nullptr) continue;
    entries.push_back({TicketTag(entry->ticket), ++position,
                       entry->request.owner ? static_cast<int64_t>(*entry->request.owner) : static_cast<int64_t>(entry->peer.uid),
                       entry->request.memory_bytes, entry->request.compute_share, entry->request.tier, entry->request.tenant,
                       std::chrono::duration_cast<std::chrono::milliseconds>(now - entry->queued_at).count(),
                       governor_->WhyWaiting(*workload)});
  }
  for (const Queued& entry : queue_) {  // gang members still arriving: not yet the Governor's
    if (entry.request.gang.empty() || entry.workload != 0 || entry.placed || entry.failed) continue;
    const auto pending = gangs_.find({OwnerOf(entry.request, entry.peer), entry.request.gang});
    const int missing = pending == gangs_.end() ? 0 : entry.request.gang_size - pending->second.arrived;
    entries.push_back({TicketTag(entry.ticket), ++position, OwnerOf(entry.request, entry.peer), entry.request.memory_bytes,
                       entry.request.compute_share, entry.request.tier, entry.request.tenant,
                       std::chrono::duration_cast<std::chrono::milliseconds>(now - entry.queued_at).count(),
                       "gang '" + entry.request.gang + "' waits for " + std::to_string(missing) + " more member(s)"});
  }
  return entries;
}

std::vector<QuotaUsage> SliceService::Quotas() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<QuotaUsage> quotas;
  const sched::QuotaTree& tree = governor_->quotas();
  const auto percent = [](int64_t milli) { return static_cast<uint32_t>(std::clamp<int64_t>(milli / 10, 0, UINT32_MAX)); };
  const auto bytes = [](int64_t value) { return static_cast<uint64_t>(std::max<int64_t>(0, value)); };
  for (int node = 1; tree.enabled() && node < tree.size(); ++node) {
    const sched::Amount used = tree.Usage(node);
    const sched::Amount nominal = tree.Nominal(node);
    const sched::Amount limit = {std::min(sched::kUnlimited, nominal.gpu_memory_bytes + tree.BorrowingLimit(node).gpu_memory_bytes),
                                 std::min(sched::kUnlimited, nominal.gpu_milli + tree.BorrowingLimit(node).gpu_milli)};
    quotas.push_back({tree.Name(node), tree.Parent(node) == sched::QuotaTree::kRoot ? "" : tree.Name(tree.Parent(node)),
                      bytes(used.gpu_memory_bytes), bytes(nominal.gpu_memory_bytes), bytes(limit.gpu_memory_bytes),
                      percent(used.gpu_milli), percent(nominal.gpu_milli), percent(limit.gpu_milli)});
  }
  return quotas;
}

std::vector<Preemption> SliceService::TakePreemptions() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(preemptions_, {});
}

std::vector<GpuRoom> SliceService::Rooms() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return RoomsLocked();
}

Result<const GpuState*> SliceService::NamedGpu(const std::string& selector) const {
  for (const GpuState& gpu : gpus_) {
    if (gpu.uuid.empty()) continue;  // an unbound MIG slot
    // An index names the whole GPU, not one of its MIG instances (they share it).
    if (gpu.uuid == selector || (gpu.parent_uuid.empty() && std::to_string(gpu.index) == selector)) return &gpu;
  }
  return Status::NotFound("no GPU '" + selector + "' on this machine");
}

// The user whose processes charge the slice's ledger: its owner, when the agent can give a file
// away (root) and the owner is someone else; else nobody but the agent's own user.
std::optional<slice::FileOwner> SliceService::LedgerOwner(const SliceRecord& record) {
  if (record.owner_uid < 0 || geteuid() != 0 || static_cast<uid_t>(record.owner_uid) == geteuid()) return std::nullopt;
  const auto uid = static_cast<uid_t>(record.owner_uid);
  slice::FileOwner owner{uid, static_cast<gid_t>(uid)};
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  if (getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr) owner.gid = found->pw_gid;
  return owner;
}

Status SliceService::WriteDirectory(const SliceRecord& record) const {
  std::error_code error;
  std::filesystem::create_directories(slices_dir_, error);
  if (error) return Status::Unavailable("cannot create " + slices_dir_ + ": " + error.message());
  // Workloads reach their slice by name; nobody lists the others' (the agent's umask is 077).
  chmod(slices_dir_.c_str(), 0711);
  const std::optional<slice::FileOwner> owner = LedgerOwner(record);
  Result<slice::SliceAdmin> admin = slice::SliceAdmin::Create(record.dir, SliceSpecOf(record), owner ? &*owner : nullptr);
  return admin.ok() ? Status::Ok() : admin.status();
}

void SliceService::SecureDirectory(const SliceRecord& record) const {
  chmod(slices_dir_.c_str(), 0711);
  const int dir = open(record.dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) return;
  fchmod(dir, 0755);
  const std::optional<slice::FileOwner> owner = LedgerOwner(record);
  if (owner) fchownat(dir, slice::kLedgerFileName, owner->uid, owner->gid, AT_SYMLINK_NOFOLLOW);
  const int ledger = openat(dir, slice::kLedgerFileName, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (ledger >= 0) {
    fchmod(ledger, 0600);
    close(ledger);
  }
  close(dir);
}

std::string SliceService::NewId() { return SliceIdOf(next_id_++); }

Status SliceService::Validate(const CreateRequest& request, const net::Peer& peer) const {
  if (request.memory_bytes == 0) return Status::InvalidArgument("memory must be more than 0 bytes");
  if (request.compute_share && (*request.compute_share < 1 || *request.compute_share > 100)) {
    return Status::InvalidArgument("compute must be 1..100 (percent of one GPU)");
  }
  if (request.isolation != Isolation::kTrusted && request.compute_share) {
    return Status::InvalidArgument(std::string(ToString(request.isolation)) +
                                   " isolation gives the whole instance or GPU: name no compute share");
  }
  if (request.mig_profile || request.mig_start) {
    return Status::InvalidArgument("mig_profile names an instance of a GPU in MIG mode, and this machine has none");
  }
  if (!ValidName(request.tenant)) return Status::InvalidArgument("tenant must be 1-63 of [A-Za-z0-9._-]");
  if (Status labels = ValidateLabels(request.labels); !labels.ok()) return labels;
  if ((request.release_on_exit || request.wait) && (!peer.unix_socket || peer.pid <= 0)) {
    return Status::InvalidArgument("release on exit and waiting need the Unix socket, where the agent knows who asks");
  }
  return Status::Ok();
}

Result<SliceRecord> SliceService::Create(const CreateRequest& request, const net::Peer& peer) {
  if (Status valid = Validate(request, peer); !valid.ok()) return valid;
  const uint64_t start_time = peer.unix_socket && peer.pid > 0 ? slice::ReadStartTime(peer.pid) : 0;
  std::lock_guard<std::mutex> lock(mutex_);
  return CreateLocked(request, peer, start_time);
}

Result<SliceRecord> SliceService::CreateLocked(const CreateRequest& request, const net::Peer& peer,
                                               uint64_t owner_start_time) {
  if (request.gpu) {
    if (Result<const GpuState*> named = NamedGpu(*request.gpu); !named.ok()) return named.status();
  }
  Result<sched::WorkloadId> id = governor_->Submit(SpecOf(request, /*may_preempt=*/false), Now());
  if (!id.ok()) return Status::InvalidArgument(id.status().message());
  if (ScheduleLocked(*id)) return MakeSliceLocked(*id, request, peer, owner_start_time);
  const sched::Workload* workload = governor_->Find(*id);
  Status refusal = workload != nullptr ? RefusalLocked(request, *workload) : Status::ResourceExhausted("no GPU has room");
  (void)governor_->Cancel(*id, Now());
  return refusal;
}

Result<SliceRecord> SliceService::MakeSliceLocked(sched::WorkloadId workload_id, const CreateRequest& request,
                                                  const net::Peer& peer, uint64_t owner_start_time, size_t member) {
  const sched::Workload* workload = governor_->Find(workload_id);
  if (workload == nullptr || workload->placements.size() <= member) return Status::Internal("the placement is gone");
  const GpuState& gpu = gpus_[workload->placements[member].node];
  SliceRecord record;
  record.id = NewId();
  record.gpu_uuid = gpu.uuid;
  record.isolation = request.isolation;
  record.memory_bytes = request.isolation == Isolation::kTrusted ? request.memory_bytes : gpu.memory_total;
  record.compute_share = static_cast<uint32_t>(workload->spec.request.gpu_milli / 10);
  record.compute_mode = request.compute_mode;
  record.tier = request.tier;
  record.tenant = request.tenant;
  record.labels = request.labels;
  record.kube = request.kube;
  record.idempotency_key = request.idempotency_key;
  record.owner_uid = request.owner ? static_cast<int64_t>(*request.owner)
                                  : peer.unix_socket ? static_cast<int64_t>(peer.uid)
                                                     : -1;
  record.owner_pid = peer.unix_socket ? static_cast<int64_t>(peer.pid) : -1;
  record.owner_start_time = owner_start_time;
  record.release_on_exit = request.release_on_exit;
  record.dir = slices_dir_ + "/" + record.id;
  record.created_unix_ms = UnixMs();
  if (LogEnabled(LogLevel::kDebug)) {
    Log(LogLevel::kDebug, "place",
        {{"gpu", gpu.uuid}, {"by", policy_}, {"memory", CompactBytes(record.memory_bytes)},
         {"compute", std::to_string(record.compute_share)}});
  }
  std::error_code ignored;
  std::filesystem::remove_all(record.dir, ignored);  // a leftover of a record that was never written
  Status written = WriteDirectory(record);
  if (written.ok()) {
    written = store_->PutSlice(record);
    if (!written.ok()) std::filesystem::remove_all(record.dir, ignored);
  }
  if (!written.ok()) {
    // Nothing half-made: the room goes back (a gang's, once none of its members holds a slice).
    if (slices_of_.count(workload_id) == 0) (void)governor_->Cancel(workload_id, Now());
    return written;
  }
  workload_of_[record.id] = workload_id;
  slices_of_[workload_id].push_back(record.id);
  slices_.push_back(record);
  Notify(record, /*gone=*/false);
  Log(LogLevel::kInfo, "create", SliceFields(record));
  return record;
}

Status SliceService::RefusalLocked(const CreateRequest& request, const sched::Workload& workload) const {
  if (workload.wait == sched::Wait::kQuota || workload.wait == sched::Wait::kStrictOrder) {
    return Status::ResourceExhausted(governor_->WhyWaiting(workload));
  }
  const uint32_t share = ShareOf(request);
  const std::vector<GpuRoom> rooms = RoomsLocked();
  if (request.gpu) {
    Result<const GpuState*> named = NamedGpu(*request.gpu);
    if (!named.ok()) return named.status();
    if (std::string wrong = ClassRefusal(**named, *request.gpu, request.isolation); !wrong.empty()) {
      return Status::ResourceExhausted(wrong);
    }
    for (const GpuRoom& room : rooms) {
      if (room.gpu.uuid != (*named)->uuid) continue;
      if (request.isolation != Isolation::kTrusted && room.slices > 0) {
        return Status::ResourceExhausted("GPU " + *request.gpu + " holds slices: it cannot be had whole");
      }
      if (room.exclusive) return Status::ResourceExhausted("GPU " + *request.gpu + " is in exclusive mode");
      if (!room.fenced.empty()) {
        const std::string by = room.fenced == kMigDrainFence ? "" : "stop-loss: ";
        return Status::ResourceExhausted("GPU " + *request.gpu + " takes no new slices for now (" + by + room.fenced + ")");
      }
      if (room.max_slices != 0 && room.slices >= room.max_slices) {
        return Status::ResourceExhausted("GPU " + *request.gpu + " holds " + std::to_string(room.slices) +
                                         " slices, the most its compute board has rows for");
      }
      const bool fits = room.memory_reserved + request.memory_bytes <= room.gpu.memory_total &&
                        room.compute_reserved + share <= 100;
      if (fits) return Status::ResourceExhausted("GPU " + *request.gpu + " is held for a waiting request");
      return Status::ResourceExhausted("GPU " + *request.gpu + " has " +
                                       FormatByteSize(room.gpu.memory_total - room.memory_reserved) + " and " +
                                       std::to_string(100 - room.compute_reserved) + " % compute left");
    }
  }
  if (request.isolation == Isolation::kHard) {
    return Status::ResourceExhausted("no free MIG instance of this machine holds " + FormatByteSize(request.memory_bytes) +
                                     " (hard isolation takes a MIG instance whole)");
  }
  if (request.isolation == Isolation::kExclusive) {
    return Status::ResourceExhausted("no GPU of the exclusive class with " + FormatByteSize(request.memory_bytes) +
                                     " is free");
  }
  return Status::ResourceExhausted("no GPU has " + FormatByteSize(request.memory_bytes) + " and " +
                                   (request.compute_share ? std::to_string(*request.compute_share) + " %"
                                                          : std::string("that much")) +
                                   " compute free");
}

Result<QueueStatus> SliceService::CreateOrQueue(const CreateRequest& request, const net::Peer& peer) {
  if (Status valid = Validate(request, peer); !valid.ok()) return valid;
  const uint64_t start_time = peer.unix_socket && peer.pid > 0 ? slice::ReadStartTime(peer.pid) : 0;
  std::lock_guard<std::mutex> lock(mutex_);
  if (std::optional<Result<QueueStatus>> existing = ExistingLocked(request, peer)) return *existing;
  if (!request.gang.empty()) return JoinGangLocked(request, peer, start_time);
  if (!request.wait) {
    Result<SliceRecord> created = CreateLocked(request, peer, start_time);
    if (!created.ok()) return created.status();
    return QueueStatus{"", 0, *created};
  }
  if (request.gpu) {
    if (Result<const GpuState*> named = NamedGpu(*request.gpu); !named.ok()) return named.status();
  }
  // Only requests that could ever fit wait: one larger than every GPU is refused now.
  const bool could_fit = std::any_of(gpus_.begin(), gpus_.end(), [&](const GpuState& gpu) {
    return !gpu.uuid.empty() && request.memory_bytes <= gpu.memory_total && Accepts(gpu, request.isolation) &&
           (!request.gpu || *NamedGpu(*request.gpu) == &gpu);
  });
  if (!could_fit) {
    if (request.gpu) {
      if (std::string wrong = ClassRefusal(**NamedGpu(*request.gpu), *request.gpu, request.isolation); !wrong.empty()) {
        return Status::ResourceExhausted(wrong);
      }
    }
    return Status::ResourceExhausted("no GPU of this machine is large enough, even empty" +
                                     std::string(request.isolation == Isolation::kTrusted ? ""
                                                                                         : " (for " + std::string(ToString(request.isolation)) +
                                                                                               " isolation)"));
  }
  Result<sched::WorkloadId> id = governor_->Submit(SpecOf(request, /*may_preempt=*/true), Now());
  if (!id.ok()) return Status::InvalidArgument(id.status().message());
  if (ScheduleLocked(*id)) {
    Result<SliceRecord> created = MakeSliceLocked(*id, request, peer, start_time);
    if (!created.ok()) return created.status();
    return QueueStatus{"", 0, *created};
  }
  Queued entry{NewTicket(), request, peer, start_time, std::nullopt, std::chrono::steady_clock::now(), *id, std::nullopt};
  queue_.push_back(entry);
  const int position = PositionLocked(*id);
  Log(LogLevel::kInfo, "enqueue",
      {{"ticket", TicketTag(entry.ticket)},
       {"position", std::to_string(position)},
       {"memory", CompactBytes(request.memory_bytes)},
       {"compute", request.compute_share ? std::to_string(*request.compute_share) : std::string("auto")},
       {"tier", slice::ToString(request.tier)},
       {"tenant", request.tenant},
       {"uid", std::to_string(request.owner ? *request.owner : peer.uid)},
       {"reason", governor_->WhyWaiting(*governor_->Find(*id))}});
  return QueueStatus{entry.ticket, position, std::nullopt};
}

int64_t SliceService::OwnerOf(const CreateRequest& request, const net::Peer& peer) {
  return request.owner ? static_cast<int64_t>(*request.owner) : static_cast<int64_t>(peer.uid);
}

Result<QueueStatus> SliceService::JoinGangLocked(const CreateRequest& request, const net::Peer& peer,
                                                 uint64_t owner_start_time) {
  if (request.gang_size < 2 || request.gang_size > 64) return Status::InvalidArgument("gang_size must be 2..64");
  if (!request.wait) return Status::InvalidArgument("a gang's members wait for each other: ask with wait");
  if (request.gpu) return Status::InvalidArgument("a gang's members are placed by the agent: name no GPU");
  const int64_t owner = OwnerOf(request, peer);
  const auto key = std::make_pair(owner, request.gang);
  auto [pending, added] = gangs_.try_emplace(key, PendingGang{request, 0, std::chrono::steady_clock::now()});
  const CreateRequest& first = pending->second.request;
  if (!added && (first.memory_bytes != request.memory_bytes || first.compute_share != request.compute_share ||
                 first.compute_mode != request.compute_mode || first.tier != request.tier ||
                 first.tenant != request.tenant || first.gang_size != request.gang_size ||
                 first.isolation != request.isolation)) {
    return Status::InvalidArgument("gang '" + request.gang + "' has members asking other limits or another size; "
                                   "every member asks the same");
  }
  ++pending->second.arrived;
  Queued entry{NewTicket(), request, peer, owner_start_time, std::nullopt, std::chrono::steady_clock::now(), 0, std::nullopt};
  queue_.push_back(entry);
  const std::string ticket = entry.ticket;
  Log(LogLevel::kInfo, "enqueue",
      {{"ticket", TicketTag(ticket)}, {"gang", request.gang},
       {"member", std::to_string(pending->second.arrived) + "/" + std::to_string(request.gang_size)},
       {"memory", CompactBytes(request.memory_bytes)}, {"tier", slice::ToString(request.tier)},
       {"tenant", request.tenant}, {"uid", std::to_string(owner)}});
  if (pending->second.arrived < request.gang_size) return QueueStatus{ticket, PositionLocked(0), std::nullopt};
  // Complete: one workload of gang_size members for the Governor.
  sched::WorkloadSpec spec = SpecOf(request, /*may_preempt=*/true);
  spec.members = request.gang_size;
  gangs_.erase(pending);
  Result<sched::WorkloadId> id = governor_->Submit(spec, Now());
  if (!id.ok()) {
    FailGangLocked(owner, request.gang, id.status().message());
    return Status::InvalidArgument(id.status().message());
  }
  for (Queued& member : queue_) {
    if (member.request.gang == request.gang && OwnerOf(member.request, member.peer) == owner && member.workload == 0 &&
        !member.placed && !member.failed) {
      member.workload = *id;
    }
  }
  ScheduleLocked();
  for (const Queued& member : queue_) {
    if (member.ticket != ticket) continue;
    if (member.failed) return *member.failed;
    if (member.placed) return QueueStatus{ticket, 0, member.placed};
    return QueueStatus{ticket, PositionLocked(*id), std::nullopt};
  }
  return Status::Internal("the gang's ticket is gone");
}

void SliceService::FailGangLocked(int64_t owner, const std::string& gang, const std::string& why) {
  gangs_.erase(std::make_pair(owner, gang));
  for (Queued& member : queue_) {
    if (member.request.gang != gang || OwnerOf(member.request, member.peer) != owner || member.placed || member.failed) continue;
    if (member.workload != 0) (void)governor_->Cancel(member.workload, Now());
    member.workload = 0;
    member.failed = Status::ResourceExhausted("gang '" + gang + "': " + why);
    Log(LogLevel::kInfo, "dequeue", {{"ticket", TicketTag(member.ticket)}, {"reason", why}});
  }
}

int SliceService::PositionLocked(sched::WorkloadId id) const {
  const std::vector<sched::WorkloadId> order = governor_->QueueOrder();
  const auto found = std::find(order.begin(), order.end(), id);
  // Not (yet) the Governor's — a gang still gathering its members: after everyone it orders.
  return found == order.end() ? static_cast<int>(order.size()) + 1 : static_cast<int>(found - order.begin()) + 1;
}

std::optional<Result<QueueStatus>> SliceService::ExistingLocked(const CreateRequest& request, const net::Peer& peer) {
  if (request.idempotency_key.empty()) return std::nullopt;
  const std::string& key = request.idempotency_key;
  const int64_t owner = request.owner ? static_cast<int64_t>(*request.owner)
                                      : peer.unix_socket ? static_cast<int64_t>(peer.uid)
                                                         : -1;
  // The key is its owner's: another's request learns only that it cannot have it.
  const auto taken = [&] {
    return Status::ResourceExhausted("idempotency key " + key + " is already in use by another owner; use another key");
  };
  // A whole instance or GPU holds at least what was asked; a trusted slice exactly that.
  const auto same_limits = [&](uint64_t memory, std::optional<uint32_t> share, slice::ComputeMode mode, slice::Tier tier,
                               Isolation isolation, const std::function<bool(const std::string&)>& on_gpu) {
    const bool same_memory = isolation == Isolation::kTrusted ? memory == request.memory_bytes : memory >= request.memory_bytes;
    const bool same_share = isolation != Isolation::kTrusted || !request.compute_share || share == request.compute_share;
    return isolation == request.isolation && same_memory && same_share && mode == request.compute_mode &&
           tier == request.tier && (!request.gpu || on_gpu(*request.gpu));
  };
  for (const SliceRecord& slice : slices_) {
    if (slice.idempotency_key != key) continue;
    if (slice.owner_uid != owner) return Result<QueueStatus>(taken());
    const auto on_gpu = [&](const std::string& selector) {
      if (selector == slice.gpu_uuid) return true;
      return std::any_of(gpus_.begin(), gpus_.end(), [&](const GpuState& gpu) {
        return gpu.uuid == slice.gpu_uuid && std::to_string(gpu.index) == selector;
      });
    };
    if (!same_limits(slice.memory_bytes, slice.compute_share, slice.compute_mode, slice.tier, slice.isolation, on_gpu)) {
      return Result<QueueStatus>(Status::ResourceExhausted(
          "idempotency key " + key + " already made slice " + slice.id + " with other limits (" +
          FormatByteSize(slice.memory_bytes) + ", " + std::to_string(slice.compute_share) + " % compute, " +
          slice::ToString(slice.compute_mode) + ", " + slice::ToString(slice.tier) + ", on " + slice.gpu_uuid +
          "); delete it or use another key"));
    }
    QueueStatus found{"", 0, slice};
    found.existing = true;
    return Result<QueueStatus>(found);
  }
  for (const Queued& entry : queue_) {
    if (entry.request.idempotency_key != key || entry.workload == 0) continue;
    const int64_t queued_owner = entry.request.owner ? static_cast<int64_t>(*entry.request.owner)
                                                     : static_cast<int64_t>(entry.peer.uid);
    if (queued_owner != owner) return Result<QueueStatus>(taken());
    const CreateRequest& queued = entry.request;
    const auto on_gpu = [&](const std::string& selector) { return queued.gpu && *queued.gpu == selector; };
    if (!same_limits(queued.memory_bytes, queued.compute_share, queued.compute_mode, queued.tier, queued.isolation, on_gpu) ||
        queued.compute_share != request.compute_share) {
      return Result<QueueStatus>(
          Status::ResourceExhausted("idempotency key " + key + " is already queued with other limits; cancel it or use another key"));
    }
    QueueStatus found{entry.ticket, PositionLocked(entry.workload), std::nullopt};
    found.existing = true;
    return Result<QueueStatus>(found);
  }
  return std::nullopt;
}

Result<QueueStatus> SliceService::Poll(const std::string& ticket) {
  std::lock_guard<std::mutex> lock(mutex_);
  ScheduleLocked();
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->ticket != ticket) continue;
    if (it->failed) {
      Status failed = *it->failed;
      queue_.erase(it);
      return failed;
    }
    if (!it->placed) return QueueStatus{ticket, PositionLocked(it->workload), std::nullopt};
    QueueStatus done{ticket, 0, it->placed};
    queue_.erase(it);
    return done;
  }
  return Status::NotFound("no queued request " + ticket + " (the agent may have restarted: ask again)");
}

Result<int64_t> SliceService::TicketOwner(const std::string& ticket) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Queued& entry : queue_) {
    if (entry.ticket != ticket) continue;
    return entry.request.owner ? static_cast<int64_t>(*entry.request.owner) : static_cast<int64_t>(entry.peer.uid);
  }
  return Status::NotFound("no queued request " + ticket + " (the agent may have restarted: ask again)");
}

Status SliceService::Cancel(const std::string& ticket) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find_if(queue_.begin(), queue_.end(), [&](const Queued& q) { return q.ticket == ticket; });
  if (it == queue_.end()) return Status::NotFound("no queued request " + ticket);
  if (it->placed) {
    (void)DeleteLocked(it->placed->id, "its queue ticket was cancelled");
  } else if (!it->request.gang.empty() && !it->failed) {
    const int64_t owner = OwnerOf(it->request, it->peer);
    const std::string gang = it->request.gang;
    FailGangLocked(owner, gang, "a member was cancelled");
    it = std::find_if(queue_.begin(), queue_.end(), [&](const Queued& q) { return q.ticket == ticket; });
  } else {
    if (it->workload != 0) (void)governor_->Cancel(it->workload, Now());
    Log(LogLevel::kInfo, "dequeue", {{"ticket", TicketTag(ticket)}, {"reason", "cancelled"}});
  }
  queue_.erase(it);
  ScheduleLocked();
  return Status::Ok();
}

bool SliceService::ScheduleLocked(sched::WorkloadId direct) {
  bool started_direct = false;
  for (const sched::Action& action : governor_->Schedule(Now())) {
    if (action.kind == sched::Action::Kind::kStart && action.workload == direct) {
      started_direct = true;
      continue;
    }
    if (action.kind == sched::Action::Kind::kPreempt) {
      const auto victim = slices_of_.find(action.workload);
      if (victim == slices_of_.end()) {
        (void)governor_->Cancel(action.workload, Now());  // not a slice (it was being made): nothing to evict
        continue;
      }
      const sched::Workload* preemptor = governor_->Find(action.for_workload);
      static constexpr const char* kTierNames[] = {"batch", "standard", "latency"};
      const std::string tier = preemptor != nullptr ? kTierNames[static_cast<int>(preemptor->spec.request.tier)] : "higher";
      for (const std::string& id : victim->second) {  // a gang ends whole
        const auto slice = std::find_if(slices_.begin(), slices_.end(), [&](const SliceRecord& s) { return s.id == id; });
        if (slice == slices_.end()) continue;
        preemptions_.push_back({*slice, action.reason == "reclaim"
                                            ? "preempted: a tenant wants back the quota its own tenant borrowed"
                                            : "preempted: a " + tier + "-tier request needs its room"});
      }
      continue;
    }
    size_t member = 0;
    for (Queued& entry : queue_) {
      if (entry.workload != action.workload) continue;
      entry.workload = 0;
      const auto waited =
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - entry.queued_at);
      if (action.kind == sched::Action::Kind::kExpire) {
        entry.failed = Status::ResourceExhausted(action.reason);
        Log(LogLevel::kInfo, "dequeue", {{"ticket", TicketTag(entry.ticket)}, {"reason", action.reason}});
        continue;
      }
      Result<SliceRecord> created =
          MakeSliceLocked(action.workload, entry.request, entry.peer, entry.owner_start_time, member++);
      if (!created.ok()) {
        entry.failed = created.status();
        Log(LogLevel::kWarn, "dequeue", {{"ticket", TicketTag(entry.ticket)}, {"reason", created.status().message()}});
        continue;
      }
      entry.placed = *created;
      Log(LogLevel::kInfo, "dequeue",
          {{"ticket", TicketTag(entry.ticket)},
           {"slice", created->id},
           {"reason", "placed"},
           {"waited_ms", std::to_string(waited.count())}});
    }
  }
  return started_direct;
}

// Whether a process of the slice still runs: one its ledger lists or its cgroup holds that proves
// to be a member (membership.h). A ledger is its owner's to write: a pid planted there, another
// user's or a dead one, keeps nothing alive. The agent only reads the ledger; workloads reap it.
bool SliceService::HasLiveProcess(const SliceRecord& slice) const {
  std::vector<std::pair<pid_t, uint64_t>> candidates;
  if (Result<slice::SliceAdmin> admin = slice::SliceAdmin::Open(slice.dir); admin.ok()) {
    for (const slice::ProcessUsage& process : admin->Usage().processes) {
      candidates.emplace_back(process.pid, process.start_time);
    }
  }
  for (pid_t pid : membership_->CgroupProcesses(slice.id)) candidates.emplace_back(pid, 0);
  for (const auto& [pid, start_time] : candidates) {
    const std::optional<ProcessFacts> facts = ReadProcess(pid);
    if (!facts || (start_time != 0 && facts->start_time != start_time)) continue;
    if (membership_->BelongsTo(*facts, slice)) return true;
  }
  return false;
}

Result<std::string> SliceService::Join(const std::string& id, pid_t pid) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find_if(slices_.begin(), slices_.end(), [&](const SliceRecord& s) { return s.id == id; });
  if (it == slices_.end()) return Status::NotFound("no slice " + id);
  const std::optional<ProcessFacts> facts = ReadProcess(pid);
  if (!facts || facts->zombie) return Status::NotFound("process " + std::to_string(pid) + " is gone");
  if (Status stored = store_->AddMember(id, facts->pid, facts->start_time); !stored.ok()) return stored;
  if (Status joined = membership_->Join(*it, *facts); !joined.ok()) {
    Log(LogLevel::kWarn, "join",
        {{"slice", id}, {"pid", std::to_string(pid)}, {"reason", joined.message() + " (membership by process tree only)"}});
  }
  return it->labels.job.empty() ? membership_->CgroupPathOf(id) : std::string();
}

std::vector<std::string> SliceService::Reap() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> reaped;
  std::vector<std::string> candidates;
  for (const SliceRecord& slice : slices_) {
    if (!slice.release_on_exit) continue;
    if (!slice::IsProcessDead(static_cast<int32_t>(slice.owner_pid), slice.owner_start_time)) continue;
    if (HasLiveProcess(slice)) continue;
    candidates.push_back(slice.id);
  }
  for (const std::string& id : candidates) {
    if (DeleteLocked(id, "released: its owner and every process of it exited").ok()) reaped.push_back(id);
  }
  // A gang whose members did not all arrive in time, or one of whose waiting clients exited, fails whole.
  std::vector<std::pair<int64_t, std::string>> expired;
  for (const auto& [key, pending] : gangs_) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - pending.first).count() >
        governor_->options().gang_timeout) {
      expired.push_back(key);
    }
  }
  for (const auto& [owner, gang] : expired) FailGangLocked(owner, gang, "its members did not all arrive in time");
  for (const Queued& entry : queue_) {
    if (!entry.request.gang.empty() && !entry.placed && !entry.failed &&
        slice::IsProcessDead(entry.peer.pid, entry.owner_start_time)) {
      FailGangLocked(OwnerOf(entry.request, entry.peer), entry.request.gang, "a member's client exited");
    }
  }
  std::erase_if(queue_, [&](const Queued& entry) {
    const bool dead = slice::IsProcessDead(entry.peer.pid, entry.owner_start_time);
    if (!dead) return false;
    if (entry.placed) {
      (void)DeleteLocked(entry.placed->id, "its waiting client exited before taking it");
    } else {
      if (entry.workload != 0) (void)governor_->Cancel(entry.workload, Now());
      Log(LogLevel::kInfo, "dequeue", {{"ticket", TicketTag(entry.ticket)}, {"reason", "its client exited"}});
    }
    return true;
  });
  ScheduleLocked();  // also what time alone changes: fair share, delays, gang timeouts
  return reaped;
}

std::vector<SliceRecord> SliceService::List() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return slices_;
}

Result<SliceRecord> SliceService::Get(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const SliceRecord& slice : slices_) {
    if (slice.id == id) return slice;
  }
  return Status::NotFound("no slice " + id);
}

Result<SliceRecord> SliceService::Resize(const std::string& id, const ResizeRequest& request) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find_if(slices_.begin(), slices_.end(), [&](const SliceRecord& s) { return s.id == id; });
  if (it == slices_.end()) return Status::NotFound("no slice " + id);
  SliceRecord updated = *it;
  if (request.memory_bytes) updated.memory_bytes = *request.memory_bytes;
  if (request.compute_share) updated.compute_share = *request.compute_share;
  if (request.compute_mode) updated.compute_mode = *request.compute_mode;
  if (request.tier) updated.tier = *request.tier;
  if (it->isolation != Isolation::kTrusted &&
      (updated.memory_bytes != it->memory_bytes || updated.compute_share != it->compute_share)) {
    return Status::InvalidArgument("slice " + id + " has its " + (it->isolation == Isolation::kHard ? "MIG instance" : "GPU") +
                                   " whole (" + std::string(ToString(it->isolation)) +
                                   " isolation): its memory and compute are the instance's");
  }
  if (updated.memory_bytes == 0) return Status::InvalidArgument("memory must be more than 0 bytes");
  if (updated.compute_share < 1 || updated.compute_share > 100) {
    return Status::InvalidArgument("compute must be 1..100 (percent of one GPU)");
  }
  if (const auto workload = workload_of_.find(id); workload != workload_of_.end()) {
    CreateRequest as_asked;
    as_asked.memory_bytes = updated.memory_bytes;
    as_asked.compute_share = updated.compute_share;
    as_asked.tier = updated.tier;
    as_asked.tenant = updated.tenant;
    as_asked.isolation = updated.isolation;
    sched::Request resized = SpecOf(as_asked, false).request;
    resized.node = NodeOf(updated.gpu_uuid);
    if (Status grown = governor_->Resize(workload->second, resized, Now()); !grown.ok()) {
      const std::string quota = grown.message().find("quota") != std::string::npos ? " (" + grown.message() + ")" : "";
      return Status::ResourceExhausted("GPU " + updated.gpu_uuid + " has no room to grow slice " + id + quota);
    }
  }
  if (Status billed = AccountLocked(*it, UnixMs()); !billed.ok()) return billed;  // at the old limits
  updated.accounted_until_ms = it->accounted_until_ms;
  updated.accounted_busy_ns = it->accounted_busy_ns;
  Result<slice::SliceAdmin> admin = slice::SliceAdmin::Open(updated.dir);
  if (!admin.ok()) return admin.status();
  if (Status status = admin->SetMemoryCap(0, updated.memory_bytes); !status.ok()) return status;
  if (Status status = admin->SetCompute(0, updated.compute_share, updated.compute_mode, updated.tier); !status.ok()) {
    return status;
  }
  if (Status status = store_->PutSlice(updated); !status.ok()) return status;
  *it = updated;
  Notify(updated, /*gone=*/false);
  Log(LogLevel::kInfo, "resize", SliceFields(updated));
  ScheduleLocked();  // a slice that shrank may make room
  return updated;
}

Status SliceService::Delete(const std::string& id, const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (Status deleted = DeleteLocked(id, why); !deleted.ok()) return deleted;
  ScheduleLocked();
  return Status::Ok();
}

Status SliceService::DeleteLocked(const std::string& id, const std::string& why) {
  auto it = std::find_if(slices_.begin(), slices_.end(), [&](const SliceRecord& s) { return s.id == id; });
  if (it == slices_.end()) return Status::NotFound("no slice " + id);
  // Release first: a slice must be deletable when the state database cannot be written (a full
  // disk). Its last interval is then billed, and its record forgotten, once it can be.
  const int64_t now = UnixMs();
  const uint64_t busy_now = busy_ ? busy_(*it) : it->accounted_busy_ns;
  Status recorded = AccountLocked(*it, now);
  if (recorded.ok()) recorded = store_->DeleteSlice(id);
  if (!recorded.ok() && recorded.code() != StatusCode::kNotFound) {
    Log(LogLevel::kWarn, "bill_later", {{"slice", id}, {"reason", "released, billed later: " + recorded.message()}});
    pending_releases_.push_back({*it, now, busy_now});
  }
  Result<slice::SliceAdmin> admin = slice::SliceAdmin::Open(it->dir);
  if (admin.ok()) (void)admin->Remove();
  std::error_code ignored;
  std::filesystem::remove_all(it->dir, ignored);
  membership_->Forget(id);
  if (const auto workload = workload_of_.find(id); workload != workload_of_.end()) {
    std::vector<std::string>& members = slices_of_[workload->second];
    std::erase(members, id);
    if (members.empty()) {  // a gang's room goes back with its last member
      (void)governor_->Finish(workload->second, Now());
      slices_of_.erase(workload->second);
    }
    workload_of_.erase(workload);
  }
  const SliceRecord gone = *it;
  slices_.erase(it);
  Notify(gone, /*gone=*/true);
  LogFields fields = SliceFields(gone);
  fields.emplace_back("reason", why);
  Log(LogLevel::kInfo, "delete", fields);
  return Status::Ok();
}

void SliceService::Notify(const SliceRecord& slice, bool gone) const {
  if (observer_) observer_(slice, gone);
  for (const auto& [handle, observer] : observers_) observer(slice, gone);
}

int SliceService::AddObserver(Observer observer) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int handle = next_observer_++;
  observers_.emplace(handle, std::move(observer));
  return handle;
}

void SliceService::RemoveObserver(int handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  observers_.erase(handle);
}

void SliceService::SetObserver(Observer observer) {
  std::lock_guard<std::mutex> lock(mutex_);
  observer_ = std::move(observer);
}

Status SliceService::SetMigInstances(const std::string& parent, const std::vector<GpuState>& instances) {
  std::lock_guard<std::mutex> lock(mutex_);
  // The same instance: a UUID may come back for another instance (the driver may number a new
  // GPU instance as one it destroyed), so its profile and place must match too.
  const auto same = [](const GpuState& a, const GpuState& b) {
    return a.uuid == b.uuid && a.mig_profile == b.mig_profile && a.mig_start == b.mig_start;
  };
  const auto listed = [&](const GpuState& gpu) {
    return std::any_of(instances.begin(), instances.end(), [&](const GpuState& g) { return same(g, gpu); });
  };
  // First every instance that goes, so that a refusal changes nothing.
  std::vector<size_t> going;
  for (size_t node = 0; node < gpus_.size(); ++node) {
    const GpuState& gpu = gpus_[node];
    if (gpu.parent_uuid != parent || gpu.uuid.empty() || listed(gpu)) continue;
    const auto held = std::find_if(slices_.begin(), slices_.end(), [&](const SliceRecord& s) { return s.gpu_uuid == gpu.uuid; });
    if (held != slices_.end()) {
      return Status::ResourceExhausted("the " + gpu.mig_profile + " instance at memory slice " +
                                       std::to_string(gpu.mig_start) + " holds slice " + held->id);
    }
    going.push_back(node);
  }
  for (size_t node : going) {
    GpuState& gpu = gpus_[node];
    GpuState slot = UnboundSlot(gpu.index, parent, gpu.minor);
    if (Status empty = scheduler_->Reshape(static_cast<sched::NodeId>(node), NodeNameOf(slot, node), 0); !empty.ok()) {
      return Status::ResourceExhausted("the " + gpu.mig_profile + " instance " + gpu.uuid + " is held for a slice being made");
    }
    fenced_.erase(gpu.uuid);
    exclusive_.erase(gpu.uuid);
    gpu = std::move(slot);
    (void)scheduler_->SetCordoned(static_cast<sched::NodeId>(node), false);
  }
  for (const GpuState& instance : instances) {
    if (const int node = NodeOf(instance.uuid); node >= 0) {
      if (same(gpus_[static_cast<size_t>(node)], instance)) continue;  // stays where it is
      return Status::InvalidArgument("instance " + instance.uuid + " is listed twice");
    }
    const auto free = std::find_if(gpus_.begin(), gpus_.end(),
                                   [&](const GpuState& g) { return g.parent_uuid == parent && g.uuid.empty(); });
    if (free == gpus_.end()) return Status::Internal("GPU " + parent + " has no free instance slot");
    const auto node = static_cast<sched::NodeId>(free - gpus_.begin());
    if (Status bound = scheduler_->Reshape(node, instance.uuid, static_cast<int64_t>(instance.memory_total)); !bound.ok()) {
      return bound;
    }
    *free = instance;
  }
  ScheduleLocked();  // new instances may hold what waits
  return Status::Ok();
}

Status SliceService::SetMigNote(const std::string& parent, const std::string& note) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int node = NodeOf(parent);
  if (node < 0) return Status::NotFound("no GPU " + parent);
  gpus_[static_cast<size_t>(node)].mig_note = note;
  return Status::Ok();
}

void SliceService::SetMaxSlicesPerGpu(int most) {
  std::lock_guard<std::mutex> lock(mutex_);
  max_slices_per_gpu_ = most;
  for (size_t node = 0; node < gpus_.size(); ++node) (void)scheduler_->Touch(static_cast<sched::NodeId>(node));
}

}  // namespace fgpu::agent
