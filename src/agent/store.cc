#include "agent/store.h"

#include <sqlite3.h>

namespace fgpu::agent {
namespace {

constexpr int kSchemaVersion = 1;

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
  created_unix_ms INTEGER NOT NULL
);
)sql";

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

}  // namespace

Result<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    const std::string reason = db != nullptr ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Status::Unavailable("cannot open the state database " + path + ": " + reason);
  }
  std::unique_ptr<Store> store(new Store(db));
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
  if (Status status = store->Exec(kSchema); !status.ok()) return status;
  if (Status status = store->Exec("PRAGMA user_version=" + std::to_string(kSchemaVersion) + ";"); !status.ok()) {
    return status;
  }
  return store;
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
  Statement insert(db_,
                   "INSERT OR REPLACE INTO slices (id, gpu_uuid, memory_bytes, compute_share, compute_mode, tier, tenant, "
                   "owner_uid, owner_pid, owner_start_time, release_on_exit, dir, created_unix_ms) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?);");
  if (!insert.ok()) return Status::Internal(std::string("state database: ") + sqlite3_errmsg(db_));
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
  if (sqlite3_step(s) != SQLITE_DONE) return Status::Internal(std::string("state database: ") + sqlite3_errmsg(db_));
  return Status::Ok();
}

Status Store::DeleteSlice(const std::string& id) {
  std::lock_guard<std::mutex> lock(mutex_);
  Statement remove(db_, "DELETE FROM slices WHERE id = ?;");
  if (!remove.ok()) return Status::Internal(std::string("state database: ") + sqlite3_errmsg(db_));
  BindText(remove.get(), 1, id);
  if (sqlite3_step(remove.get()) != SQLITE_DONE) {
    return Status::Internal(std::string("state database: ") + sqlite3_errmsg(db_));
  }
  if (sqlite3_changes(db_) == 0) return Status::NotFound("no slice " + id);
  return Status::Ok();
}

Result<std::vector<SliceRecord>> Store::Slices() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Statement select(db_,
                   "SELECT id, gpu_uuid, memory_bytes, compute_share, compute_mode, tier, tenant, owner_uid, owner_pid, "
                   "owner_start_time, release_on_exit, dir, created_unix_ms FROM slices ORDER BY created_unix_ms, id;");
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
    slices.push_back(std::move(slice));
  }
  if (rc != SQLITE_DONE) return Status::Corrupt(std::string("state database: ") + sqlite3_errmsg(db_));
  return slices;
}

}  // namespace fgpu::agent
