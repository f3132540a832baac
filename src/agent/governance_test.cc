// The agent's slices through one Governor: tiers order the queue, preemption and reclaim are
// decided there and handed to stop-loss, quotas refuse with their reason, the queue and the
// quotas are shown, and a restart adopts what runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "agent/config.h"
#include "agent/slice_service.h"
#include "agent/store.h"
#include "core/units.h"

namespace fgpu::agent {
namespace {

class GovernanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/fgpu-governance-test-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    service_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  void Boot(Governance governance) {
    service_.reset();
    store_.reset();
    Result<std::unique_ptr<Store>> store = Store::Open(dir_ + "/state.db");
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
    std::vector<GpuState> gpus = {{0, "GPU-aaaa", "H100", 80 * kGiB, 0, 0}, {1, "GPU-bbbb", "H100", 80 * kGiB, 0, 0}};
    service_ = std::make_unique<SliceService>(store_.get(), gpus, dir_ + "/slices", nullptr, std::move(governance));
    ASSERT_TRUE(service_->Restore().ok());
  }

  // Over the Unix socket as this (live) process, so waiting is allowed.
  static net::Peer Me(uid_t uid = 0) {
    net::Peer peer;
    peer.unix_socket = true;
    peer.uid = uid;
    peer.pid = getpid();
    return peer;
  }

  static CreateRequest Ask(uint64_t gib, slice::Tier tier = slice::Tier::kStandard, const std::string& tenant = "default",
                           bool wait = false) {
    CreateRequest request;
    request.memory_bytes = gib * kGiB;
    request.compute_share = static_cast<uint32_t>(gib * 100 / 80);
    request.tier = tier;
    request.tenant = tenant;
    request.wait = wait;
    return request;
  }

  // Plain preemption: at once, of any lower tier (governor.h).
  static Governance Plain() {
    Governance governance;
    governance.options = sched::PlainPreemption();
    return governance;
  }

  std::string dir_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<SliceService> service_;
};

TEST_F(GovernanceTest, AHigherTierWaiterGoesFirstAndPreemptionIsHandedToStopLoss) {
  Governance governance = Plain();
  governance.options.preemption = false;
  Boot(governance);
  ASSERT_TRUE(service_->Create(Ask(80), Me()).ok());
  ASSERT_TRUE(service_->Create(Ask(80), Me()).ok());
  Result<QueueStatus> standard = service_->CreateOrQueue(Ask(40, slice::Tier::kStandard, "default", true), Me());
  Result<QueueStatus> latency = service_->CreateOrQueue(Ask(40, slice::Tier::kLatency, "default", true), Me());
  ASSERT_TRUE(standard.ok() && latency.ok());
  EXPECT_EQ(service_->Poll(latency->ticket)->position, 1);  // the later request, of a higher tier
  EXPECT_EQ(service_->Poll(standard->ticket)->position, 2);
  const std::vector<QueueEntry> queue = service_->Queue();
  ASSERT_EQ(queue.size(), 2u);
  EXPECT_EQ(queue[0].tier, slice::Tier::kLatency);
  EXPECT_EQ(queue[0].reason, "no node fits");
  EXPECT_EQ(queue[0].ticket_tag, latency->ticket.substr(0, 9));
  EXPECT_TRUE(service_->TakePreemptions().empty());
}

TEST_F(GovernanceTest, AWaitingHigherTierNamesItsVictimsForStopLoss) {
  Boot(Plain());
  Result<SliceRecord> batch = service_->Create(Ask(80, slice::Tier::kBatch), Me());
  ASSERT_TRUE(service_->Create(Ask(80, slice::Tier::kLatency), Me()).ok());
  ASSERT_TRUE(batch.ok());
  // Without waiting, nothing is preempted for it: it is refused.
  EXPECT_EQ(service_->Create(Ask(40, slice::Tier::kLatency), Me()).status().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(service_->TakePreemptions().empty());
  Result<QueueStatus> latency = service_->CreateOrQueue(Ask(40, slice::Tier::kLatency, "default", true), Me());
  ASSERT_TRUE(latency.ok());
  const std::vector<Preemption> victims = service_->TakePreemptions();
  ASSERT_EQ(victims.size(), 1u);
  EXPECT_EQ(victims[0].slice.id, batch->id);
  EXPECT_NE(victims[0].why.find("latency-tier request"), std::string::npos) << victims[0].why;
  EXPECT_TRUE(service_->TakePreemptions().empty()) << "taken once";
  EXPECT_EQ(service_->Queue().at(0).reason, "waiting for the workloads preempted for it to end");
  ASSERT_TRUE(service_->Delete(batch->id, "evicted").ok());  // what stop-loss does
  Result<QueueStatus> placed = service_->Poll(latency->ticket);
  ASSERT_TRUE(placed.ok());
  ASSERT_TRUE(placed->slice.has_value());
  EXPECT_EQ(placed->slice->gpu_uuid, batch->gpu_uuid);
}

Governance TwoTeams() {
  Governance governance;
  governance.options = sched::PlainPreemption();
  governance.quotas = {{.name = "team-a", .nominal = sched::Amount{int64_t{80} * static_cast<int64_t>(kGiB), 1000}},
                       {.name = "team-b", .nominal = sched::Amount{int64_t{80} * static_cast<int64_t>(kGiB), 1000},
                        .borrowing_limit = sched::Amount{0, 0}}};
  return governance;
}

TEST_F(GovernanceTest, QuotasRefuseWithTheirReasonAndAreShownWithWhatTheyHold) {
  Boot(TwoTeams());
  ASSERT_TRUE(service_->Create(Ask(40, slice::Tier::kStandard, "team-b"), Me()).ok());
  ASSERT_TRUE(service_->Create(Ask(40, slice::Tier::kStandard, "team-b"), Me()).ok());
  Result<SliceRecord> over = service_->Create(Ask(10, slice::Tier::kStandard, "team-b"), Me());
  ASSERT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(over.status().message().find("quota 'team-b'"), std::string::npos) << over.status().message();
  EXPECT_EQ(service_->Create(Ask(10, slice::Tier::kStandard, "nobody"), Me()).status().code(),
            StatusCode::kResourceExhausted);  // no quota, no default: refused
  ASSERT_TRUE(service_->Create(Ask(60, slice::Tier::kStandard, "team-a"), Me()).ok());
  const std::vector<QuotaUsage> quotas = service_->Quotas();
  ASSERT_EQ(quotas.size(), 2u);
  EXPECT_EQ(quotas[0].name, "team-a");
  EXPECT_EQ(quotas[0].memory_used, 60 * kGiB);
  EXPECT_EQ(quotas[0].memory_nominal, 80 * kGiB);
  EXPECT_EQ(quotas[1].memory_used, 80 * kGiB);
  EXPECT_EQ(quotas[1].compute_limit, 100u);
}

TEST_F(GovernanceTest, ABorrowerIsReclaimedForTheTenantWhoseQuotaItUses) {
  Governance governance = TwoTeams();
  governance.quotas[1].borrowing_limit = sched::kUnlimitedAmount;
  Boot(governance);
  ASSERT_TRUE(service_->Create(Ask(80, slice::Tier::kStandard, "team-b"), Me()).ok());
  Result<SliceRecord> borrowed = service_->Create(Ask(80, slice::Tier::kStandard, "team-b"), Me());
  ASSERT_TRUE(borrowed.ok()) << borrowed.status().message();
  Result<QueueStatus> owner = service_->CreateOrQueue(Ask(40, slice::Tier::kStandard, "team-a", true), Me());
  ASSERT_TRUE(owner.ok());
  const std::vector<Preemption> victims = service_->TakePreemptions();
  ASSERT_EQ(victims.size(), 1u);
  EXPECT_EQ(victims[0].slice.tenant, "team-b");
  EXPECT_NE(victims[0].why.find("quota"), std::string::npos) << victims[0].why;
}

TEST_F(GovernanceTest, ARestartAdoptsTheSlicesSoTheirRoomStaysTaken) {
  Boot(Plain());
  ASSERT_TRUE(service_->Create(Ask(80), Me()).ok());
  ASSERT_TRUE(service_->Create(Ask(70), Me()).ok());
  Boot(Plain());
  EXPECT_EQ(service_->List().size(), 2u);
  EXPECT_EQ(service_->Create(Ask(20), Me()).status().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(service_->Create(Ask(10), Me()).ok());
}

TEST_F(GovernanceTest, ResizeGoesThroughTheEngine) {
  Boot(Plain());
  Result<SliceRecord> first = service_->Create(Ask(40), Me());
  ASSERT_TRUE(service_->Create(Ask(40), Me()).ok());
  ASSERT_TRUE(first.ok());
  ResizeRequest grow;
  grow.memory_bytes = 60 * kGiB;
  if (first->gpu_uuid == service_->List()[1].gpu_uuid) {  // both on one GPU: it cannot grow
    EXPECT_EQ(service_->Resize(first->id, grow).status().code(), StatusCode::kResourceExhausted);
  } else {
    EXPECT_TRUE(service_->Resize(first->id, grow).ok());
  }
  ResizeRequest shrink;
  shrink.memory_bytes = 10 * kGiB;
  ASSERT_TRUE(service_->Resize(first->id, shrink).ok());
}

TEST(GovernanceConfigTest, TheSectionIsReadStrictly) {
  const std::string path = "/tmp/fgpu-governance-config-" + std::to_string(getpid()) + ".json";
  const auto load = [&](const std::string& text) {
    std::ofstream(path) << text;
    return LoadConfig(path);
  };
  Result<AgentConfig> good = load(R"({"governance": {"queueing": "greedy", "preemption_delay_s": 0,
      "preemptible_tiers": ["batch", "standard"], "reclaim": "lower", "fair_share_half_life_h": 24,
      "preemption_searches_per_second": 4,
      "quotas": [{"name": "org"}, {"name": "team", "parent": "org", "memory": "40GiB", "compute": 50,
                  "borrowing_compute": 25}], "default_quota": "team"}})");
  ASSERT_TRUE(good.ok()) << good.status().message();
  EXPECT_EQ(good->governance.options.queueing, sched::Queueing::kGreedy);
  EXPECT_EQ(good->governance.options.preemption_delay, 0);
  EXPECT_EQ(good->governance.options.preemptible, 3);
  EXPECT_EQ(good->governance.options.preemption_searches_per_second, 4);
  EXPECT_EQ(good->governance.options.reclaim, sched::ReclaimTiers::kLower);
  ASSERT_EQ(good->governance.quotas.size(), 2u);
  EXPECT_EQ(good->governance.quotas[1].nominal->gpu_memory_bytes, int64_t{40} << 30);
  EXPECT_EQ(good->governance.quotas[1].nominal->gpu_milli, 500);
  EXPECT_EQ(good->governance.quotas[1].borrowing_limit.gpu_milli, 250);
  for (const auto& [text, says] : std::vector<std::pair<std::string, std::string>>{
           {R"({"governance": {"queueing": "lifo"}})", "governance.queueing"},
           {R"({"governance": {"preemptible_tiers": ["latency"]}})", "tiers among batch, standard"},
           {R"({"governance": {"quotas": [{"memory": "1GiB"}]}})", "needs a name"},
           {R"({"governance": {"quotas": [{"name": "t", "parent": "nope"}]}})", "unknown parent 'nope'"},
           {R"({"governance": {"quotas": [{"name": "t", "cpu": 1}]}})", "unknown key"},
           {R"({"governance": {"default_quota": "ghost", "quotas": [{"name": "t"}]}})", "not a leaf"},
           {R"({"governance": {"wait_for_room_s": -1}})", "seconds >= 0"},
           {R"({"governance": {"preemption_searches_per_second": "many"}})", "a number >= 0"}}) {
    Result<AgentConfig> bad = load(text);
    ASSERT_FALSE(bad.ok()) << text;
    EXPECT_NE(bad.status().message().find(says), std::string::npos) << text << " → " << bad.status().message();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace fgpu::agent
