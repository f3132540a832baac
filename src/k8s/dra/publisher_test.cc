#include "k8s/dra/publisher.h"

#include <gtest/gtest.h>

#include "k8s/dra/agent_test_support.h"

namespace fgpu::k8s {
namespace {

using nlohmann::json;
using FakeGpus = testing::FakeAgent;


class FakeStore : public SliceStore {
 public:
  Result<json> Get(const std::string& name) override {
    ++gets;
    if (object.is_null() || object["metadata"]["name"] != name) return Status::NotFound("not found");
    return object;
  }
  Result<json> Create(const json& created) override {
    if (!object.is_null()) return Status::Aborted("already exists");
    object = created;
    object["metadata"]["resourceVersion"] = std::to_string(++version);
    ++writes;
    return object;
  }
  Result<json> Update(const json& updated) override {
    if (conflicts > 0) {
      --conflicts;
      object["metadata"]["resourceVersion"] = std::to_string(++version);
      return Status::Aborted("the object has been modified");
    }
    if (updated["metadata"]["resourceVersion"] != object["metadata"]["resourceVersion"]) {
      return Status::Aborted("the object has been modified");
    }
    object = updated;
    object["metadata"]["resourceVersion"] = std::to_string(++version);
    ++writes;
    return object;
  }
  json object;
  int version = 0, writes = 0, gets = 0, conflicts = 0;
};

PublishedGpu Gpu(int index) {
  PublishedGpu gpu;
  gpu.uuid = "GPU-" + std::to_string(index);
  gpu.index = index;
  gpu.memory_bytes = uint64_t{80} << 30;
  return gpu;
}

TEST(SlicePublisherTest, PublishesOnceAndAgainOnlyWhenTheAgentsViewChanges) {
  FakeGpus agent;
  FakeStore store;
  agent.gpus = {Gpu(0), Gpu(1)};
  SlicePublisher publisher("node-a", {}, &agent, &store);
  EXPECT_TRUE(*publisher.PublishOnce());
  EXPECT_EQ(store.object["spec"]["pool"]["generation"], 1);
  EXPECT_EQ(store.object["spec"]["devices"].size(), 2u);
  EXPECT_FALSE(*publisher.PublishOnce());
  EXPECT_EQ(store.writes, 1);

  agent.gpus[1].shareable = false;  // made exclusive on the agent
  EXPECT_TRUE(*publisher.PublishOnce());
  EXPECT_EQ(store.object["spec"]["pool"]["generation"], 2);
  EXPECT_EQ(store.object["spec"]["devices"].size(), 1u);
  agent.gpus[0].healthy = false;
  EXPECT_TRUE(*publisher.PublishOnce());
  EXPECT_EQ(store.object["spec"]["pool"]["generation"], 3);
  EXPECT_TRUE(store.object["spec"]["devices"].empty());
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
  EXPECT_EQ(store.object["spec"]["pool"]["generation"], 2);
}

TEST(SlicePublisherTest, AnObjectEditedOrDeletedByOthersIsPutBack) {
  FakeGpus agent;
  FakeStore store;
  agent.gpus = {Gpu(0)};
  SlicePublisher publisher("node-a", {}, &agent, &store);
  ASSERT_TRUE(*publisher.PublishOnce());
  store.object = json();  // deleted by someone
  agent.gpus.push_back(Gpu(1));
  EXPECT_TRUE(*publisher.PublishOnce());
  EXPECT_EQ(store.object["spec"]["devices"].size(), 2u);
  store.conflicts = 1;  // a writer between our read and write
  agent.gpus.pop_back();
  EXPECT_TRUE(*publisher.PublishOnce());
  EXPECT_EQ(store.object["spec"]["devices"].size(), 1u);
}

TEST(SlicePublisherTest, AServerObjectOfAnyShapeIsReplacedNotThrownOn) {
  FakeGpus agent;
  FakeStore store;
  agent.gpus = {Gpu(0)};
  SlicePublisher publisher("node-a", {}, &agent, &store);
  ASSERT_TRUE(*publisher.PublishOnce());
  for (const json& odd : {json("text"), json{{"pool", 5}, {"devices", "x"}}, json{{"pool", {{"generation", "7"}}}}}) {
    store.object["spec"] = odd;
    store.object["metadata"]["resourceVersion"] = std::to_string(++store.version);
    agent.gpus.push_back(Gpu(static_cast<int>(agent.gpus.size())));  // a change, so it writes again
    Result<bool> written = publisher.PublishOnce();
    ASSERT_TRUE(written.ok()) << written.status().message();
    EXPECT_TRUE(*written);
    EXPECT_EQ(store.object["spec"]["pool"]["generation"], 1) << odd.dump();
  }
}

TEST(SlicePublisherTest, AnAgentThatIsDownLeavesThePublishedObjectAlone) {
  FakeGpus agent;
  FakeStore store;
  agent.gpus = {Gpu(0)};
  SlicePublisher publisher("node-a", {}, &agent, &store);
  ASSERT_TRUE(*publisher.PublishOnce());
  agent.down = true;
  EXPECT_FALSE(publisher.PublishOnce().ok());
  EXPECT_EQ(store.object["spec"]["devices"].size(), 1u);
  EXPECT_EQ(publisher.Counters().errors, 1u);
}

}  // namespace
}  // namespace fgpu::k8s
