#include "k8s/dra/publisher.h"

#include <gtest/gtest.h>

#include <map>

#include "k8s/client/json_fields.h"
#include "k8s/dra/agent_test_support.h"

namespace fgpu::k8s {
namespace {

using nlohmann::json;
using FakeGpus = testing::FakeAgent;

// The API server's resourceslices: objects by name, a field selector on driver and node, and
// conflicts to inject.
class FakeStore : public SliceStore {
 public:
  Result<json> Get(const std::string& name) override {
    const auto found = objects.find(name);
    if (found == objects.end()) return Status::NotFound("not found");
    return found->second;
  }
  Result<json> Create(const json& created) override {
    const std::string name = created["metadata"]["name"];
    if (objects.contains(name)) return Status::Aborted("already exists");
    json& object = objects[name] = created;
    object["metadata"]["resourceVersion"] = std::to_string(++version);
    ++writes;
    return object;
  }
  Result<json> Update(const json& updated) override {
    const std::string name = updated["metadata"]["name"];
    const auto found = objects.find(name);
    if (found == objects.end()) return Status::NotFound("not found");
    if (conflicts > 0 && (conflict_on.empty() || conflict_on == name)) {
      --conflicts;
      found->second["metadata"]["resourceVersion"] = std::to_string(++version);
      return Status::Aborted("the object has been modified");
    }
    if (updated["metadata"]["resourceVersion"] != found->second["metadata"]["resourceVersion"]) {
      return Status::Aborted("the object has been modified");
    }
    found->second = updated;
    found->second["metadata"]["resourceVersion"] = std::to_string(++version);
    ++writes;
    return found->second;
  }
  Result<std::vector<json>> List(const std::string& driver, const std::string& node) override {
    ++lists;
    std::vector<json> items = odd_items;
    for (const auto& [name, object] : objects) {
      const json* spec = Member(object, "spec");
      if (spec != nullptr && StringMember(*spec, "driver") == driver && StringMember(*spec, "nodeName") == node) {
        items.push_back(object);
      }
    }
    return items;
  }
  Status Delete(const std::string& name) override {
    deletes += static_cast<int>(objects.erase(name));
    return Status::Ok();
  }

  std::map<std::string, json> objects;
  std::vector<json> odd_items;  // listed whatever the selector: what a peer may have sent
  int version = 0, writes = 0, lists = 0, deletes = 0, conflicts = 0;
  std::string conflict_on;  // the object whose updates conflict; empty: any
};

const std::string kSlice = "node-a-gpu.fgpu.io";
const std::string kCounters = "node-a-gpu.fgpu.io-counters-0";
const std::string kMig = "node-a-gpu.fgpu.io-mig-0";

PublishedGpu Gpu(int index) {
  PublishedGpu gpu;
  gpu.uuid = "GPU-" + std::to_string(index);
  gpu.index = index;
  gpu.memory_bytes = uint64_t{80} << 30;
  return gpu;
}

// A GPU whose MIG instances are made per claim: published as a counter set (one object) and its
// placements (another).
PublishedGpu DynamicMigGpu() {
  PublishedGpu gpu;
  gpu.uuid = "GPU-00000000-0000-0000-0000-0000000000a1";
  gpu.index = 1;
  gpu.product = "NVIDIA H100 80GB HBM3";
  gpu.memory_bytes = 85520809984;
  gpu.mig_capable = true;
  gpu.mig_dynamic = true;
  return gpu;
}

int64_t StoredDevices(const FakeStore& store) {
  int64_t count = 0;
  for (const auto& [name, object] : store.objects) {
    count += static_cast<int64_t>(object["spec"].value("devices", json::array()).size());
  }
  return count;
}

// Every object of node-a's pool carries `generation` and the pool's object count.
void ExpectOnePool(const FakeStore& store, int64_t generation, size_t count) {
  ASSERT_EQ(store.objects.size(), count);
  for (const auto& [name, object] : store.objects) {
    EXPECT_EQ(object["spec"]["pool"]["name"], "node-a") << name;
    EXPECT_EQ(object["spec"]["pool"]["generation"], generation) << name;
    EXPECT_EQ(object["spec"]["pool"]["resourceSliceCount"], count) << name;
  }
}

TEST(SlicePublisherTest, PublishesOnceAndAgainOnlyWhenTheAgentsViewChanges) {
  FakeGpus agent;
  FakeStore store;
  agent.gpus = {Gpu(0), Gpu(1)};
  SlicePublisher publisher("node-a", {}, &agent, &store);
  EXPECT_TRUE(*publisher.PublishOnce());
  EXPECT_EQ(store.objects.at(kSlice)["spec"]["pool"]["generation"], 1);
  EXPECT_EQ(store.objects.at(kSlice)["spec"]["devices"].size(), 2u);
  EXPECT_FALSE(*publisher.PublishOnce());
  EXPECT_EQ(store.writes, 1);

  agent.gpus[1].shareable = false;  // made exclusive on the agent
  EXPECT_TRUE(*publisher.PublishOnce());
  EXPECT_EQ(store.objects.at(kSlice)["spec"]["pool"]["generation"], 2);
  EXPECT_EQ(store.objects.at(kSlice)["spec"]["devices"].size(), 1u);
  agent.gpus[0].healthy = false;
  EXPECT_TRUE(*publisher.PublishOnce());
  EXPECT_EQ(store.objects.at(kSlice)["spec"]["pool"]["generation"], 3);
  EXPECT_TRUE(store.objects.at(kSlice)["spec"]["devices"].empty());
  EXPECT_EQ(publisher.Counters().generation, 3);
  EXPECT_EQ(publisher.Counters().devices, 0);
}

TEST(SlicePublisherTest, ARestartedPluginContinuesTheGenerationAndSkipsAnEqualObject) {
  FakeGpus agent;
  FakeStore store;
  agent.gpus = {Gpu(0)};
  SlicePublisher first("node-a", {}, &agent, &store);
  ASSERT_TRUE(*first.PublishOnce());
  SlicePublisher restarted("node-a", {}, &agent, &store);
  EXPECT_FALSE(*restarted.PublishOnce());
  EXPECT_EQ(store.writes, 1);
  agent.gpus.push_back(Gpu(1));
  EXPECT_TRUE(*restarted.PublishOnce());
  EXPECT_EQ(store.objects.at(kSlice)["spec"]["pool"]["generation"], 2);
}

TEST(SlicePublisherTest, AnObjectEditedOrDeletedByOthersIsPutBack) {
  FakeGpus agent;
  FakeStore store;
  agent.gpus = {Gpu(0)};
  SlicePublisher publisher("node-a", {}, &agent, &store);
  ASSERT_TRUE(*publisher.PublishOnce());
  store.objects.erase(kSlice);  // deleted by someone
  agent.gpus.push_back(Gpu(1));
  EXPECT_TRUE(*publisher.PublishOnce());
  EXPECT_EQ(store.objects.at(kSlice)["spec"]["devices"].size(), 2u);
  store.conflicts = 1;  // a writer between our read and write
  agent.gpus.pop_back();
  EXPECT_TRUE(*publisher.PublishOnce());
  EXPECT_EQ(store.objects.at(kSlice)["spec"]["devices"].size(), 1u);
}

TEST(SlicePublisherTest, AServerObjectOfAnyShapeIsReplacedNotThrownOn) {
  FakeGpus agent;
  FakeStore store;
  agent.gpus = {Gpu(0)};
  SlicePublisher publisher("node-a", {}, &agent, &store);
  ASSERT_TRUE(*publisher.PublishOnce());
  // Items the list should not have held at all: skipped, never deleted.
  store.odd_items = {json("text"), json(5), json{{"metadata", 5}}, json{{"metadata", {{"name", 7}}}, {"spec", "x"}}};
  // The object itself, still selected by driver and node, with any other spec.
  for (json odd : {json{{"pool", 5}, {"devices", "x"}}, json{{"pool", {{"generation", "7"}}}},
                   json{{"pool", {{"generation", 2.5}}}, {"devices", {1}}}}) {
    odd["driver"] = kDriverName;
    odd["nodeName"] = "node-a";
    store.objects.at(kSlice)["spec"] = odd;
    store.objects.at(kSlice)["metadata"]["resourceVersion"] = std::to_string(++store.version);
    agent.gpus.push_back(Gpu(static_cast<int>(agent.gpus.size())));  // a change, so it writes again
    Result<bool> written = publisher.PublishOnce();
    ASSERT_TRUE(written.ok()) << written.status().message();
    EXPECT_TRUE(*written);
    EXPECT_EQ(store.objects.at(kSlice)["spec"]["pool"]["generation"], 1) << odd.dump();
    EXPECT_EQ(store.objects.size(), 1u);
  }
  EXPECT_EQ(store.deletes, 0);
}

TEST(SlicePublisherTest, AnAgentThatIsDownLeavesThePublishedObjectAlone) {
  FakeGpus agent;
  FakeStore store;
  agent.gpus = {Gpu(0)};
  SlicePublisher publisher("node-a", {}, &agent, &store);
  ASSERT_TRUE(*publisher.PublishOnce());
  agent.down = true;
  EXPECT_FALSE(publisher.PublishOnce().ok());
  EXPECT_EQ(store.objects.at(kSlice)["spec"]["devices"].size(), 1u);
  EXPECT_EQ(publisher.Counters().errors, 1u);
}

TEST(SlicePublisherTest, APoolOfSeveralObjectsIsWrittenWithOneGeneration) {
  FakeGpus agent;
  FakeStore store;
  agent.gpus = {Gpu(0), DynamicMigGpu()};
  SlicePublisher publisher("node-a", {}, &agent, &store);
  ASSERT_TRUE(*publisher.PublishOnce());
  ExpectOnePool(store, 1, 3);
  EXPECT_TRUE(store.objects.contains(kCounters));
  EXPECT_TRUE(store.objects.contains(kMig));
  EXPECT_EQ(publisher.Counters().devices, StoredDevices(store));
  EXPECT_GT(publisher.Counters().devices, 1);
  EXPECT_EQ(publisher.Counters().publishes, 1u);
  EXPECT_FALSE(*publisher.PublishOnce());
  EXPECT_EQ(store.writes, 3);

  // A writer between the list and the last object's write, the first two written already: the
  // whole pool is listed and written again, over the generation reached.
  agent.gpus[0].healthy = false;
  store.conflicts = 1;
  store.conflict_on = kMig;
  ASSERT_TRUE(*publisher.PublishOnce());
  EXPECT_EQ(store.lists, 3);
  ExpectOnePool(store, 3, 3);
  EXPECT_TRUE(store.objects.at(kSlice)["spec"]["devices"].empty());
  EXPECT_EQ(publisher.Counters().generation, 3);
  EXPECT_EQ(publisher.Counters().publishes, 2u);
}

TEST(SlicePublisherTest, TheObjectsOfAGoneDynamicGpuAreDeleted) {
  FakeGpus agent;
  FakeStore store;
  agent.gpus = {Gpu(0), DynamicMigGpu()};
  SlicePublisher publisher("node-a", {}, &agent, &store);
  ASSERT_TRUE(*publisher.PublishOnce());
  ASSERT_EQ(store.objects.size(), 3u);
  agent.gpus.pop_back();
  ASSERT_TRUE(*publisher.PublishOnce());
  ExpectOnePool(store, 2, 1);
  EXPECT_EQ(store.objects.at(kSlice)["spec"]["devices"].size(), 1u);
  EXPECT_EQ(store.deletes, 2);
  EXPECT_EQ(publisher.Counters().devices, 1);
}

TEST(SlicePublisherTest, AStaleObjectOfThisNodeIsDeletedAndAnotherNodesIsLeftAlone) {
  FakeGpus agent;
  FakeStore store;
  agent.gpus = {Gpu(0)};
  SlicePublisher publisher("node-a", {}, &agent, &store);
  ASSERT_TRUE(*publisher.PublishOnce());
  json stale = store.objects.at(kSlice);  // as an older plugin named it
  stale["metadata"]["name"] = "node-a-gpu.fgpu.io-old";
  store.objects["node-a-gpu.fgpu.io-old"] = stale;
  json other = BuildResourceSlice("node-b", 4, {Gpu(0)}, {});
  other["metadata"]["resourceVersion"] = "other";
  store.objects[other["metadata"]["name"]] = other;

  agent.gpus.push_back(Gpu(1));
  ASSERT_TRUE(*publisher.PublishOnce());
  EXPECT_FALSE(store.objects.contains("node-a-gpu.fgpu.io-old"));
  EXPECT_EQ(store.objects.at(kSlice)["spec"]["pool"]["generation"], 2);
  EXPECT_EQ(store.objects.at(kSlice)["spec"]["pool"]["resourceSliceCount"], 1);
  EXPECT_EQ(store.objects.at("node-b-gpu.fgpu.io"), other);
  EXPECT_EQ(store.deletes, 1);
}

TEST(SlicePublisherTest, ARestartedPluginWritesNothingForAnEqualPool) {
  FakeGpus agent;
  FakeStore store;
  agent.gpus = {Gpu(0), DynamicMigGpu()};
  SlicePublisher first("node-a", {}, &agent, &store);
  ASSERT_TRUE(*first.PublishOnce());
  const std::map<std::string, json> published = store.objects;
  SlicePublisher restarted("node-a", {}, &agent, &store);
  EXPECT_FALSE(*restarted.PublishOnce());
  EXPECT_EQ(store.objects, published);
  EXPECT_EQ(store.writes, 3);
  EXPECT_EQ(store.deletes, 0);
  EXPECT_EQ(restarted.Counters().generation, 1);
  EXPECT_EQ(restarted.Counters().publishes, 0u);
  EXPECT_EQ(restarted.Counters().devices, first.Counters().devices);
}

}  // namespace
}  // namespace fgpu::k8s
