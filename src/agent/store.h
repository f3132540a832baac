// Store: the agent's state in SQLite (embedded, one file in --state), so a restart — also after
// kill -9 — resumes with every slice and usage record (docs/agent.md "State").
//
// Contract
// - Every mutation is one transaction, committed (synchronous=FULL, WAL) before it returns:
//   what a caller was told happened survives a crash.
// - Thread-safe (one connection behind a mutex; the agent's writes are few and small).
// - Open creates the schema if missing, migrates an older one (1 → 2 adds the job labels; < 4
//   starts the slice counter above every id recorded) in one transaction each, and refuses a
//   database with a newer schema version. The database and its
//   journals are made 0600: they hold every tenant's usage.
// - A full disk: Open keeps `reserve_bytes` allocated in `<path>.reserve`. A write that fails
//   because the disk is full frees the reserve and is tried once more, so the agent can still
//   release slices and bill them; the reserve is taken again (RestoreReserve) once there is room.
//   disk_full_events() counts the writes that found the disk full.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "agent/slice_record.h"
#include "core/status.h"

struct sqlite3;

namespace fgpu::agent {

class Store {
 public:
  static constexpr uint64_t kDefaultReserveBytes = uint64_t{4} << 20;
  static Result<std::unique_ptr<Store>> Open(const std::string& path, uint64_t reserve_bytes = kDefaultReserveBytes);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Inserts or replaces the slice with this id. In the same transaction the slice counter is
  // raised to its number (SliceNumberOf), so an id once stored is never handed out again.
  Status PutSlice(const SliceRecord& slice);
  // The highest slice number ever stored (0: none): new ids start above it. A database made
  // before the counter existed starts it at the highest id its slices, usage records or members
  // name, so its old records stay apart from new slices.
  Result<uint64_t> LastSliceNumber() const;
  // NotFound when there is none. Its members go with it.
  Status DeleteSlice(const std::string& id);
  // A process that joined a slice (membership.h), kept across restarts.
  Status AddMember(const std::string& slice_id, int64_t pid, uint64_t start_time);
  Result<std::vector<std::tuple<std::string, int64_t, uint64_t>>> Members() const;
  Result<std::vector<SliceRecord>> Slices() const;
  // GPUs switched to exclusive mode (no new shared placements), by UUID.
  Status SetExclusive(const std::string& gpu_uuid, bool exclusive);
  Result<std::vector<std::string>> ExclusiveGpus() const;

  // Appends `record` and moves the slice's accounted_* fields to its end, in one transaction:
  // an interval is recorded exactly once even if the agent dies at any instruction.
  Status CloseUsage(const UsageRecord& record, int64_t accounted_until_ms, uint64_t accounted_busy_ns);
  // Totals of the records overlapping [since, until), each prorated to its overlap, grouped by
  // "tenant", "slice", "account", "user" or "job" (InvalidArgument otherwise). Records without
  // the label group under "".
  Result<std::vector<UsageTotal>> Totals(int64_t since_unix_ms, int64_t until_unix_ms, const std::string& by) const;
  // Deletes the usage records that ended before `cutoff_unix_ms` (retention); returns how many.
  Result<int64_t> DeleteUsageBefore(int64_t cutoff_unix_ms);

  // Takes the reserve again if it was spent and the disk has room; true when it is in place.
  bool RestoreReserve();
  uint64_t disk_full_events() const;

 private:
  Store(sqlite3* db, std::string reserve_path, uint64_t reserve_bytes)
      : db_(db), reserve_path_(std::move(reserve_path)), reserve_bytes_(reserve_bytes) {}
  Status Exec(const std::string& sql) const;
  // BEGIN IMMEDIATE, `steps` (false: failed, rolled back), COMMIT; a full disk is
  // ResourceExhausted (for Write). Under mutex_ (or at Open).
  Status InTransaction(const std::function<bool()>& steps);
  Status SeedSliceCounter();
  bool InsertSlice(const SliceRecord& slice);
  bool CountSliceNumber(const std::string& id);
  // Runs `write` (one transaction); if it failed on a full disk, frees the reserve and runs it
  // once more. Under mutex_.
  Status Write(const std::function<Status()>& write);
  bool RestoreReserveLocked();

  sqlite3* db_;
  std::string reserve_path_;
  uint64_t reserve_bytes_ = 0;
  uint64_t disk_full_events_ = 0;
  mutable std::mutex mutex_;
};

}  // namespace fgpu::agent
