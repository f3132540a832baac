// The state database: what is written survives reopening; a newer schema is refused.
#include "agent/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace fgpu::agent {
namespace {

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/fgpu-store-test-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path() const { return dir_ + "/state.db"; }
  std::string dir_;
};

SliceRecord Sample(const std::string& id) {
  SliceRecord slice;
  slice.id = id;
  slice.gpu_uuid = "GPU-1";
  slice.memory_bytes = uint64_t{10} << 30;
  slice.compute_share = 30;
  slice.compute_mode = slice::ComputeMode::kCap;
  slice.tier = slice::Tier::kLatency;
  slice.tenant = "team-a";
  slice.owner_uid = 1000;
  slice.owner_pid = 42;
  slice.dir = "/run/fgpu/slices/" + id;
  slice.created_unix_ms = 1700000000000;
  return slice;
}

TEST_F(StoreTest, SlicesSurviveReopening) {
  {
    Result<std::unique_ptr<Store>> store = Store::Open(Path());
    ASSERT_TRUE(store.ok()) << store.status().message();
    ASSERT_TRUE((*store)->PutSlice(Sample("s1")).ok());
    ASSERT_TRUE((*store)->PutSlice(Sample("s2")).ok());
    SliceRecord changed = Sample("s1");
    changed.compute_share = 50;
    ASSERT_TRUE((*store)->PutSlice(changed).ok());
    ASSERT_TRUE((*store)->DeleteSlice("s2").ok());
    EXPECT_EQ((*store)->DeleteSlice("s2").code(), StatusCode::kNotFound);
  }
  Result<std::unique_ptr<Store>> reopened = Store::Open(Path());
  ASSERT_TRUE(reopened.ok());
  Result<std::vector<SliceRecord>> slices = (*reopened)->Slices();
  ASSERT_TRUE(slices.ok());
  ASSERT_EQ(slices->size(), 1u);
  SliceRecord expected = Sample("s1");
  expected.compute_share = 50;
  EXPECT_EQ((*slices)[0], expected);
}

TEST_F(StoreTest, UsageRecordsAreTotalledAndProratedToTheWindow) {
  Result<std::unique_ptr<Store>> store = Store::Open(Path());
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->PutSlice(Sample("s1")).ok());
  SliceRecord other = Sample("s2");
  other.tenant = "team-b";
  ASSERT_TRUE((*store)->PutSlice(other).ok());
  // s1: two hours at 30 % of a GPU and 10 GiB; s2: one hour.
  ASSERT_TRUE((*store)->CloseUsage({"s1", "team-a", "GPU-1", 0, 3'600'000, 1080, 10, 100, {}}, 3'600'000, 7).ok());
  ASSERT_TRUE((*store)->CloseUsage({"s1", "team-a", "GPU-1", 3'600'000, 7'200'000, 1080, 10, 50, {}}, 7'200'000, 9).ok());
  ASSERT_TRUE((*store)->CloseUsage({"s2", "team-b", "GPU-1", 0, 3'600'000, 3600, 1, 0, {}}, 3'600'000, 0).ok());
  Result<std::vector<UsageTotal>> all = (*store)->Totals(0, 10'000'000, "tenant");
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].key, "team-a");
  EXPECT_DOUBLE_EQ((*all)[0].reserved_gpu_seconds, 2160);
  EXPECT_DOUBLE_EQ((*all)[0].memory_gib_hours, 20);
  EXPECT_DOUBLE_EQ((*all)[0].busy_gpu_seconds, 150);
  EXPECT_EQ((*all)[0].records, 2);
  // The last half hour of the first record and the first half of the second.
  Result<std::vector<UsageTotal>> window = (*store)->Totals(1'800'000, 5'400'000, "slice");
  ASSERT_TRUE(window.ok());
  EXPECT_EQ((*window)[0].key, "s1");
  EXPECT_DOUBLE_EQ((*window)[0].reserved_gpu_seconds, 1080);
  EXPECT_DOUBLE_EQ((*window)[0].busy_gpu_seconds, 75);
  EXPECT_EQ((*store)->Totals(0, 1, "colour").status().code(), StatusCode::kInvalidArgument);
  // The slice's accounting position moved with the record, in the same transaction.
  Result<std::vector<SliceRecord>> slices = (*store)->Slices();
  EXPECT_EQ((*slices)[0].accounted_until_ms, 7'200'000);
  EXPECT_EQ((*slices)[0].accounted_busy_ns, 9u);
}

TEST_F(StoreTest, JobLabelsAreKeptAndUsageGroupsByThem) {
  Result<std::unique_ptr<Store>> store = Store::Open(Path());
  ASSERT_TRUE(store.ok());
  SliceRecord job = Sample("s1");
  job.labels = {"1234.0", "alice", "physics"};
  ASSERT_TRUE((*store)->PutSlice(job).ok());
  ASSERT_TRUE((*store)->PutSlice(Sample("s2")).ok());
  ASSERT_TRUE((*store)->CloseUsage({"s1", "team-a", "GPU-1", 0, 1000, 1, 1, 1, job.labels}, 1000, 0).ok());
  ASSERT_TRUE((*store)->CloseUsage({"s1", "team-a", "GPU-1", 1000, 2000, 2, 2, 2, job.labels}, 2000, 0).ok());
  ASSERT_TRUE((*store)->CloseUsage({"s2", "team-a", "GPU-1", 0, 1000, 4, 4, 4, {}}, 1000, 0).ok());
  Result<std::vector<SliceRecord>> slices = (*store)->Slices();
  ASSERT_TRUE(slices.ok());
  EXPECT_EQ((*slices)[0].labels, job.labels);
  EXPECT_EQ((*slices)[1].labels, JobLabels{});
  for (const char* by : {"account", "user", "job"}) {
    Result<std::vector<UsageTotal>> totals = (*store)->Totals(0, 10'000, by);
    ASSERT_TRUE(totals.ok()) << by;
    ASSERT_EQ(totals->size(), 2u) << by;
    EXPECT_EQ((*totals)[0].key, "") << by;  // the slice without a job
    EXPECT_DOUBLE_EQ((*totals)[0].reserved_gpu_seconds, 4) << by;
    EXPECT_DOUBLE_EQ((*totals)[1].reserved_gpu_seconds, 3) << by;
    EXPECT_EQ((*totals)[1].records, 2) << by;
  }
  EXPECT_EQ((*(*store)->Totals(0, 10'000, "account"))[1].key, "physics");
  EXPECT_EQ((*(*store)->Totals(0, 10'000, "user"))[1].key, "alice");
  EXPECT_EQ((*(*store)->Totals(0, 10'000, "job"))[1].key, "1234.0");
}

// A state database written by the first agent (schema 1) is migrated in place: its slices and
// usage records stay, with empty job labels, and new rows carry labels.
TEST_F(StoreTest, ASchemaOneDatabaseIsMigratedWithEverythingKept) {
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(Path().c_str(), &db), SQLITE_OK);
    const char* v1 = R"sql(
      CREATE TABLE slices (id TEXT PRIMARY KEY, gpu_uuid TEXT NOT NULL, memory_bytes INTEGER NOT NULL,
        compute_share INTEGER NOT NULL, compute_mode INTEGER NOT NULL, tier INTEGER NOT NULL, tenant TEXT NOT NULL,
        owner_uid INTEGER NOT NULL, owner_pid INTEGER NOT NULL, owner_start_time INTEGER NOT NULL,
        release_on_exit INTEGER NOT NULL, dir TEXT NOT NULL, created_unix_ms INTEGER NOT NULL,
        accounted_until_ms INTEGER NOT NULL, accounted_busy_ns INTEGER NOT NULL);
      CREATE TABLE usage_records (id INTEGER PRIMARY KEY AUTOINCREMENT, slice_id TEXT NOT NULL, tenant TEXT NOT NULL,
        gpu_uuid TEXT NOT NULL, start_unix_ms INTEGER NOT NULL, end_unix_ms INTEGER NOT NULL,
        reserved_gpu_seconds REAL NOT NULL, memory_gib_hours REAL NOT NULL, busy_gpu_seconds REAL NOT NULL);
      CREATE INDEX usage_by_end ON usage_records (end_unix_ms);
      CREATE TABLE exclusive_gpus (gpu_uuid TEXT PRIMARY KEY);
      INSERT INTO slices VALUES ('s1', 'GPU-1', 1024, 30, 1, 1, 'team-a', 0, 42, 7, 0, '/d/s1', 1000, 2000, 5);
      INSERT INTO usage_records (slice_id, tenant, gpu_uuid, start_unix_ms, end_unix_ms, reserved_gpu_seconds,
        memory_gib_hours, busy_gpu_seconds) VALUES ('s1', 'team-a', 'GPU-1', 1000, 2000, 0.3, 0.1, 0.2);
      INSERT INTO exclusive_gpus VALUES ('GPU-2');
      PRAGMA user_version=1;)sql";
    ASSERT_EQ(sqlite3_exec(db, v1, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  Result<std::unique_ptr<Store>> store = Store::Open(Path());
  ASSERT_TRUE(store.ok()) << store.status().message();
  Result<std::vector<SliceRecord>> slices = (*store)->Slices();
  ASSERT_TRUE(slices.ok());
  ASSERT_EQ(slices->size(), 1u);
  EXPECT_EQ((*slices)[0].tenant, "team-a");
  EXPECT_EQ((*slices)[0].accounted_busy_ns, 5u);
  EXPECT_EQ((*slices)[0].labels, JobLabels{});
  EXPECT_EQ(*(*store)->ExclusiveGpus(), std::vector<std::string>{"GPU-2"});
  Result<std::vector<UsageTotal>> tenants = (*store)->Totals(0, 10'000, "tenant");
  ASSERT_EQ(tenants->size(), 1u);
  EXPECT_DOUBLE_EQ((*tenants)[0].reserved_gpu_seconds, 0.3);
  ASSERT_TRUE((*store)->CloseUsage({"s1", "team-a", "GPU-1", 2000, 3000, 1, 1, 1, {"7.0", "bob", "chem"}}, 3000, 5).ok());
  Result<std::vector<UsageTotal>> accounts = (*store)->Totals(0, 10'000, "account");
  ASSERT_EQ(accounts->size(), 2u);
  EXPECT_EQ((*accounts)[1].key, "chem");
  // Reopening the migrated database is a plain open.
  store->reset();
  EXPECT_TRUE(Store::Open(Path()).ok());
}

// The slice counter: raised by each stored slice in its own transaction, never lowered by a
// delete, a lower id or a reopening.
TEST_F(StoreTest, TheSliceCounterOnlyGrowsAndSurvivesReopening) {
  {
    Result<std::unique_ptr<Store>> store = Store::Open(Path());
    ASSERT_TRUE(store.ok()) << store.status().message();
    EXPECT_EQ(*(*store)->LastSliceNumber(), 0u);
    ASSERT_TRUE((*store)->PutSlice(Sample("s1")).ok());
    ASSERT_TRUE((*store)->PutSlice(Sample("s7")).ok());
    ASSERT_TRUE((*store)->PutSlice(Sample("s3")).ok());
    EXPECT_EQ(*(*store)->LastSliceNumber(), 7u);
    ASSERT_TRUE((*store)->DeleteSlice("s7").ok());
    ASSERT_TRUE((*store)->PutSlice(Sample("custom")).ok());  // not ours: counts nothing
    EXPECT_EQ(*(*store)->LastSliceNumber(), 7u);
  }
  Result<std::unique_ptr<Store>> reopened = Store::Open(Path());
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(*(*reopened)->LastSliceNumber(), 7u) << "a deleted slice's id stays taken";
}

// A database of schema 3 (before the counter) whose slices are all gone but whose usage records
// and members name s1..s12: the counter starts at 12, so new slices never bill under those ids.
TEST_F(StoreTest, AnOlderDatabasesCounterStartsAboveEveryRecordedId) {
  {
    Result<std::unique_ptr<Store>> store = Store::Open(Path());
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->PutSlice(Sample("s2")).ok());
    ASSERT_TRUE((*store)->CloseUsage({"s12", "team-a", "GPU-1", 0, 1000, 1, 1, 1, {}}, 1000, 0).ok());
    ASSERT_TRUE((*store)->CloseUsage({"s9", "team-b", "GPU-1", 0, 1000, 1, 1, 1, {}}, 1000, 0).ok());
    ASSERT_TRUE((*store)->AddMember("s4", 42, 7).ok());
  }
  {
    // As an agent of schema 3 left it: no counter.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(Path().c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "DROP TABLE counters; DELETE FROM slices; PRAGMA user_version=3;", nullptr, nullptr, nullptr),
              SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  Result<std::unique_ptr<Store>> migrated = Store::Open(Path());
  ASSERT_TRUE(migrated.ok()) << migrated.status().message();
  EXPECT_EQ(*(*migrated)->LastSliceNumber(), 12u);
  Result<std::vector<UsageTotal>> slices = (*migrated)->Totals(0, 10'000, "slice");
  ASSERT_TRUE(slices.ok());
  EXPECT_EQ(slices->size(), 2u) << "the old records are kept as they were";
}

TEST(SliceIdTest, NumbersRoundTripAndForeignIdsHaveNone) {
  EXPECT_EQ(SliceIdOf(42), "s42");
  EXPECT_EQ(SliceNumberOf("s42"), 42u);
  for (const char* foreign : {"", "s", "x42", "s4x", "s-1", "42"}) EXPECT_EQ(SliceNumberOf(foreign), std::nullopt) << foreign;
}

TEST_F(StoreTest, ADatabaseFromANewerAgentIsRefused) {
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(Path().c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version=99;", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  Result<std::unique_ptr<Store>> store = Store::Open(Path());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kVersionMismatch);
}

// A database of schema 4 (before idempotency keys and Kubernetes labels) gets the columns, empty,
// keeping its slices; new slices store and read them back.
TEST_F(StoreTest, ASchemaFourDatabaseGainsKeysAndKubernetesLabels) {
  {
    Result<std::unique_ptr<Store>> store = Store::Open(Path());
    ASSERT_TRUE(store.ok()) << store.status().message();
    ASSERT_TRUE((*store)->PutSlice(Sample("s1")).ok());
  }
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(Path().c_str(), &db), SQLITE_OK);
    const char* v4 = "ALTER TABLE slices DROP COLUMN idempotency_key; ALTER TABLE slices DROP COLUMN kube_namespace;"
                     "ALTER TABLE slices DROP COLUMN pod; ALTER TABLE slices DROP COLUMN claim; PRAGMA user_version=4;";
    ASSERT_EQ(sqlite3_exec(db, v4, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  Result<std::unique_ptr<Store>> store = Store::Open(Path());
  ASSERT_TRUE(store.ok()) << store.status().message();
  SliceRecord labelled = Sample("s2");
  labelled.idempotency_key = "uid-1/claim";
  labelled.kube = {"ml", "trainer-0", "gpu-claim"};
  ASSERT_TRUE((*store)->PutSlice(labelled).ok());
  Result<std::vector<SliceRecord>> slices = (*store)->Slices();
  ASSERT_TRUE(slices.ok());
  ASSERT_EQ(slices->size(), 2u);
  EXPECT_EQ((*slices)[0], Sample("s1")) << "kept, with no key and no labels";
  EXPECT_EQ((*slices)[1], labelled);
}

// A database of schema 5 (before isolation classes) gets the column: its slices read as trusted,
// new ones keep what they were given.
TEST_F(StoreTest, ASchemaFiveDatabaseGainsIsolation) {
  {
    Result<std::unique_ptr<Store>> store = Store::Open(Path());
    ASSERT_TRUE(store.ok()) << store.status().message();
    ASSERT_TRUE((*store)->PutSlice(Sample("s1")).ok());
  }
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(Path().c_str(), &db), SQLITE_OK);
    const char* v5 = "ALTER TABLE slices DROP COLUMN isolation; PRAGMA user_version=5;";
    ASSERT_EQ(sqlite3_exec(db, v5, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  Result<std::unique_ptr<Store>> store = Store::Open(Path());
  ASSERT_TRUE(store.ok()) << store.status().message();
  SliceRecord hard = Sample("s2");
  hard.isolation = Isolation::kHard;
  ASSERT_TRUE((*store)->PutSlice(hard).ok());
  Result<std::vector<SliceRecord>> slices = (*store)->Slices();
  ASSERT_TRUE(slices.ok());
  ASSERT_EQ(slices->size(), 2u);
  EXPECT_EQ((*slices)[0].isolation, Isolation::kTrusted);
  EXPECT_EQ((*slices)[1], hard);
}

TEST_F(StoreTest, GarbageIsNotADatabase) {
  { std::ofstream(Path()) << "this is not sqlite, not even close, but long enough to have a header......"; }
  Result<std::unique_ptr<Store>> store = Store::Open(Path());
  EXPECT_FALSE(store.ok());
}

}  // namespace
}  // namespace fgpu::agent
