#include "agent/store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fgpu::agent {
namespace {

// 1: slices, usage_records, exclusive_gpus. 2: job, user_name and account on slices and usage
// records (batch-system jobs, docs/slurm.md); a version-1 database is migrated at open.
// 3: slice_members, the processes that joined each slice (a new table: nothing to migrate).
// 4: counters, the highest slice number ever handed out (slice ids are never reused); an older
// database's counter starts at the highest id any of its tables names.
// 5: idempotency_key, kube_namespace, pod, claim and pod_uid on slices (the Kubernetes plugin); an older
// database gets the columns, empty, at open.
// 6: isolation on slices (docs/mig.md "Isolation classes"); an older database's slices are
// trusted ('' reads as trusted).
constexpr int kSchemaVersion = 6;

constexpr const char* kLastSliceNumber = "last_slice_number";

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS slices (
  id TEXT PRIMARY KEY,
  gpu_uuid TEXT NOT NULL,
  memory_bytes INTEGER NOT NULL,
  compute_share INTEGER NOT NULL,
  compute_mode INTEGER NOT NULL,
  tier INTEGER NOT NULL,
  tenant TEXT NOT NULL,
  owner_uid INTEGER NOT NULL,
  owner_pid INTEGER NOT NULL,
  owner_start_time INTEGER NOT NULL,
  release_on_exit INTEGER NOT NULL,
  dir TEXT NOT NULL,
  created_unix_ms INTEGER NOT NULL,
  accounted_until_ms INTEGER NOT NULL,
  accounted_busy_ns INTEGER NOT NULL,
  job TEXT NOT NULL DEFAULT '',
  user_name TEXT NOT NULL DEFAULT '',
  account TEXT NOT NULL DEFAULT '',
  idempotency_key TEXT NOT NULL DEFAULT '',
  kube_namespace TEXT NOT NULL DEFAULT '',
  pod TEXT NOT NULL DEFAULT '',
  claim TEXT NOT NULL DEFAULT '',
  pod_uid TEXT NOT NULL DEFAULT '',
  isolation TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS usage_records (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  slice_id TEXT NOT NULL,
  tenant TEXT NOT NULL,
  gpu_uuid TEXT NOT NULL,
  start_unix_ms INTEGER NOT NULL,
  end_unix_ms INTEGER NOT NULL,
  reserved_gpu_seconds REAL NOT NULL,
  memory_gib_hours REAL NOT NULL,
  busy_gpu_seconds REAL NOT NULL,
  job TEXT NOT NULL DEFAULT '',
  user_name TEXT NOT NULL DEFAULT '',
  account TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS usage_by_end ON usage_records (end_unix_ms);
CREATE TABLE IF NOT EXISTS slice_members (
  slice_id TEXT NOT NULL,
  pid INTEGER NOT NULL,
  start_time INTEGER NOT NULL,
  PRIMARY KEY (slice_id, pid, start_time)
);
CREATE TABLE IF NOT EXISTS exclusive_gpus (gpu_uuid TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
)sql";

// The highest slice number any table names: where the counter of a database made before it
// starts (ids of the form SliceIdOf, "s<N>").
constexpr const char* kHighestRecordedSliceNumber =
    "SELECT COALESCE(MAX(n), 0) FROM ("
    " SELECT CAST(SUBSTR(id, 2) AS INTEGER) AS n FROM slices WHERE id GLOB 's[0-9]*'"
    " UNION ALL SELECT CAST(SUBSTR(slice_id, 2) AS INTEGER) FROM usage_records WHERE slice_id GLOB 's[0-9]*'"
    " UNION ALL SELECT CAST(SUBSTR(slice_id, 2) AS INTEGER) FROM slice_members WHERE slice_id GLOB 's[0-9]*')";

// Version 1 → 2, in one transaction: every existing slice and record keeps its rows, with no job.
constexpr const char* kMigrateFrom1 = R"sql(
BEGIN IMMEDIATE;
ALTER TABLE slices ADD COLUMN job TEXT NOT NULL DEFAULT '';
ALTER TABLE slices ADD COLUMN user_name TEXT NOT NULL DEFAULT '';
ALTER TABLE slices ADD COLUMN account TEXT NOT NULL DEFAULT '';
ALTER TABLE usage_records ADD COLUMN job TEXT NOT NULL DEFAULT '';
ALTER TABLE usage_records ADD COLUMN user_name TEXT NOT NULL DEFAULT '';
ALTER TABLE usage_records ADD COLUMN account TEXT NOT NULL DEFAULT '';
PRAGMA user_version=2;
COMMIT;
)sql";

// Version 2..5 → 6: the slice columns a database may lack, each added empty (every slice keeps
// its row, with no key, no Kubernetes labels, trusted). Added only where missing, so a database
// that has some already (an interrupted copy, a test's) migrates too.
constexpr const char* kColumnsOf6[] = {"idempotency_key", "kube_namespace", "pod", "claim", "pod_uid", "isolation"};

// A prepared statement, finalized on scope exit.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) { sqlite3_prepare_v2(db, sql, -1, &statement_, nullptr); }
  ~Statement() { sqlite3_finalize(statement_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  sqlite3_stmt* get() const { return statement_; }
  bool ok() const { return statement_ != nullptr; }

 private:
  sqlite3_stmt* statement_ = nullptr;
};

std::string Text(sqlite3_stmt* statement, int column) {
  const unsigned char* text = sqlite3_column_text(statement, column);
  return text == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(text));
}

void BindText(sqlite3_stmt* statement, int index, const std::string& text) {
  sqlite3_bind_text(statement, index, text.c_str(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
}

// job, user_name, account at `first`, `first` + 1, `first` + 2.
void BindLabels(sqlite3_stmt* statement, int first, const JobLabels& labels) {
  BindText(statement, first, labels.job);
  BindText(statement, first + 1, labels.user);
  BindText(statement, first + 2, labels.account);
}

// The column a usage total groups by.
Result<std::string> GroupColumn(const std::string& by) {
  if (by == "tenant") return std::string("tenant");
  if (by == "slice") return std::string("slice_id");
  if (by == "account") return std::string("account");
  if (by == "user") return std::string("user_name");
  if (by == "job") return std::string("job");
  return Status::InvalidArgument("group by tenant, slice, account, user or job, not '" + by + "'");
}

}  // namespace

Result<std::unique_ptr<Store>> Store::Open(const std::string& path, uint64_t reserve_bytes) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    const std::string reason = db != nullptr ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Status::Unavailable("cannot open the state database " + path + ": " + reason);
  }
  std::unique_ptr<Store> store(new Store(db, path + ".reserve", reserve_bytes));
  sqlite3_busy_timeout(db, 5000);
  for (const char* pragma : {"PRAGMA journal_mode=WAL;", "PRAGMA synchronous=FULL;", "PRAGMA foreign_keys=ON;"}) {
    if (Status status = store->Exec(pragma); !status.ok()) return status;
  }
  Statement version(db, "PRAGMA user_version;");
  int found = 0;
  if (version.ok() && sqlite3_step(version.get()) == SQLITE_ROW) found = sqlite3_column_int(version.get(), 0);
  if (found > kSchemaVersion) {
    return Status::VersionMismatch(path + " was written by a newer fgpu (schema " + std::to_string(found) + ", this is " +
                                   std::to_string(kSchemaVersion) + ")");
  }
  if (found == 1) {
    if (Status status = store->Exec(kMigrateFrom1); !status.ok()) {
      (void)store->Exec("ROLLBACK;");
      return Status::Internal("cannot migrate " + path + " to schema 2: " + status.message());
    }
    found = 2;
  }
  if (found >= 2 && found < 6) {
    std::string migrate = "BEGIN IMMEDIATE;";
    for (const char* column : kColumnsOf6) {
      Statement has(db, "SELECT 1 FROM pragma_table_info('slices') WHERE name = ?;");
      if (!has.ok()) return Status::Internal(std::string("state database: ") + sqlite3_errmsg(db));
      BindText(has.get(), 1, column);
      if (sqlite3_step(has.get()) != SQLITE_ROW) {
        migrate += std::string("ALTER TABLE slices ADD COLUMN ") + column + " TEXT NOT NULL DEFAULT '';";
      }
    }
    migrate += "PRAGMA user_version=6; COMMIT;";
    if (Status status = store->Exec(migrate); !status.ok()) {
      (void)store->Exec("ROLLBACK;");
      return Status::Internal("cannot migrate " + path + " to schema 6: " + status.message());
    }
  }
  if (Status status = store->Exec(kSchema); !status.ok()) return status;
  if (Status status = store->SeedSliceCounter(); !status.ok()) return status;
  if (Status status = store->Exec("PRAGMA user_version=" + std::to_string(kSchemaVersion) + ";"); !status.ok()) {
    return status;
  }
  // Whatever the umask was when they were made: every tenant's usage is in them.
  for (const char* suffix : {"", "-wal", "-shm"}) chmod((path + suffix).c_str(), 0600);
  store->RestoreReserve();
  return store;
}

Status Store::SeedSliceCounter() {
  Status seeded = InTransaction([&] {
    Statement exists(db_, "SELECT 1 FROM counters WHERE name = ?;");
    if (!exists.ok()) return false;
    BindText(exists.get(), 1, kLastSliceNumber);
    if (sqlite3_step(exists.get()) == SQLITE_ROW) return true;  // the scan below runs once per database
    const std::string sql = "INSERT INTO counters (name, value) SELECT ?, (" + std::string(kHighestRecordedSliceNumber) + ");";
    Statement seed(db_, sql.c_str());
    if (!seed.ok()) return false;
    BindText(seed.get(), 1, kLastSliceNumber);
    return sqlite3_step(seed.get()) == SQLITE_DONE;
  });
  if (!seeded.ok()) return Status::Internal("cannot start the slice counter: " + seeded.message());
  return Status::Ok();
}

Result<uint64_t> Store::LastSliceNumber() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Statement select(db_, "SELECT value FROM counters WHERE name = ?;");
  if (!select.ok()) return Status::Internal(std::string("state database: ") + sqlite3_errmsg(db_));
  BindText(select.get(), 1, kLastSliceNumber);
  if (sqlite3_step(select.get()) != SQLITE_ROW) return uint64_t{0};
  return static_cast<uint64_t>(sqlite3_column_int64(select.get(), 0));
}

Status Store::InTransaction(const std::function<bool()>& steps) {
  if (Status begun = Exec("BEGIN IMMEDIATE;"); !begun.ok()) return begun;
  if (!steps()) {
    const int code = sqlite3_errcode(db_);
    const std::string reason = sqlite3_errmsg(db_);
    (void)Exec("ROLLBACK;");
    // Keep the failing write's code for Write (ROLLBACK succeeded and would reset it).
    return code == SQLITE_FULL ? Status::ResourceExhausted("state database: " + reason)
                               : Status::Internal("state database: " + reason);
  }
  Status committed = Exec("COMMIT;");
  if (!committed.ok()) {
    const int code = sqlite3_errcode(db_);
    (void)Exec("ROLLBACK;");  // may fail when SQLite already rolled back: harmless
    if (code == SQLITE_FULL) return Status::ResourceExhausted(committed.message());
  }
  return committed;
}

bool Store::RestoreReserve() {
  std::lock_guard<std::mutex> lock(mutex_);
  return RestoreReserveLocked();
}

bool Store::RestoreReserveLocked() {
  if (reserve_bytes_ == 0) return false;
  struct stat info {};
  if (stat(reserve_path_.c_str(), &info) == 0 && static_cast<uint64_t>(info.st_size) >= reserve_bytes_) return true;
  const int fd = open(reserve_path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return false;
  // posix_fallocate allocates blocks (a sparse ftruncate would reserve nothing).
  const bool placed = posix_fallocate(fd, 0, static_cast<off_t>(reserve_bytes_)) == 0;
  close(fd);
  if (!placed) unlink(reserve_path_.c_str());
  return placed;
}

uint64_t Store::disk_full_events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return disk_full_events_;
}

Status Store::Write(const std::function<Status()>& write) {
  Status status = write();
  const bool full = status.code() == StatusCode::kResourceExhausted || sqlite3_errcode(db_) == SQLITE_FULL;
  if (status.ok() || !full) return status;
  ++disk_full_events_;
  if (unlink(reserve_path_.c_str()) == 0) status = write();  // else: nothing left to give
  if (status.code() == StatusCode::kResourceExhausted) {
    return Status::Unavailable("the state database's disk is full: " + status.message());
  }
  return status;
}

Store::~Store() { sqlite3_close(db_); }

Status Store::Exec(const std::string& sql) const {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) == SQLITE_OK) return Status::Ok();
  const std::string message = error != nullptr ? error : "unknown error";
  sqlite3_free(error);
  return Status::Internal("state database: " + message);
}

Status Store::PutSlice(const SliceRecord& slice) {
  std::lock_guard<std::mutex> lock(mutex_);
  return Write([&] { return InTransaction([&] { return InsertSlice(slice) && CountSliceNumber(slice.id); }); });
}

// In PutSlice's transaction: the counter never falls below an id that a committed slice holds,
// whatever happens to the agent after the commit.
bool Store::CountSliceNumber(const std::string& id) {
  const std::optional<uint64_t> number = SliceNumberOf(id);
  if (!number) return true;
  Statement count(db_,
                  "INSERT INTO counters (name, value) VALUES (?, ?) "
                  "ON CONFLICT (name) DO UPDATE SET value = MAX(value, excluded.value);");
  if (!count.ok()) return false;
  BindText(count.get(), 1, kLastSliceNumber);
  sqlite3_bind_int64(count.get(), 2, static_cast<sqlite3_int64>(*number));
  return sqlite3_step(count.get()) == SQLITE_DONE;
}

bool Store::InsertSlice(const SliceRecord& slice) {
  Statement insert(db_,
                   "INSERT OR REPLACE INTO slices (id, gpu_uuid, memory_bytes, compute_share, compute_mode, tier, tenant, "
                   "owner_uid, owner_pid, owner_start_time, release_on_exit, dir, created_unix_ms, accounted_until_ms, "
                   "accounted_busy_ns, job, user_name, account, idempotency_key, kube_namespace, pod, claim, pod_uid, isolation) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);");
  if (!insert.ok()) return false;
  sqlite3_stmt* s = insert.get();
  BindText(s, 1, slice.id);
  BindText(s, 2, slice.gpu_uuid);
  sqlite3_bind_int64(s, 3, static_cast<sqlite3_int64>(slice.memory_bytes));
  sqlite3_bind_int64(s, 4, slice.compute_share);
  sqlite3_bind_int64(s, 5, static_cast<int>(slice.compute_mode));
  sqlite3_bind_int64(s, 6, static_cast<int>(slice.tier));
  BindText(s, 7, slice.tenant);
  sqlite3_bind_int64(s, 8, slice.owner_uid);
  sqlite3_bind_int64(s, 9, slice.owner_pid);
  sqlite3_bind_int64(s, 10, static_cast<sqlite3_int64>(slice.owner_start_time));
  sqlite3_bind_int64(s, 11, slice.release_on_exit ? 1 : 0);
  BindText(s, 12, slice.dir);
  sqlite3_bind_int64(s, 13, slice.created_unix_ms);
  sqlite3_bind_int64(s, 14, slice.accounted_until_ms);
  sqlite3_bind_int64(s, 15, static_cast<sqlite3_int64>(slice.accounted_busy_ns));
  BindLabels(s, 16, slice.labels);
  BindText(s, 19, slice.idempotency_key);
  BindText(s, 20, slice.kube.kube_namespace);
  BindText(s, 21, slice.kube.pod);
  BindText(s, 22, slice.kube.claim);
  BindText(s, 23, slice.kube.pod_uid);
  BindText(s, 24, std::string(ToString(slice.isolation)));
  return sqlite3_step(s) == SQLITE_DONE;
}

Status Store::AddMember(const std::string& slice_id, int64_t pid, uint64_t start_time) {
  std::lock_guard<std::mutex> lock(mutex_);
  return Write([&] {
    Statement insert(db_, "INSERT OR IGNORE INTO slice_members (slice_id, pid, start_time) VALUES (?, ?, ?);");
    if (!insert.ok()) return Status::Internal(std::string("state database: ") + sqlite3_errmsg(db_));
    BindText(insert.get(), 1, slice_id);
    sqlite3_bind_int64(insert.get(), 2, pid);
    sqlite3_bind_int64(insert.get(), 3, static_cast<sqlite3_int64>(start_time));
    if (sqlite3_step(insert.get()) != SQLITE_DONE) {
      return Status::Internal(std::string("state database: ") + sqlite3_errmsg(db_));
    }
    return Status::Ok();
  });
}

Result<std::vector<std::tuple<std::string, int64_t, uint64_t>>> Store::Members() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Statement select(db_, "SELECT slice_id, pid, start_time FROM slice_members ORDER BY slice_id, pid;");
  if (!select.ok()) return Status::Internal(std::string("state database: ") + sqlite3_errmsg(db_));
  std::vector<std::tuple<std::string, int64_t, uint64_t>> members;
  while (sqlite3_step(select.get()) == SQLITE_ROW) {
    members.emplace_back(Text(select.get(), 0), sqlite3_column_int64(select.get(), 1),
                         static_cast<uint64_t>(sqlite3_column_int64(select.get(), 2)));
  }
  return members;
}

Status Store::DeleteSlice(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  return Write([&] {
  Statement members(db_, "DELETE FROM slice_members WHERE slice_id = ?;");
  if (!members.ok()) return Status::Internal(std::string("state database: ") + sqlite3_errmsg(db_));
  BindText(members.get(), 1, id);
  if (sqlite3_step(members.get()) != SQLITE_DONE) {
    return Status::Internal(std::string("state database: ") + sqlite3_errmsg(db_));
  }
  Statement remove(db_, "DELETE FROM slices WHERE id = ?;");
  if (!remove.ok()) return Status::Internal(std::string("state database: ") + sqlite3_errmsg(db_));
  BindText(remove.get(), 1, id);
  if (sqlite3_step(remove.get()) != SQLITE_DONE) {
    return Status::Internal(std::string("state database: ") + sqlite3_errmsg(db_));
  }
  if (sqlite3_changes(db_) == 0) return Status::NotFound("no slice " + id);
  return Status::Ok();
  });
}

Result<std::vector<SliceRecord>> Store::Slices() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Statement select(db_,
                   "SELECT id, gpu_uuid, memory_bytes, compute_share, compute_mode, tier, tenant, owner_uid, owner_pid, "
                   "owner_start_time, release_on_exit, dir, created_unix_ms, accounted_until_ms, accounted_busy_ns, job, "
                   "user_name, account, idempotency_key, kube_namespace, pod, claim, pod_uid, isolation FROM slices "
                   "ORDER BY created_unix_ms, id;");
  if (!select.ok()) return Status::Internal(std::string("state database: ") + sqlite3_errmsg(db_));
  std::vector<SliceRecord> slices;
  int rc = SQLITE_ROW;
  while ((rc = sqlite3_step(select.get())) == SQLITE_ROW) {
    sqlite3_stmt* s = select.get();
    SliceRecord slice;
    slice.id = Text(s, 0);
    slice.gpu_uuid = Text(s, 1);
    slice.memory_bytes = static_cast<uint64_t>(sqlite3_column_int64(s, 2));
    slice.compute_share = static_cast<uint32_t>(sqlite3_column_int64(s, 3));
    slice.compute_mode = static_cast<slice::ComputeMode>(sqlite3_column_int(s, 4));
    slice.tier = static_cast<slice::Tier>(sqlite3_column_int(s, 5));
    slice.tenant = Text(s, 6);
    slice.owner_uid = sqlite3_column_int64(s, 7);
    slice.owner_pid = sqlite3_column_int64(s, 8);
    slice.owner_start_time = static_cast<uint64_t>(sqlite3_column_int64(s, 9));
    slice.release_on_exit = sqlite3_column_int(s, 10) != 0;
    slice.dir = Text(s, 11);
    slice.created_unix_ms = sqlite3_column_int64(s, 12);
    slice.accounted_until_ms = sqlite3_column_int64(s, 13);
    slice.accounted_busy_ns = static_cast<uint64_t>(sqlite3_column_int64(s, 14));
    slice.labels = {Text(s, 15), Text(s, 16), Text(s, 17)};
    slice.idempotency_key = Text(s, 18);
    slice.kube = {Text(s, 19), Text(s, 20), Text(s, 21), Text(s, 22)};
    slice.isolation = ParseIsolation(Text(s, 23)).value_or(Isolation::kTrusted);
    slices.push_back(std::move(slice));
  }
  if (rc != SQLITE_DONE) return Status::Corrupt(std::string("state database: ") + sqlite3_errmsg(db_));
  return slices;
}

Status Store::SetExclusive(const std::string& gpu_uuid, bool exclusive) {
  std::lock_guard<std::mutex> lock(mutex_);
  return Write([&] {
  Statement change(db_, exclusive ? "INSERT OR IGNORE INTO exclusive_gpus (gpu_uuid) VALUES (?);"
                                  : "DELETE FROM exclusive_gpus WHERE gpu_uuid = ?;");
  if (!change.ok()) return Status::Internal(std::string("state database: ") + sqlite3_errmsg(db_));
  BindText(change.get(), 1, gpu_uuid);
  if (sqlite3_step(change.get()) != SQLITE_DONE) return Status::Internal(std::string("state database: ") + sqlite3_errmsg(db_));
  return Status::Ok();
  });
}

Result<std::vector<std::string>> Store::ExclusiveGpus() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Statement select(db_, "SELECT gpu_uuid FROM exclusive_gpus ORDER BY gpu_uuid;");
  if (!select.ok()) return Status::Internal(std::string("state database: ") + sqlite3_errmsg(db_));
  std::vector<std::string> uuids;
  while (sqlite3_step(select.get()) == SQLITE_ROW) uuids.push_back(Text(select.get(), 0));
  return uuids;
}

Status Store::CloseUsage(const UsageRecord& record, int64_t accounted_until_ms, uint64_t accounted_busy_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  return Write([&] {
    return InTransaction([&] {
      Statement insert(db_,
                       "INSERT INTO usage_records (slice_id, tenant, gpu_uuid, start_unix_ms, end_unix_ms, "
                       "reserved_gpu_seconds, memory_gib_hours, busy_gpu_seconds, job, user_name, account) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);");
      Statement update(db_, "UPDATE slices SET accounted_until_ms = ?, accounted_busy_ns = ? WHERE id = ?;");
      if (!insert.ok() || !update.ok()) return false;
      sqlite3_stmt* s = insert.get();
      BindText(s, 1, record.slice_id);
      BindText(s, 2, record.tenant);
      BindText(s, 3, record.gpu_uuid);
      sqlite3_bind_int64(s, 4, record.start_unix_ms);
      sqlite3_bind_int64(s, 5, record.end_unix_ms);
      sqlite3_bind_double(s, 6, record.reserved_gpu_seconds);
      sqlite3_bind_double(s, 7, record.memory_gib_hours);
      sqlite3_bind_double(s, 8, record.busy_gpu_seconds);
      BindLabels(s, 9, record.labels);
      sqlite3_bind_int64(update.get(), 1, accounted_until_ms);
      sqlite3_bind_int64(update.get(), 2, static_cast<sqlite3_int64>(accounted_busy_ns));
      BindText(update.get(), 3, record.slice_id);
      return sqlite3_step(insert.get()) == SQLITE_DONE && sqlite3_step(update.get()) == SQLITE_DONE;
    });
  });
}

Result<int64_t> Store::DeleteUsageBefore(int64_t cutoff_unix_ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t deleted = 0;
  const Status status = Write([&] {
    Statement remove(db_, "DELETE FROM usage_records WHERE end_unix_ms < ?;");
    if (!remove.ok()) return Status::Internal(std::string("state database: ") + sqlite3_errmsg(db_));
    sqlite3_bind_int64(remove.get(), 1, cutoff_unix_ms);
    if (sqlite3_step(remove.get()) != SQLITE_DONE) {
      return Status::Internal(std::string("state database: ") + sqlite3_errmsg(db_));
    }
    deleted = sqlite3_changes(db_);
    return Status::Ok();
  });
  if (!status.ok()) return status;
  return deleted;
}

Result<std::vector<UsageTotal>> Store::Totals(int64_t since_unix_ms, int64_t until_unix_ms, const std::string& by) const {
  Result<std::string> column = GroupColumn(by);
  if (!column.ok()) return column.status();
  const std::string& key = *column;
  // Each record counts for the part of it inside the window.
  const std::string overlap =
      "(MIN(end_unix_ms, ?2) - MAX(start_unix_ms, ?1)) * 1.0 / MAX(end_unix_ms - start_unix_ms, 1)";
  const std::string sql = "SELECT " + key + ", SUM(reserved_gpu_seconds * " + overlap + "), SUM(memory_gib_hours * " +
                          overlap + "), SUM(busy_gpu_seconds * " + overlap +
                          "), COUNT(*) FROM usage_records WHERE end_unix_ms > ?1 AND start_unix_ms < ?2 GROUP BY " +
                          key + " ORDER BY " + key + ";";
  std::lock_guard<std::mutex> lock(mutex_);
  Statement select(db_, sql.c_str());
  if (!select.ok()) return Status::Internal(std::string("state database: ") + sqlite3_errmsg(db_));
  sqlite3_bind_int64(select.get(), 1, since_unix_ms);
  sqlite3_bind_int64(select.get(), 2, until_unix_ms);
  std::vector<UsageTotal> totals;
  while (sqlite3_step(select.get()) == SQLITE_ROW) {
    totals.push_back({Text(select.get(), 0), sqlite3_column_double(select.get(), 1),
                      sqlite3_column_double(select.get(), 2), sqlite3_column_double(select.get(), 3),
                      sqlite3_column_int64(select.get(), 4)});
  }
  return totals;
}

}  // namespace fgpu::agent
