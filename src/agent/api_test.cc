// The API over a SliceService on made-up GPUs: lifecycle, room rules, bad requests, many
// concurrent creators, restart.
#include "agent/api.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <map>
#include <set>
#include <tuple>
#include <thread>
#include <vector>

#include "agent/log.h"
#include "agent/store.h"
#include "core/units.h"
#include "slice/process_liveness.h"

namespace fgpu::agent {
namespace {

using nlohmann::json;

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/fgpu-api-test-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir_);
    Boot();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // (Re)starts the agent's state on the same directory, as a restart would.
  void Boot() {
    api_.reset();
    service_.reset();
    store_.reset();
    Result<std::unique_ptr<Store>> store = Store::Open(dir_ + "/state.db");
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
    std::vector<GpuState> gpus = {{0, "GPU-aaaa", "H100", 80 * kGiB, 0, 0}, {1, "GPU-bbbb", "H100", 80 * kGiB, 0, 0}};
    service_ = std::make_unique<SliceService>(store_.get(), gpus, dir_ + "/slices",
                                              [this](const SliceRecord&) { return busy_ns_; });
    ASSERT_TRUE(service_->Restore().ok());
    api_ = std::make_unique<Api>(service_.get());
  }

  // As `uid` over the Unix socket (root: an admin).
  net::HttpResponse Call(const std::string& method, const std::string& path, const std::string& body = "",
                         uid_t uid = 0) {
    net::HttpRequest request;
    request.method = method;
    request.path = path.substr(0, path.find('?'));
    if (path.find('?') != std::string::npos) request.query = path.substr(path.find('?') + 1);
    request.body = body;
    request.peer.unix_socket = true;
    request.peer.uid = uid;
    request.peer.pid = 99;
    return api_->Handle(request);
  }

  std::string dir_;
  uint64_t busy_ns_ = 0;  // what the fake compute board reports for every slice
  std::unique_ptr<Store> store_;
  std::unique_ptr<SliceService> service_;
  std::unique_ptr<Api> api_;
};

TEST_F(ApiTest, CreateGetResizeDelete) {
  net::HttpResponse created = Call("POST", "/v1/slices",
                                   R"({"memory":"10GiB","compute":30,"compute_mode":"cap","tier":"latency","tenant":"t1"})");
  ASSERT_EQ(created.status, 201) << created.body;
  const json slice = json::parse(created.body);
  const std::string id = slice["id"];
  EXPECT_EQ(slice["memory_bytes"], 10 * kGiB);
  EXPECT_EQ(slice["owner_uid"], 0);
  // The slice directory is what the interposer will read.
  Result<slice::SliceAdmin> admin = slice::SliceAdmin::Open(slice["dir"].get<std::string>());
  ASSERT_TRUE(admin.ok());
  EXPECT_EQ(admin->spec().devices[0].compute_share, 30u);
  EXPECT_EQ(admin->spec().devices[0].tier, slice::Tier::kLatency);

  net::HttpResponse resized = Call("PATCH", "/v1/slices/" + id, R"({"memory":"20GiB","compute":50})");
  ASSERT_EQ(resized.status, 200) << resized.body;
  EXPECT_EQ(json::parse(resized.body)["compute"], 50);
  Result<slice::SliceAdmin> reread = slice::SliceAdmin::Open(slice["dir"].get<std::string>());
  EXPECT_EQ(reread->Usage().caps[0], 20 * kGiB);

  EXPECT_EQ(Call("GET", "/v1/slices/" + id).status, 200);
  EXPECT_EQ(Call("DELETE", "/v1/slices/" + id).status, 204);
  EXPECT_EQ(Call("GET", "/v1/slices/" + id).status, 404);
  EXPECT_FALSE(std::filesystem::exists(slice["dir"].get<std::string>()));
}

TEST_F(ApiTest, BadRequestsGetFourHundredsWithAMessage) {
  struct Case {
    const char* method;
    const char* path;
    const char* body;
    int status;
  };
  const Case cases[] = {
      {"POST", "/v1/slices", "{not json", 400},
      {"POST", "/v1/slices", "[1,2]", 400},
      {"POST", "/v1/slices", R"({"compute":30})", 400},
      {"POST", "/v1/slices", R"({"memory":-5})", 400},
      {"POST", "/v1/slices", R"({"memory":"ten gigs"})", 400},
      {"POST", "/v1/slices", R"({"memory":"1GiB","compute":0})", 400},
      {"POST", "/v1/slices", R"({"memory":"1GiB","compute":101})", 400},
      {"POST", "/v1/slices", R"({"memory":"1GiB","compute":"x"})", 400},
      {"POST", "/v1/slices", R"({"memory":"1GiB","compute_mode":"fast"})", 400},
      {"POST", "/v1/slices", R"({"memory":"1GiB","tier":"vip"})", 400},
      {"POST", "/v1/slices", R"({"memory":"1GiB","tenant":"bad tenant!"})", 400},
      {"POST", "/v1/slices", R"({"memory":"1GiB","colour":"red"})", 400},
      {"POST", "/v1/slices", R"({"memory":"1GiB","job":"12 34"})", 400},
      {"POST", "/v1/slices", R"({"memory":"1GiB","user":42})", 400},
      {"POST", "/v1/slices", R"({"memory":"1GiB","account":"a/b"})", 400},
      {"POST", "/v1/slices", R"({"memory":"1GiB","account":""})", 400},
      {"POST", "/v1/slices", R"({"memory":"1GiB","gpu":"7"})", 404},
      {"POST", "/v1/slices", R"({"memory":"1GiB","gpu":"GPU-nope"})", 404},
      {"POST", "/v1/slices", R"({"memory":"81GiB"})", 409},
      {"PUT", "/v1/slices", "{}", 405},
      {"GET", "/v1/slices/none", "", 404},
      {"PATCH", "/v1/slices/none", R"({"compute":5})", 404},
      {"GET", "/v2/everything", "", 404},
  };
  for (const Case& c : cases) {
    const net::HttpResponse response = Call(c.method, c.path, c.body);
    EXPECT_EQ(response.status, c.status) << c.method << " " << c.path << " " << c.body << " -> " << response.body;
    const json body = json::parse(response.body, nullptr, false);
    EXPECT_TRUE(body.is_object() && body.contains("error")) << response.body;
  }
  EXPECT_TRUE(service_->List().empty()) << "no bad request made a slice";
}

TEST_F(ApiTest, SharesAndMemoryAreNeverOverbooked) {
  // Two 80 GiB GPUs: 30+70 % fills one GPU's compute; the next 10 % goes to the other.
  ASSERT_EQ(Call("POST", "/v1/slices", R"({"memory":"10GiB","compute":30,"gpu":"0"})").status, 201);
  ASSERT_EQ(Call("POST", "/v1/slices", R"({"memory":"10GiB","compute":70,"gpu":"0"})").status, 201);
  EXPECT_EQ(Call("POST", "/v1/slices", R"({"memory":"1GiB","compute":10,"gpu":"0"})").status, 409);
  const net::HttpResponse placed = Call("POST", "/v1/slices", R"({"memory":"1GiB","compute":10})");
  ASSERT_EQ(placed.status, 201);
  EXPECT_EQ(json::parse(placed.body)["gpu"], "GPU-bbbb");
  // Growing past the GPU is refused, and nothing changes.
  const std::string id = json::parse(placed.body)["id"];
  EXPECT_EQ(Call("PATCH", "/v1/slices/" + id, R"({"memory":"81GiB"})").status, 409);
  EXPECT_EQ(json::parse(Call("GET", "/v1/slices/" + id).body)["memory_bytes"], kGiB);
}

TEST_F(ApiTest, AHundredConcurrentCreatorsGetDistinctSlicesAndNoOverbooking) {
  std::vector<std::thread> clients;
  std::vector<int> statuses(100);
  std::vector<std::string> ids(100);
  for (int i = 0; i < 100; ++i) {
    clients.emplace_back([&, i] {
      const net::HttpResponse response = Call("POST", "/v1/slices", R"({"memory":"3GiB","compute":4})");
      statuses[i] = response.status;
      if (response.status == 201) ids[i] = json::parse(response.body)["id"];
    });
  }
  for (std::thread& client : clients) client.join();
  std::set<std::string> distinct;
  int created = 0;
  for (int i = 0; i < 100; ++i) {
    EXPECT_TRUE(statuses[i] == 201 || statuses[i] == 409) << statuses[i];
    if (statuses[i] == 201) {
      ++created;
      distinct.insert(ids[i]);
    }
  }
  // 25 slices of 4 % fill a GPU's compute: 50 fit on two GPUs, the rest are refused.
  EXPECT_EQ(created, 50);
  EXPECT_EQ(distinct.size(), 50u);
  for (const GpuRoom& room : service_->Rooms()) {
    EXPECT_LE(room.compute_reserved, 100u);
    EXPECT_LE(room.memory_reserved, room.gpu.memory_total);
  }
}

TEST_F(ApiTest, ARestartKeepsEverySliceAndRepairsAMissingDirectory) {
  ASSERT_EQ(Call("POST", "/v1/slices", R"({"memory":"10GiB","compute":30})").status, 201);
  const net::HttpResponse second = Call("POST", "/v1/slices", R"({"memory":"5GiB","tenant":"b"})");
  ASSERT_EQ(second.status, 201);
  const std::vector<SliceRecord> before = service_->List();
  std::filesystem::remove_all(json::parse(second.body)["dir"].get<std::string>());
  std::filesystem::create_directories(dir_ + "/slices/s999");  // an orphan: no record
  Boot();
  EXPECT_EQ(service_->List(), before);
  for (const SliceRecord& slice : before) EXPECT_TRUE(slice::SliceAdmin::Open(slice.dir).ok()) << slice.dir;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/slices/s999"));
  // New ids continue after the restored ones.
  const net::HttpResponse third = Call("POST", "/v1/slices", R"({"memory":"1GiB"})");
  EXPECT_EQ(json::parse(third.body)["id"], "s3") << third.body;
}

// Paths under `dir` this process holds open (/proc/self/fd) or mapped (/proc/self/maps).
std::vector<std::string> HeldUnder(const std::string& dir) {
  std::vector<std::string> held;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    const std::string target = std::filesystem::read_symlink(entry.path(), error).string();
    if (!error && target.rfind(dir, 0) == 0) held.push_back(target);
  }
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find(dir) != std::string::npos) held.push_back(line);
  }
  return held;
}

// Issue 14: a deleted slice's ledger stayed open and mapped until the next /metrics scrape.
TEST_F(ApiTest, ADeletedSlicesFilesAreLetGoAtOnce) {
  const net::HttpResponse created = Call("POST", "/v1/slices", R"({"memory":"1GiB"})");
  ASSERT_EQ(created.status, 201) << created.body;
  const json slice = json::parse(created.body);
  const std::string dir = slice["dir"];
  ASSERT_EQ(Call("GET", "/metrics").status, 200);
  ASSERT_EQ(Call("GET", "/v1/slices?usage=1").status, 200);
  EXPECT_FALSE(HeldUnder(dir).empty()) << "scrapes keep the slice's files between them";
  ASSERT_EQ(Call("DELETE", "/v1/slices/" + slice["id"].get<std::string>()).status, 204);
  const std::vector<std::string> held = HeldUnder(dir);
  EXPECT_TRUE(held.empty()) << held.front();
}

// Every reader of a slice sees how long its launches waited in the compute gate and whether
// starvation detection flags it (false without stop-loss), in the list and alone.
TEST_F(ApiTest, EverySliceSaysItsThrottledTimeAndWhetherItIsStarved) {
  const net::HttpResponse created = Call("POST", "/v1/slices", R"({"memory":"1GiB"})");
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string id = json::parse(created.body)["id"];
  for (const std::string& path : {std::string("/v1/slices"), std::string("/v1/slices?usage=1")}) {
    const json list = json::parse(Call("GET", path, "", 1000).body);  // a user, not its owner
    ASSERT_EQ(list.size(), 1u);
    EXPECT_EQ(list[0]["compute_throttled_seconds"], 0.0) << path;
    EXPECT_EQ(list[0]["starved"], false) << path;
  }
  const json one = json::parse(Call("GET", "/v1/slices/" + id).body);
  EXPECT_EQ(one["compute_throttled_seconds"], 0.0);
  EXPECT_EQ(one["starved"], false);
}

// The event log: one line per create, resize, delete and refusal, with who asked and why.
TEST_F(ApiTest, CreateResizeDeleteAndRefusalsAreLogged) {
  const std::string log_path = dir_ + "/agent.log";
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(log_fd, 0);
  SetLogDescriptor(log_fd);
  const net::HttpResponse created = Call("POST", "/v1/slices", R"({"memory":"1GiB","compute":10,"tenant":"t1"})");
  const std::string id = json::parse(created.body)["id"];
  Call("PATCH", "/v1/slices/" + id, R"({"compute":20})");
  Call("POST", "/v1/slices", R"({"memory":"100GiB"})");                  // no room: 409
  Call("POST", "/v1/slices", R"({"memory":"1GiB","tier":"latency"})", 1000);  // not this user's tier: 403
  Call("GET", "/v1/slices/s999");                                         // a read of nothing: debug only
  Call("DELETE", "/v1/slices/" + id);
  SetLogDescriptor(STDERR_FILENO);
  close(log_fd);
  std::ifstream file(log_path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 5u) << ::testing::PrintToString(lines);
  EXPECT_EQ(lines[0], "fgpu agent: info create slice=" + id +
                          " gpu=GPU-aaaa memory=1GiB compute=10 mode=share tier=standard tenant=t1 uid=0");
  EXPECT_EQ(lines[1].rfind("fgpu agent: info resize slice=" + id + " gpu=GPU-aaaa memory=1GiB compute=20 ", 0), 0u)
      << lines[1];
  EXPECT_EQ(lines[2].rfind("fgpu agent: info refuse status=409 method=POST path=/v1/slices uid=0 pid=99 reason=\"no GPU "
                           "has 100 GiB",
                           0),
            0u)
      << lines[2];
  EXPECT_EQ(lines[3].rfind("fgpu agent: warn refuse status=403 method=POST path=/v1/slices uid=1000 pid=99 reason=", 0), 0u)
      << lines[3];
  EXPECT_NE(lines[3].find("latency"), std::string::npos) << lines[3];
  EXPECT_EQ(lines[4], "fgpu agent: info delete slice=" + id +
                          " gpu=GPU-aaaa memory=1GiB compute=20 mode=share tier=standard tenant=t1 uid=0 "
                          "reason=\"requested by uid 0\"");
}

// Issue 14: after every slice was deleted, a restart handed out s1 again and the usage of two
// slices merged under one id. Ids now continue past every id ever used.
TEST_F(ApiTest, IdsAreNeverReusedAfterEverySliceIsDeletedAndTheAgentRestarts) {
  std::set<std::string> seen;
  for (int round = 0; round < 3; ++round) {
    const net::HttpResponse created = Call("POST", "/v1/slices", R"({"memory":"1GiB"})");
    ASSERT_EQ(created.status, 201) << created.body;
    const std::string id = json::parse(created.body)["id"];
    EXPECT_TRUE(seen.insert(id).second) << id << " was handed out twice";
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // a record of some length
    ASSERT_EQ(Call("DELETE", "/v1/slices/" + id).status, 204);
    Boot();
  }
  Result<std::vector<UsageTotal>> billed = service_->Totals(0, INT64_MAX, "slice");
  ASSERT_TRUE(billed.ok());
  EXPECT_EQ(billed->size(), 3u) << "each slice bills under its own id";
}

TEST_F(ApiTest, WaitersQueueInOrderAndArePlacedWhenRoomFrees) {
  std::vector<std::string> ids;
  for (int i = 0; i < 2; ++i) ids.push_back(json::parse(Call("POST", "/v1/slices", R"({"memory":"80GiB"})").body)["id"]);
  const net::HttpResponse first = Call("POST", "/v1/slices", R"({"memory":"60GiB","wait":true})");
  ASSERT_EQ(first.status, 202) << first.body;
  const net::HttpResponse second = Call("POST", "/v1/slices", R"({"memory":"10GiB","wait":true})");
  ASSERT_EQ(second.status, 202);
  const std::string ticket1 = json::parse(first.body)["ticket"], ticket2 = json::parse(second.body)["ticket"];
  EXPECT_EQ(json::parse(second.body)["position"], 2);
  EXPECT_EQ(json::parse(Call("GET", "/v1/queue/" + ticket1).body)["position"], 1);
  // Without `wait`, a request that does not fit is refused; one no GPU could ever hold too.
  EXPECT_EQ(Call("POST", "/v1/slices", R"({"memory":"1GiB"})").status, 409);
  EXPECT_EQ(Call("POST", "/v1/slices", R"({"memory":"100GiB","wait":true})").status, 409);

  ASSERT_EQ(Call("DELETE", "/v1/slices/" + ids[0]).status, 204);
  const net::HttpResponse placed = Call("GET", "/v1/queue/" + ticket1);
  ASSERT_EQ(placed.status, 201) << placed.body;
  EXPECT_EQ(json::parse(placed.body)["memory_bytes"], 60 * kGiB);
  // 10 GiB fit beside it (strict FIFO only holds back those behind a head that does not fit).
  EXPECT_EQ(Call("GET", "/v1/queue/" + ticket2).status, 201);
  EXPECT_EQ(Call("GET", "/v1/queue/" + ticket1).status, 404) << "a ticket is spent once its slice is collected";
}

TEST_F(ApiTest, TheQueueIsListedWithWhyEachWaitsAndQuotasAreEmptyWithoutQuotas) {
  for (int i = 0; i < 2; ++i) ASSERT_EQ(Call("POST", "/v1/slices", R"({"memory":"80GiB"})").status, 201);
  const net::HttpResponse waiting = Call("POST", "/v1/slices", R"({"memory":"60GiB","wait":true,"tenant":"team-a"})");
  ASSERT_EQ(waiting.status, 202) << waiting.body;
  const std::string ticket = json::parse(waiting.body)["ticket"];
  const json queue = json::parse(Call("GET", "/v1/queue", "", 2000).body);
  ASSERT_EQ(queue.size(), 1u) << queue.dump();
  EXPECT_EQ(queue[0]["position"], 1);
  EXPECT_EQ(queue[0]["tenant"], "team-a");
  EXPECT_EQ(queue[0]["memory_bytes"], 60 * kGiB);
  EXPECT_EQ(queue[0]["reason"], "no node fits");
  EXPECT_EQ(queue[0]["ticket"], "") << "another user sees no part of the ticket";
  EXPECT_EQ(json::parse(Call("GET", "/v1/queue").body)[0]["ticket"], ticket.substr(0, 9));
  EXPECT_EQ(Call("GET", "/v1/quotas").body, "[]");
  EXPECT_EQ(Call("POST", "/v1/queue").status, 405);
}

TEST_F(ApiTest, WaitingAndReleaseOnExitNeedAKnownPeer) {
  net::HttpRequest request;
  request.method = "POST";
  request.path = "/v1/slices";
  request.body = R"({"memory":"1GiB","release_on_exit":true})";
  request.peer.unix_socket = false;  // TCP: nobody vouches for the pid
  EXPECT_EQ(api_->Handle(request).status, 403) << "without the token TCP is read-only";
  AccessPolicy policy;
  policy.token = "0123456789abcdef0123";
  api_->SetAccess(std::make_shared<Access>(policy));
  request.headers["authorization"] = "Bearer " + policy.token;
  EXPECT_EQ(api_->Handle(request).status, 400) << "an admin over TCP still has no pid to watch";
}

// A child that waits to be killed.
pid_t SleepingChild() {
  const pid_t pid = fork();
  if (pid == 0) {
    for (;;) pause();
  }
  return pid;
}

void Kill(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

TEST_F(ApiTest, ASliceIsReleasedWhenItsOwnerAndItsWorkloadHaveExited) {
  const pid_t owner = SleepingChild();     // `fgpu run`
  const pid_t workload = SleepingChild();  // the program it started
  net::HttpRequest request;
  request.method = "POST";
  request.path = "/v1/slices";
  request.body = R"({"memory":"1GiB","release_on_exit":true})";
  request.peer.unix_socket = true;
  request.peer.pid = owner;
  request.peer.uid = getuid();
  const net::HttpResponse created = api_->Handle(request);
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string dir = json::parse(created.body)["dir"];
  Result<slice::SliceAdmin> admin = slice::SliceAdmin::Open(dir);
  ASSERT_TRUE(admin.ok());
  ASSERT_TRUE(admin->TEST_PlantProcess(workload, slice::ReadStartTime(workload), {0}).ok());
  // A live process in the ledger that never joined proves nothing: the ledger is the owner's to
  // write (here: this test's own pid).
  ASSERT_TRUE(admin->TEST_PlantProcess(getpid(), slice::ReadStartTime(getpid()), {0}).ok());
  const std::string id = json::parse(created.body)["id"];
  ASSERT_TRUE(service_->Join(id, workload).ok()) << "as fgpu run joins before it starts the workload";

  EXPECT_TRUE(service_->Reap().empty()) << "the owner is alive";
  Kill(owner);  // e.g. fgpu run killed with SIGKILL
  EXPECT_TRUE(service_->Reap().empty()) << "its workload still runs";
  Kill(workload);
  EXPECT_EQ(service_->Reap().size(), 1u) << "the planted pid keeps nothing alive";
  EXPECT_TRUE(service_->List().empty());
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST_F(ApiTest, AnExclusiveGpuTakesNoNewSlicesAndTheSwitchSurvivesARestart) {
  ASSERT_EQ(Call("POST", "/v1/slices", R"({"memory":"10GiB","gpu":"0"})").status, 201);
  const net::HttpResponse switched = Call("PUT", "/v1/gpus/0", R"({"exclusive":true})");
  ASSERT_EQ(switched.status, 200) << switched.body;
  EXPECT_TRUE(json::parse(switched.body)[0]["exclusive"]);
  EXPECT_EQ(Call("POST", "/v1/slices", R"({"memory":"1GiB","gpu":"0"})").status, 409);
  EXPECT_EQ(json::parse(Call("POST", "/v1/slices", R"({"memory":"1GiB"})").body)["gpu"], "GPU-bbbb");
  EXPECT_EQ(service_->List().size(), 2u) << "the slice already there stays";
  EXPECT_EQ(Call("PUT", "/v1/gpus/9", R"({"exclusive":true})").status, 404);
  EXPECT_EQ(Call("PUT", "/v1/gpus/0", R"({"exclusive":"yes"})").status, 400);
  Boot();
  EXPECT_EQ(Call("POST", "/v1/slices", R"({"memory":"1GiB","gpu":"0"})").status, 409) << "persisted";
  ASSERT_EQ(Call("PUT", "/v1/gpus/GPU-aaaa", R"({"exclusive":false})").status, 200);
  EXPECT_EQ(Call("POST", "/v1/slices", R"({"memory":"1GiB","gpu":"0"})").status, 201);
}

TEST_F(ApiTest, UsageIsBilledPerIntervalAtTheLimitsThenInForce) {
  const json slice = json::parse(Call("POST", "/v1/slices", R"({"memory":"8GiB","compute":25,"tenant":"t1"})").body);
  const int64_t created = slice["created_unix_ms"];
  busy_ns_ = 900'000'000'000;  // 900 s of measured GPU time in the first hour
  ASSERT_TRUE(service_->Account(created + 3'600'000).ok());
  // A resize closes the interval at the old limits; a delete the last one.
  ASSERT_EQ(Call("PATCH", "/v1/slices/" + slice["id"].get<std::string>(), R"({"compute":50})").status, 200);
  Result<std::vector<UsageTotal>> hour = service_->Totals(created, created + 3'600'000, "tenant");
  ASSERT_TRUE(hour.ok());
  ASSERT_EQ(hour->size(), 1u);
  EXPECT_NEAR((*hour)[0].reserved_gpu_seconds, 900, 1e-6);  // 3600 s × 25 %
  EXPECT_NEAR((*hour)[0].memory_gib_hours, 8, 1e-6);
  EXPECT_NEAR((*hour)[0].busy_gpu_seconds, 900, 1e-6);
  ASSERT_TRUE(service_->Account(created + 7'200'000).ok());
  const net::HttpResponse report = Call("GET", "/v1/usage?by=slice&until=" + std::to_string(created + 7'200'000));
  ASSERT_EQ(report.status, 200) << report.body;
  EXPECT_EQ(json::parse(report.body)[0]["key"], slice["id"]);
  EXPECT_EQ(Call("GET", "/v1/usage?since=yesterday").status, 400);
  EXPECT_EQ(Call("GET", "/v1/usage?by=colour").status, 400);
}

// Stop-loss's fence holds new slices off a GPU without touching those on it, and is not persisted.
TEST_F(ApiTest, AFencedGpuTakesNoNewSlicesUntilTheFenceLifts) {
  ASSERT_EQ(Call("POST", "/v1/slices", R"({"memory":"8GiB","gpu":"0"})").status, 201);
  ASSERT_TRUE(service_->SetFenced("0", "2 GiB free, under the threshold").ok());
  const net::HttpResponse refused = Call("POST", "/v1/slices", R"({"memory":"8GiB","gpu":"0"})");
  EXPECT_EQ(refused.status, 409);
  EXPECT_NE(refused.body.find("stop-loss: 2 GiB free"), std::string::npos) << refused.body;
  // Placed by the agent: the other GPU.
  const json placed = json::parse(Call("POST", "/v1/slices", R"({"memory":"8GiB"})").body);
  EXPECT_EQ(placed["gpu"], "GPU-bbbb");
  EXPECT_EQ(service_->List().size(), 2u);
  ASSERT_TRUE(service_->SetFenced("GPU-aaaa", "").ok());
  EXPECT_EQ(Call("POST", "/v1/slices", R"({"memory":"8GiB","gpu":"0"})").status, 201);
  EXPECT_EQ(service_->SetFenced("7", "x").code(), StatusCode::kNotFound);
}

// A batch system's job (Slurm: the plugin sends job, user and account) is kept on the slice and
// on every usage record, so chargeback can bill accounts; the slice's "env" is what a launcher
// puts in the workload's environment.
TEST_F(ApiTest, JobLabelsReachUsageRecordsAndTheSliceNamesItsWorkloadEnvironment) {
  api_->SetWorkloadEnvironment({"/opt/fgpu/lib/fgpu/libfgpu.so", {{"FGPU_SIM_SEGMENT", "/fgpu-node1"}}});
  const net::HttpResponse created = Call(
      "POST", "/v1/slices",
      R"({"memory":"8GiB","compute":25,"tenant":"physics","gpu":"1","job":"1234.batch","user":"alice@lab","account":"physics"})");
  ASSERT_EQ(created.status, 201) << created.body;
  const json slice = json::parse(created.body);
  EXPECT_EQ(slice["job"], "1234.batch");
  EXPECT_EQ(slice["user"], "alice@lab");
  EXPECT_EQ(slice["account"], "physics");
  EXPECT_EQ(slice["env"], (json{{"LD_PRELOAD", "/opt/fgpu/lib/fgpu/libfgpu.so"},
                                {"FGPU_SIM_SEGMENT", "/fgpu-node1"},
                                {"FGPU_SLICE", slice["dir"]},
                                {"CUDA_VISIBLE_DEVICES", "GPU-bbbb"}}));
  ASSERT_EQ(Call("POST", "/v1/slices", R"({"memory":"8GiB","compute":25,"tenant":"physics"})").status, 201);
  const int64_t created_ms = slice["created_unix_ms"];
  ASSERT_TRUE(service_->Account(created_ms + 3'600'000).ok());
  Boot();  // the labels are in the state database, not only in memory
  EXPECT_EQ(json::parse(Call("GET", "/v1/slices/" + slice["id"].get<std::string>()).body)["account"], "physics");
  const std::string until = "&until=" + std::to_string(created_ms + 3'600'000);
  const json accounts = json::parse(Call("GET", "/v1/usage?by=account" + until).body);
  ASSERT_EQ(accounts.size(), 2u) << accounts;
  EXPECT_EQ(accounts[1]["key"], "physics");
  EXPECT_NEAR(accounts[1]["reserved_gpu_seconds"].get<double>(), 900, 1);
  EXPECT_EQ(json::parse(Call("GET", "/v1/usage?by=user" + until).body)[1]["key"], "alice@lab");
  EXPECT_EQ(json::parse(Call("GET", "/v1/usage?by=job" + until).body)[1]["key"], "1234.batch");
}

// What the Kubernetes plugin needs: a retried create answers the slice its key already made
// (one slice, however often the kubelet retries), a different request under the key is a clear
// 409, and the key and the pod's labels are kept across a restart.
TEST_F(ApiTest, ACreateRetriedWithItsIdempotencyKeyAnswersTheSameSlice) {
  const std::string body =
      R"({"memory":"4GiB","compute":10,"idempotency_key":"uid-123/claim:a","namespace":"ml","pod":"trainer-0","claim":"gpu"})";
  const net::HttpResponse first = Call("POST", "/v1/slices", body, 1001);
  ASSERT_EQ(first.status, 201) << first.body;
  const json slice = json::parse(first.body);
  EXPECT_EQ(slice["idempotency_key"], "uid-123/claim:a");
  EXPECT_EQ(slice["namespace"], "ml");
  EXPECT_EQ(slice["pod"], "trainer-0");
  EXPECT_EQ(slice["claim"], "gpu");
  const net::HttpResponse again = Call("POST", "/v1/slices", body, 1001);
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(json::parse(again.body)["id"], slice["id"]);
  EXPECT_EQ(service_->List().size(), 1u);

  const net::HttpResponse other = Call("POST", "/v1/slices", R"({"memory":"8GiB","idempotency_key":"uid-123/claim:a"})", 1001);
  EXPECT_EQ(other.status, 409);
  EXPECT_NE(json::parse(other.body)["error"].get<std::string>().find("other limits"), std::string::npos) << other.body;
  const net::HttpResponse stranger = Call("POST", "/v1/slices", body, 1002);
  EXPECT_EQ(stranger.status, 409);
  EXPECT_EQ(stranger.body.find(slice["id"].get<std::string>()), std::string::npos) << "never names the other's slice";
  EXPECT_EQ(Call("POST", "/v1/slices", R"({"memory":"1GiB","idempotency_key":"no spaces"})").status, 400);
  EXPECT_EQ(Call("POST", "/v1/slices", R"({"memory":"1GiB","pod":"Upper"})").status, 400);

  // GET ?idempotency_key= finds it, for its owner only.
  const json mine = json::parse(Call("GET", "/v1/slices?idempotency_key=uid-123%2Fclaim%3Aa", "", 1001).body);
  ASSERT_EQ(mine.size(), 1u) << mine;
  EXPECT_EQ(mine[0]["id"], slice["id"]);
  EXPECT_TRUE(json::parse(Call("GET", "/v1/slices?idempotency_key=uid-123/claim:a", "", 1002).body).empty());
  EXPECT_TRUE(json::parse(Call("GET", "/v1/slices?idempotency_key=other", "", 1001).body).empty());

  Boot();  // the key and the labels are in the state database
  EXPECT_EQ(Call("POST", "/v1/slices", body, 1001).status, 200);
  const json restored = json::parse(Call("GET", "/v1/slices/" + slice["id"].get<std::string>()).body);
  EXPECT_EQ(restored["pod"], "trainer-0");
  EXPECT_EQ(restored["idempotency_key"], "uid-123/claim:a");
  // Once the slice is deleted the key is free again: a new slice.
  ASSERT_EQ(Call("DELETE", "/v1/slices/" + slice["id"].get<std::string>()).status, 204);
  EXPECT_EQ(Call("POST", "/v1/slices", body, 1001).status, 201);
}

// pod_uid makes the pod's cgroup hold the slice's processes: the plugin's (an admin's) word only,
// kept across a restart, shown to those who see the slice in full.
TEST_F(ApiTest, OnlyAnAdminTiesASliceToAPod) {
  const std::string body = R"({"memory":"1GiB","pod":"trainer-0","pod_uid":"0b5e1c7a-1111-2222-3333-444455556666"})";
  const net::HttpResponse user = Call("POST", "/v1/slices", body, 1001);
  EXPECT_EQ(user.status, 403) << user.body;
  EXPECT_NE(user.body.find("pod_uid is for the Kubernetes plugin"), std::string::npos) << user.body;
  const net::HttpResponse admin = Call("POST", "/v1/slices", body);
  ASSERT_EQ(admin.status, 201) << admin.body;
  const std::string id = json::parse(admin.body)["id"];
  EXPECT_EQ(json::parse(admin.body)["pod_uid"], "0b5e1c7a-1111-2222-3333-444455556666");
  Boot();
  EXPECT_EQ(json::parse(Call("GET", "/v1/slices/" + id).body)["pod_uid"], "0b5e1c7a-1111-2222-3333-444455556666");
  EXPECT_EQ(service_->List()[0].kube.pod_uid, "0b5e1c7a-1111-2222-3333-444455556666");
  EXPECT_EQ(Call("POST", "/v1/slices", R"({"memory":"1GiB","pod_uid":"../x"})").status, 400);
}

TEST_F(ApiTest, AQueuedRequestRetriedWithItsKeyKeepsItsTicket) {
  ASSERT_EQ(Call("POST", "/v1/slices", R"({"memory":"80GiB","gpu":"0"})").status, 201);
  ASSERT_EQ(Call("POST", "/v1/slices", R"({"memory":"80GiB","gpu":"1"})").status, 201);
  const std::string body = R"({"memory":"10GiB","wait":true,"idempotency_key":"k1"})";
  const net::HttpResponse queued = Call("POST", "/v1/slices", body);
  ASSERT_EQ(queued.status, 202) << queued.body;
  const net::HttpResponse again = Call("POST", "/v1/slices", body);
  ASSERT_EQ(again.status, 202) << again.body;
  EXPECT_EQ(json::parse(again.body)["ticket"], json::parse(queued.body)["ticket"]);
  EXPECT_EQ(service_->QueueLength(), 1);
  EXPECT_EQ(Call("POST", "/v1/slices", R"({"memory":"20GiB","wait":true,"idempotency_key":"k1"})").status, 409);
}

}  // namespace
}  // namespace fgpu::agent

namespace fgpu::agent {
namespace {

// Authorization through the API: users own their slices, viewers read, admins do everything.
class ApiAccessTest : public ApiTest {
 protected:
  static constexpr uid_t kAlice = 1001, kBob = 1002;

  net::HttpResponse Tcp(const std::string& method, const std::string& path, const std::string& body = "",
                        std::map<std::string, std::string> headers = {}) {
    net::HttpRequest request;
    request.method = method;
    request.path = path.substr(0, path.find('?'));
    if (path.find('?') != std::string::npos) request.query = path.substr(path.find('?') + 1);
    request.body = body;
    request.headers = std::move(headers);
    request.peer.unix_socket = false;
    request.peer.address = "127.0.0.1:40000";
    return api_->Handle(request);
  }
  std::string Create(uid_t uid, const std::string& body = R"({"memory":"4GiB","compute":10})") {
    const net::HttpResponse created = Call("POST", "/v1/slices", body, uid);
    EXPECT_EQ(created.status, 201) << created.body;
    return created.status == 201 ? json::parse(created.body)["id"].get<std::string>() : "";
  }
};

TEST_F(ApiAccessTest, AUserManagesOnlyItsOwnSlices) {
  const std::string alices = Create(kAlice);
  const std::string bobs = Create(kBob);
  EXPECT_EQ(Call("PATCH", "/v1/slices/" + alices, R"({"memory":"5GiB"})", kAlice).status, 200);
  for (const auto& [method, body] : std::vector<std::pair<std::string, std::string>>{
           {"PATCH", R"({"memory":"70GiB"})"}, {"DELETE", ""}}) {
    const net::HttpResponse refused = Call(method, "/v1/slices/" + bobs, body, kAlice);
    EXPECT_EQ(refused.status, 403) << method << " " << refused.body;
    EXPECT_NE(refused.body.find("belongs to another user"), std::string::npos) << refused.body;
  }
  EXPECT_EQ(json::parse(Call("GET", "/v1/slices/" + bobs).body)["memory_bytes"], 4 * kGiB) << "unchanged";
  // Another user's slice is seen as the dashboard shows it: no directory, environment or job.
  const json seen = json::parse(Call("GET", "/v1/slices/" + bobs, "", kAlice).body);
  EXPECT_FALSE(seen.contains("dir") || seen.contains("env") || seen.contains("owner_pid") || seen.contains("user"));
  EXPECT_TRUE(json::parse(Call("GET", "/v1/slices/" + alices, "", kAlice).body).contains("env"));
  EXPECT_EQ(Call("DELETE", "/v1/slices/" + bobs, "", kBob).status, 204);
  EXPECT_EQ(Call("DELETE", "/v1/slices/" + alices).status, 204) << "root is an admin";
}

TEST_F(ApiAccessTest, AUserAsksWithinItsRule) {
  AccessPolicy policy;
  policy.defaults.max_memory = 8 * kGiB;
  policy.defaults.max_compute = 20;
  policy.defaults.max_slices = 2;
  policy.defaults.gpus = {"1"};
  api_->SetAccess(std::make_shared<Access>(policy));
  const struct {
    const char* body;
    const char* reason;
  } refusals[] = {
      {R"({"memory":"9GiB","gpu":"1"})", "over 8 GiB"},
      {R"({"memory":"1GiB","compute":30,"gpu":"1"})", "over 20 % compute"},
      {R"({"memory":"1GiB","tier":"latency","gpu":"1"})", "latency tier"},
      {R"({"memory":"1GiB","gpu":"0"})", "may not use GPU 0"},
      {R"({"memory":"1GiB","gpu":"1","tenant":"physics"})", "may not bill tenant 'physics'"},
      {R"({"memory":"1GiB","gpu":"1","owner":0})", "for another user"},
      {R"({"memory":"1GiB","gpu":"1","account":"physics"})", "set by the batch system"},
  };
  for (const auto& refusal : refusals) {
    const net::HttpResponse response = Call("POST", "/v1/slices", refusal.body, kAlice);
    EXPECT_EQ(response.status, 403) << refusal.body << " -> " << response.body;
    EXPECT_NE(response.body.find(refusal.reason), std::string::npos) << response.body;
  }
  // Memory alone: the proportional share is held to the rule's compute.
  const json sized = json::parse(Call("POST", "/v1/slices", R"({"memory":"8GiB","gpu":"1"})", kAlice).body);
  EXPECT_EQ(sized["compute"], 10);
  const std::string id = sized["id"];
  EXPECT_EQ(Call("PATCH", "/v1/slices/" + id, R"({"compute":40})", kAlice).status, 403);
  EXPECT_EQ(Call("PATCH", "/v1/slices/" + id, R"({"tier":"latency"})", kAlice).status, 403);
  EXPECT_EQ(Call("POST", "/v1/slices", R"({"memory":"1GiB","gpu":"1","tenant":"default"})", kAlice).status, 201);
  const net::HttpResponse third = Call("POST", "/v1/slices", R"({"memory":"1GiB","gpu":"1"})", kAlice);
  EXPECT_EQ(third.status, 403) << "max_slices";
  EXPECT_EQ(service_->List().size(), 2u);
  // Admins are outside every rule; an admin creating a slice for a user (the Slurm plugin) gets
  // what that user may have, its tenant and labels taken on the admin's word.
  EXPECT_EQ(Call("POST", "/v1/slices", R"({"memory":"40GiB","tier":"latency","gpu":"0"})").status, 201);
  const net::HttpResponse too_much =
      Call("POST", "/v1/slices", R"({"memory":"1GiB","tier":"latency","gpu":"1","owner":1002})");
  EXPECT_EQ(too_much.status, 403) << too_much.body;
  const json for_bob = json::parse(
      Call("POST", "/v1/slices", R"({"memory":"1GiB","gpu":"1","tenant":"physics","owner":1002})").body);
  EXPECT_EQ(for_bob["owner_uid"], kBob);
  EXPECT_EQ(for_bob["tenant"], "physics");
  EXPECT_EQ(Call("DELETE", "/v1/slices/" + for_bob["id"].get<std::string>(), "", kBob).status, 204);
}

TEST_F(ApiAccessTest, TcpIsReadOnlyWithoutTheTokenAndAdminWithIt) {
  const std::string id = Create(kAlice);
  EXPECT_EQ(Tcp("GET", "/v1/slices").status, 200);
  EXPECT_EQ(Tcp("GET", "/v1/gpus").status, 200);
  EXPECT_EQ(Tcp("GET", "/metrics").status, 200);
  EXPECT_EQ(Tcp("GET", "/v1/usage?by=tenant").status, 200);
  EXPECT_EQ(Tcp("GET", "/v1/usage?by=user").status, 403);
  EXPECT_FALSE(json::parse(Tcp("GET", "/v1/slices").body)[0].contains("env"));
  for (const auto& [method, path, body] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"POST", "/v1/slices", R"({"memory":"1GiB"})"},
           {"PATCH", "/v1/slices/" + id, R"({"memory":"1GiB"})"},
           {"DELETE", "/v1/slices/" + id, ""},
           {"PUT", "/v1/gpus/0", R"({"exclusive":true})"}}) {
    EXPECT_EQ(Tcp(method, path, body).status, 403) << method << " " << path;
  }
  AccessPolicy policy;
  policy.token = "s3cret-token-of-twenty";
  api_->SetAccess(std::make_shared<Access>(policy));
  EXPECT_EQ(Tcp("DELETE", "/v1/slices/" + id, "", {{"authorization", "Bearer wrong-token-of-twenty!"}}).status, 403);
  EXPECT_EQ(Tcp("DELETE", "/v1/slices/" + id, "", {{"authorization", "Bearer " + policy.token}}).status, 204);
  // A page on another origin reaching the loopback port (DNS rebinding) is refused.
  EXPECT_EQ(Tcp("GET", "/", "", {{"host", "evil.example:7070"}}).status, 403);
  EXPECT_EQ(Tcp("GET", "/", "", {{"host", "127.0.0.1:7070"}}).status, 200);
  EXPECT_EQ(Tcp("GET", "/", "", {{"host", "localhost"}}).status, 200);
}

TEST_F(ApiAccessTest, ATicketIsItsCreatorsAndCannotBeGuessed) {
  Create(kAlice, R"({"memory":"80GiB","gpu":"0"})");
  Create(kAlice, R"({"memory":"80GiB","gpu":"1"})");
  net::HttpRequest request;
  request.method = "POST";
  request.path = "/v1/slices";
  request.body = R"({"memory":"1GiB","wait":true})";
  request.peer = {true, getpid(), kBob, kBob, "sock"};
  const net::HttpResponse queued = api_->Handle(request);
  ASSERT_EQ(queued.status, 202) << queued.body;
  const std::string ticket = json::parse(queued.body)["ticket"];
  EXPECT_EQ(ticket.size(), 33u) << "q + 128 random bits in hex";
  EXPECT_EQ(Call("GET", "/v1/queue/" + ticket, "", kAlice).status, 404);
  EXPECT_EQ(Call("DELETE", "/v1/queue/" + ticket, "", kAlice).status, 404);
  EXPECT_EQ(Call("GET", "/v1/queue/" + ticket, "", kBob).status, 200);
  EXPECT_EQ(Call("DELETE", "/v1/queue/" + ticket, "", kBob).status, 204);
}

TEST_F(ApiAccessTest, HostileBodiesAndTargetsAreRefusedCleanly) {
  std::string deep(100000, '[');
  deep += std::string(100000, ']');
  EXPECT_EQ(Call("POST", "/v1/slices", deep).status, 400);
  EXPECT_EQ(Call("POST", "/v1/slices", R"({"memory":"1GiB","tenant":"\u00ff"})").status, 400);
  EXPECT_EQ(Call("POST", "/v1/slices", "{\"memory\":\"1GiB\",\"tenant\":\"\xff\"}").status, 400);
  for (const std::string path : {"/v1/slices/\xff\xfe", "/v1/\xc0\xaf", "/\xed\xa0\x80"}) {
    const net::HttpResponse response = Call("GET", path);
    EXPECT_EQ(response.status, 400) << response.body;
    EXPECT_TRUE(json::parse(response.body, nullptr, false).is_object());
  }
  // Valid UTF-8 in an unknown path is quoted back as it is.
  EXPECT_EQ(Call("GET", "/v1/slices/caf\xc3\xa9").status, 404);
  EXPECT_TRUE(service_->List().empty());
}

}  // namespace
}  // namespace fgpu::agent
