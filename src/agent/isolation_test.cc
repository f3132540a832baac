// Isolation classes: the geometry the agent asks NVML for (ChooseTarget), and placement routing
// each request to a GPU of a fitting class (SliceService over shared, exclusive and MIG targets).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "agent/config.h"
#include "agent/mig_setup.h"
#include "agent/slice_service.h"
#include "agent/store.h"
#include "core/units.h"

namespace fgpu::agent {
namespace {

const mig::ModelInfo& H100() { return mig::InfoOf(mig::Model::kH100_80GB); }
uint32_t IdOf(std::string_view name) { return mig::FindProfileByName(H100(), name)->id; }

std::vector<std::string> Names(std::initializer_list<const char*> names) {
  return {names.begin(), names.end()};
}

TEST(ChooseTargetTest, GivesExactlyTheProfilesAskedInAValidGeometry) {
  Result<TargetChoice> target = ChooseTarget(H100(), Names({"3g.40gb", "2g.20gb", "2g.20gb"}), {}, nullptr);
  ASSERT_TRUE(target.ok()) << target.status().message();
  ASSERT_EQ(target->geometry.size(), 3u);
  EXPECT_TRUE(target->displaced.empty());
  EXPECT_EQ(mig::CheckGeometry(H100(), target->geometry), mig::GeometryError::kNone);
  int threes = 0, twos = 0;
  for (const mig::Placed& placed : target->geometry) {
    threes += placed.profile_id == IdOf("3g.40gb") ? 1 : 0;
    twos += placed.profile_id == IdOf("2g.20gb") ? 1 : 0;
  }
  EXPECT_EQ(threes, 1);
  EXPECT_EQ(twos, 2);
}

TEST(ChooseTargetTest, KeepsWhatItCanOfTheCurrentGeometry) {
  // A 2g.20gb at slot 2 stays where it is; the rest is added around it.
  const std::vector<mig::Placed> current = {{IdOf("2g.20gb"), 2}};
  Result<TargetChoice> target = ChooseTarget(H100(), Names({"2g.20gb", "2g.20gb"}), current, nullptr);
  ASSERT_TRUE(target.ok()) << target.status().message();
  EXPECT_NE(std::find(target->geometry.begin(), target->geometry.end(), current[0]), target->geometry.end());
}

TEST(ChooseTargetTest, ABusyInstanceThatMustGoIsDisplaced) {
  const std::vector<mig::Placed> current = {{IdOf("1g.10gb"), 6}, {IdOf("3g.40gb"), 0}};
  Result<TargetChoice> target =
      ChooseTarget(H100(), Names({"4g.40gb", "1g.10gb"}), current, [](size_t i) { return i == 1 ? "holds slice s7" : ""; });
  ASSERT_TRUE(target.ok()) << target.status().message();
  EXPECT_EQ(target->displaced, std::vector<size_t>{1});
  // Idle, it is simply not kept.
  target = ChooseTarget(H100(), Names({"4g.40gb", "1g.10gb"}), current, [](size_t) { return std::string(); });
  ASSERT_TRUE(target.ok());
  EXPECT_TRUE(target->displaced.empty());
}

TEST(ChooseTargetTest, ABusyInstanceThatCanStayDecidesThePlacement) {
  // 3g.40gb may start at 0 or 4: the busy one at 4 stays, so the new one goes to 0.
  const std::vector<mig::Placed> current = {{IdOf("3g.40gb"), 4}};
  Result<TargetChoice> target =
      ChooseTarget(H100(), Names({"3g.40gb", "3g.40gb"}), current, [](size_t) { return std::string("holds slice s1"); });
  ASSERT_TRUE(target.ok()) << target.status().message();
  EXPECT_TRUE(target->displaced.empty());
  EXPECT_NE(std::find(target->geometry.begin(), target->geometry.end(), current[0]), target->geometry.end());
}

TEST(ChooseTargetTest, UnknownProfilesAndImpossibleMixesAreInvalid) {
  Result<TargetChoice> unknown = ChooseTarget(H100(), Names({"3g.41gb"}), {}, nullptr);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("no MIG profile '3g.41gb' on the H100-80GB"), std::string::npos);
  Result<TargetChoice> crowded = ChooseTarget(H100(), Names({"4g.40gb", "4g.40gb"}), {}, nullptr);
  ASSERT_FALSE(crowded.ok());
  EXPECT_EQ(crowded.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(crowded.status().message().find("cannot share one H100-80GB"), std::string::npos);
}

TEST(GpuClassConfigTest, ParsesClassesAndRefusesWhatCannotBeMeant) {
  const std::string path = "/tmp/fgpu-isolation-config-" + std::to_string(getpid()) + ".json";
  const auto load = [&](const std::string& text) {
    { std::ofstream(path) << text; }
    Result<AgentConfig> config = LoadConfig(path);
    std::filesystem::remove(path);
    return config;
  };
  Result<AgentConfig> good =
      load(R"({"gpus": [{"gpu": "0", "isolation": "mig", "mig": ["3g.40gb", "2g.20gb"]},
                                               {"gpu": "GPU-b", "isolation": "exclusive"}]})");
  ASSERT_TRUE(good.ok()) << good.status().message();
  ASSERT_EQ(good->gpus.size(), 2u);
  EXPECT_EQ(good->gpus[0].isolation, IsolationClass::kMig);
  EXPECT_EQ(good->gpus[0].mig, Names({"3g.40gb", "2g.20gb"}));
  EXPECT_EQ(good->gpus[1].isolation, IsolationClass::kExclusive);
  EXPECT_FALSE(good->gpus[0].dynamic);
  Result<AgentConfig> dynamic = load(R"({"gpus": [{"gpu": "1", "isolation": "mig", "mig": "dynamic"}]})");
  ASSERT_TRUE(dynamic.ok()) << dynamic.status().message();
  EXPECT_TRUE(dynamic->gpus[0].dynamic);
  EXPECT_TRUE(dynamic->gpus[0].mig.empty());
  const std::pair<const char*, const char*> bad[] = {
      {R"({"gpus": [{"gpu": "0", "isolation": "private"}]})", "shared, exclusive or mig"},
      {R"({"gpus": [{"gpu": "0", "isolation": "shared", "mig": ["1g.10gb"]}]})",
       "needs \"isolation\": \"mig\""},
      {R"({"gpus": [{"isolation": "mig"}]})", ".gpu: missing"},
      {R"({"gpus": [{"gpu": "0"}, {"gpu": "0"}]})", "listed twice"},
      {R"({"gpus": [{"gpu": "0", "isolaton": "mig"}]})", "unknown key"},
      {R"({"gpus": {"0": "mig"}})", "must be a list"},
      {R"({"gpus": [{"gpu": "0", "isolation": "mig", "mig": "elastic"}]})", "a list of profiles, or \"dynamic\""},
      {R"({"gpus": [{"gpu": "0", "isolation": "shared", "mig": "dynamic"}]})", "needs \"isolation\": \"mig\""},
      {R"({"gpus": [{"gpu": "0", "isolation": "mig", "mig": "dynamic", "drain": true}]})", "no geometry to drain for"},
  };
  for (const auto& [text, why] : bad) {
    Result<AgentConfig> config = load(text);
    ASSERT_FALSE(config.ok()) << text;
    EXPECT_NE(config.status().message().find(why), std::string::npos) << config.status().message();
  }
}

TEST(ChoosePlacementTest, AnInstanceGoesWhereItLeavesTheMostRoom) {
  const auto place = [](std::string_view profile, std::vector<mig::Placed> current) {
    return ChoosePlacement(H100(), *mig::FindProfileByName(H100(), profile), current);
  };
  // On an empty H100 a small instance keeps off slice 0, where 4g.40gb and 7g.80gb start.
  EXPECT_EQ(place("1g.10gb", {}), 6);
  EXPECT_EQ(place("1g.20gb", {}), 6);
  EXPECT_EQ(place("2g.20gb", {}), 4);
  EXPECT_EQ(place("3g.40gb", {}), 4);
  EXPECT_EQ(place("4g.40gb", {}), 0);
  EXPECT_EQ(place("7g.80gb", {}), 0);
  // Beside a 3g.40gb at 4, the second 3g.40gb can only go to 0, and a 1g.10gb to the top of 0-3.
  EXPECT_EQ(place("3g.40gb", {{IdOf("3g.40gb"), 4}}), 0);
  EXPECT_EQ(place("1g.10gb", {{IdOf("3g.40gb"), 4}}), 3);
  // No room, an overlap everywhere, a second media instance: nowhere.
  EXPECT_EQ(place("1g.10gb", {{IdOf("7g.80gb"), 0}}), std::nullopt);
  EXPECT_EQ(place("4g.40gb", {{IdOf("1g.10gb"), 6}, {IdOf("1g.10gb"), 2}}), std::nullopt);
  EXPECT_EQ(place("1g.10gb+me", {{IdOf("1g.10gb+me"), 6}}), std::nullopt);
  // Every placement it gives keeps the geometry valid, from any valid start.
  for (const mig::Profile& first : H100().profiles) {
    for (int start = 0; start < mig::kMemorySlices; ++start) {
      if (!first.CanStartAt(start)) continue;
      std::vector<mig::Placed> geometry = {{first.id, start}};
      for (const mig::Profile& next : H100().profiles) {
        if (std::optional<int> at = ChoosePlacement(H100(), next, geometry)) {
          std::vector<mig::Placed> grown = geometry;
          grown.push_back({next.id, *at});
          EXPECT_EQ(mig::CheckGeometry(H100(), grown), mig::GeometryError::kNone) << first.name << " then " << next.name;
        }
      }
    }
  }
}

// One shared GPU, one exclusive GPU and an H100 in MIG mode with a 3g.40gb and two 2g.20gb.
class IsolationRoutingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/fgpu-isolation-test-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir_);
    Boot();
  }
  void TearDown() override {
    service_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  void Boot() {
    service_.reset();
    store_.reset();
    Result<std::unique_ptr<Store>> store = Store::Open(dir_ + "/state.db");
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
    std::vector<GpuState> gpus;
    gpus.push_back(Whole(0, "GPU-shared", IsolationClass::kShared));
    gpus.push_back(Whole(1, "GPU-exclusive", IsolationClass::kExclusive));
    gpus.push_back(Whole(2, "GPU-mig", IsolationClass::kMig));
    gpus.push_back(Instance("MIG-three", "3g.40gb", 40192 * kMiB, 0));
    gpus.push_back(Instance("MIG-two-a", "2g.20gb", 19968 * kMiB, 4));
    gpus.push_back(Instance("MIG-two-b", "2g.20gb", 19968 * kMiB, 6));
    service_ = std::make_unique<SliceService>(store_.get(), gpus, dir_ + "/slices");
    ASSERT_TRUE(service_->Restore().ok());
  }

  static GpuState Whole(int index, const std::string& uuid, IsolationClass isolation) {
    GpuState gpu{index, uuid, "NVIDIA H100 80GB HBM3", 80 * kGiB, 0, 0};
    gpu.isolation = isolation;
    return gpu;
  }
  static GpuState Instance(const std::string& uuid, const std::string& profile, uint64_t memory, int start) {
    GpuState gpu{2, uuid, "NVIDIA H100 80GB HBM3 MIG " + profile, memory, 0, 0};
    gpu.isolation = IsolationClass::kMig;
    gpu.parent_uuid = "GPU-mig";
    gpu.mig_profile = profile;
    gpu.mig_start = start;
    return gpu;
  }

  static net::Peer Me() {
    net::Peer peer;
    peer.unix_socket = true;
    peer.uid = getuid();
    peer.pid = getpid();
    return peer;
  }

  static CreateRequest Ask(uint64_t memory, Isolation isolation = Isolation::kTrusted) {
    CreateRequest request;
    request.memory_bytes = memory;
    request.isolation = isolation;
    return request;
  }

  std::string dir_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<SliceService> service_;
};

TEST_F(IsolationRoutingTest, HardIsolationTakesTheSmallestFreeInstanceWhole) {
  Result<SliceRecord> first = service_->Create(Ask(10 * kGiB, Isolation::kHard), Me());
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->gpu_uuid.rfind("MIG-two-", 0), 0u) << first->gpu_uuid;
  EXPECT_EQ(first->memory_bytes, 19968 * kMiB) << "the whole instance's memory";
  EXPECT_EQ(first->compute_share, 100u);
  EXPECT_EQ(first->isolation, Isolation::kHard);
  Result<SliceRecord> second = service_->Create(Ask(10 * kGiB, Isolation::kHard), Me());
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(second->gpu_uuid.rfind("MIG-two-", 0), 0u);
  EXPECT_NE(second->gpu_uuid, first->gpu_uuid);
  Result<SliceRecord> third = service_->Create(Ask(10 * kGiB, Isolation::kHard), Me());
  ASSERT_TRUE(third.ok()) << third.status().message();
  EXPECT_EQ(third->gpu_uuid, "MIG-three");
  Result<SliceRecord> none = service_->Create(Ask(1 * kGiB, Isolation::kHard), Me());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no free MIG instance"), std::string::npos)
      << none.status().message();
  // A trusted slice finds no room in a hard slice's instance either: only the shared GPU is left.
  for (int i = 0; i < 3; ++i) {
    Result<SliceRecord> trusted = service_->Create(Ask(20 * kGiB), Me());
    ASSERT_TRUE(trusted.ok()) << trusted.status().message();
    EXPECT_EQ(trusted->gpu_uuid, "GPU-shared");
  }
}

TEST_F(IsolationRoutingTest, TrustedSlicesShareGpusAndInstancesButNeverTheExclusiveOrTheMigGpu) {
  std::set<std::string> used;
  for (int i = 0; i < 12; ++i) {
    Result<SliceRecord> slice = service_->Create(Ask(10 * kGiB), Me());
    if (!slice.ok()) break;
    used.insert(slice->gpu_uuid);
    EXPECT_EQ(slice->isolation, Isolation::kTrusted);
  }
  EXPECT_EQ(used.count("GPU-exclusive"), 0u);
  EXPECT_EQ(used.count("GPU-mig"), 0u);
  EXPECT_EQ(used.count("GPU-shared"), 1u);
  EXPECT_EQ(used.count("MIG-three"), 1u);
  // A hard request now finds every instance holding slices.
  EXPECT_FALSE(service_->Create(Ask(1 * kGiB, Isolation::kHard), Me()).ok());
}

TEST_F(IsolationRoutingTest, ExclusiveIsolationTakesAnExclusiveGpuWholeAndOnlyOnce) {
  Result<SliceRecord> whole = service_->Create(Ask(1 * kGiB, Isolation::kExclusive), Me());
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_EQ(whole->gpu_uuid, "GPU-exclusive");
  EXPECT_EQ(whole->memory_bytes, 80 * kGiB);
  EXPECT_EQ(whole->compute_share, 100u);
  Result<SliceRecord> again = service_->Create(Ask(1 * kGiB, Isolation::kExclusive), Me());
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("exclusive class"), std::string::npos) << again.status().message();
  // Its limits are the GPU's: no resize of memory or compute.
  ResizeRequest smaller;
  smaller.memory_bytes = 10 * kGiB;
  Result<SliceRecord> resized = service_->Resize(whole->id, smaller);
  ASSERT_FALSE(resized.ok());
  EXPECT_NE(resized.status().message().find("whole"), std::string::npos) << resized.status().message();
}

TEST_F(IsolationRoutingTest, NamingAGpuOfTheWrongClassSaysWhy) {
  CreateRequest on_mig_gpu = Ask(1 * kGiB);
  on_mig_gpu.gpu = "2";
  Result<SliceRecord> refused = service_->Create(on_mig_gpu, Me());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("is in MIG mode: name one of its instances"), std::string::npos)
      << refused.status().message();
  CreateRequest on_exclusive = Ask(1 * kGiB);
  on_exclusive.gpu = "GPU-exclusive";
  refused = service_->Create(on_exclusive, Me());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("ask for it with isolation exclusive"), std::string::npos);
  CreateRequest hard_on_shared = Ask(1 * kGiB, Isolation::kHard);
  hard_on_shared.gpu = "0";
  refused = service_->Create(hard_on_shared, Me());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("is not a MIG instance"), std::string::npos);
  CreateRequest in_instance = Ask(10 * kGiB);
  in_instance.gpu = "MIG-three";
  Result<SliceRecord> placed = service_->Create(in_instance, Me());
  ASSERT_TRUE(placed.ok()) << placed.status().message();
  EXPECT_EQ(placed->gpu_uuid, "MIG-three");
  CreateRequest hard_with_share = Ask(1 * kGiB, Isolation::kHard);
  hard_with_share.compute_share = 50;
  EXPECT_EQ(service_->Create(hard_with_share, Me()).status().code(), StatusCode::kInvalidArgument);
}

// A geometry change rebinds the GPU's instance slots: refused while a slice holds an instance
// that goes (nothing changes), then the new instance takes slices and serves the queue.
TEST_F(IsolationRoutingTest, NewInstancesAreBoundOnlyOnceTheOldOnesAreEmpty) {
  CreateRequest in_three = Ask(10 * kGiB);
  in_three.gpu = "MIG-three";
  Result<SliceRecord> held = service_->Create(in_three, Me());
  ASSERT_TRUE(held.ok()) << held.status().message();
  const std::vector<GpuState> seven = {Instance("MIG-seven", "7g.80gb", 81152 * kMiB, 0)};
  Status refused = service_->SetMigInstances("GPU-mig", seven);
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("the 3g.40gb instance at memory slice 0 holds slice " + held->id), std::string::npos)
      << refused.message();
  const auto instances = [&] {
    std::vector<std::string> uuids;
    for (const GpuRoom& room : service_->Rooms()) {
      if (room.gpu.parent_uuid == "GPU-mig") uuids.push_back(room.gpu.uuid);
    }
    return uuids;
  };
  EXPECT_EQ(instances(), (std::vector<std::string>{"MIG-three", "MIG-two-a", "MIG-two-b"})) << "nothing changed";
  // A hard request for 60 GiB is refused, even to wait: no instance of this geometry holds it.
  CreateRequest big = Ask(60 * kGiB, Isolation::kHard);
  big.wait = true;
  Result<QueueStatus> queued = service_->CreateOrQueue(big, Me());
  ASSERT_FALSE(queued.ok()) << "no instance of this machine can ever hold it";
  ASSERT_TRUE(service_->Delete(held->id).ok());
  ASSERT_TRUE(service_->SetMigInstances("GPU-mig", seven).ok());
  EXPECT_EQ(instances(), std::vector<std::string>{"MIG-seven"});
  Result<SliceRecord> whole = service_->Create(Ask(60 * kGiB, Isolation::kHard), Me());
  ASSERT_TRUE(whole.ok()) << whole.status().message();
  EXPECT_EQ(whole->gpu_uuid, "MIG-seven");
  EXPECT_EQ(whole->memory_bytes, 81152 * kMiB);
  // Back to three and two: refused while the 7g holds its slice; a slot per instance is enough.
  EXPECT_FALSE(service_->SetMigInstances("GPU-mig", {Instance("MIG-x", "1g.10gb", 9984 * kMiB, 0)}).ok());
  ASSERT_TRUE(service_->Delete(whole->id).ok());
  std::vector<GpuState> sevens;
  for (int start = 0; start < 7; ++start) {
    sevens.push_back(Instance("MIG-one-" + std::to_string(start), "1g.10gb", 9984 * kMiB, start));
  }
  ASSERT_TRUE(service_->SetMigInstances("GPU-mig", sevens).ok());
  EXPECT_EQ(instances().size(), 7u);
  for (int i = 0; i < 7; ++i) EXPECT_TRUE(service_->Create(Ask(5 * kGiB, Isolation::kHard), Me()).ok()) << i;
}

TEST_F(IsolationRoutingTest, ARestartKeepsEachSlicesIsolation) {
  Result<SliceRecord> hard = service_->Create(Ask(10 * kGiB, Isolation::kHard), Me());
  ASSERT_TRUE(hard.ok());
  Boot();
  Result<SliceRecord> restored = service_->Get(hard->id);
  ASSERT_TRUE(restored.ok());
  EXPECT_EQ(restored->isolation, Isolation::kHard);
  // Its instance is still taken whole: the next hard request gets the other 2g.20gb.
  Result<SliceRecord> next = service_->Create(Ask(10 * kGiB, Isolation::kHard), Me());
  ASSERT_TRUE(next.ok());
  EXPECT_NE(next->gpu_uuid, hard->gpu_uuid);
  EXPECT_EQ(next->gpu_uuid.rfind("MIG-two-", 0), 0u);
}

}  // namespace
}  // namespace fgpu::agent
