// fgpu status's tables, from the agent's JSON.
#include "cli/agent_status.h"

#include <gtest/gtest.h>

namespace fgpu::cli {
namespace {

using nlohmann::json;

TEST(AgentStatusTest, ShowsGpusAndSlicesWithUsage) {
  const json gpus = json::parse(R"([{"index":0,"name":"H100","uuid":"GPU-1234567890ab","memory_total":85899345920,
      "memory_reserved":10737418240,"compute_reserved":30,"slices":1}])");
  const json slices = json::parse(R"([{"id":"s1","gpu":"GPU-1234567890ab","tenant":"team-a","tier":"latency",
      "memory_bytes":10737418240,"memory_used_bytes":1073741824,"compute":30,"compute_mode":"cap","processes":2}])");
  const std::string text = RenderAgentStatus(gpus, slices);
  EXPECT_NE(text.find("80 GiB"), std::string::npos) << text;
  EXPECT_NE(text.find("30% reserved"), std::string::npos) << text;
  EXPECT_NE(text.find("s1"), std::string::npos);
  EXPECT_NE(text.find("1 GiB / 10 GiB"), std::string::npos) << text;
  EXPECT_NE(text.find("30% cap"), std::string::npos);
  EXPECT_NE(text.find("latency"), std::string::npos);
  EXPECT_EQ(text.find("ACHIEVED"), std::string::npos);
  const std::map<std::string, double> achieved = {{"s1", 29.6}};
  const std::string top = RenderAgentStatus(gpus, slices, &achieved);
  EXPECT_NE(top.find("ACHIEVED"), std::string::npos);
  EXPECT_NE(top.find("30%"), std::string::npos);
}

TEST(AgentStatusTest, StarvedAndThrottledSlicesAreMarked) {
  const json slices = json::parse(R"([
      {"id":"s1","tenant":"a","memory_bytes":1073741824,"compute":30,"compute_throttled_seconds":12.34,"starved":true},
      {"id":"s2","tenant":"b","memory_bytes":1073741824,"compute":20,"compute_throttled_seconds":0.0,"starved":false}])");
  const std::string text = RenderAgentStatus(json::array(), slices);
  EXPECT_NE(text.find("THROTTLED"), std::string::npos) << text;
  EXPECT_NE(text.find("12.3s"), std::string::npos) << text;
  EXPECT_NE(text.find("STARVED"), std::string::npos) << text;
  EXPECT_NE(text.find("STARVED: s1 waited in the compute gate"), std::string::npos) << text;
  EXPECT_EQ(text.find("s2 waited"), std::string::npos) << text;
}

TEST(AgentStatusTest, AnOlderAgentWithoutTheFieldsGetsNeitherColumn) {
  const json slices = json::parse(R"([{"id":"s1","tenant":"a","memory_bytes":1073741824,"compute":30}])");
  const std::string text = RenderAgentStatus(json::array(), slices);
  EXPECT_EQ(text.find("THROTTLED"), std::string::npos) << text;
  EXPECT_EQ(text.find("STARVED"), std::string::npos) << text;
  EXPECT_EQ(text.find("NOTE"), std::string::npos) << text;
  EXPECT_NE(text.find("s1"), std::string::npos) << text;
}

TEST(AgentStatusTest, AKubernetesSliceShowsItsPodAndClaim) {
  const json slices = json::parse(R"([
      {"id":"s1","gpu":"GPU-a","tenant":"t","tier":"standard","memory_bytes":1073741824,"compute":10,
       "compute_mode":"share","namespace":"ml","pod":"trainer-0","claim":"gpu"},
      {"id":"s2","gpu":"GPU-a","tenant":"t","tier":"batch","memory_bytes":1073741824,"compute":10,
       "compute_mode":"share","namespace":"","pod":"","claim":""}])");
  const std::string table = RenderSliceTable(slices);
  EXPECT_NE(table.find("POD"), std::string::npos) << table;
  EXPECT_NE(table.find("ml/trainer-0 (gpu)"), std::string::npos) << table;
  EXPECT_EQ(RenderSliceTable(json::array({slices[1]})).find("POD"), std::string::npos) << "no pod, no column";
}

TEST(AgentStatusTest, AnUnreadableLedgerIsNoted) {
  const json slices = json::parse(R"([{"id":"s1","ledger_readable":false}])");
  EXPECT_NE(RenderSliceTable(slices).find("ledger unreadable"), std::string::npos);
}

TEST(AgentStatusTest, TopIsTimestamped) {
  const std::string heading = TopHeading(1764000000, 0.5);
  EXPECT_EQ(heading.rfind("fgpu top  20", 0), 0u) << heading;
  EXPECT_NE(heading.find("(every 0.5 s"), std::string::npos) << heading;
}

TEST(AgentStatusTest, SliceDetailsOneFieldALine) {
  const json slice = json::parse(R"({"id":"s3","memory_bytes":1073741824,"tier":"batch",
      "env":{"FGPU_SLICE":"/var/lib/fgpu/slices/s3"}})");
  const std::string text = RenderSliceDetails(slice);
  EXPECT_NE(text.find("id: s3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("memory_bytes: 1 GiB (1073741824)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("env.FGPU_SLICE: /var/lib/fgpu/slices/s3\n"), std::string::npos) << text;
}

TEST(AgentStatusTest, NoSlices) {
  EXPECT_NE(RenderAgentStatus(json::array(), json::array()).find("no slices"), std::string::npos);
}

TEST(AgentStatusTest, FreeRoomPerGpuForARefusal) {
  const json gpus = json::parse(R"([
      {"index":0,"uuid":"GPU-a","memory_total":4294967296,"memory_reserved":3221225472,"compute_reserved":70},
      {"index":1,"uuid":"GPU-b","memory_total":4294967296,"memory_reserved":0,"compute_reserved":0,"exclusive":true},
      {"index":2,"uuid":"GPU-c","memory_total":4294967296,"memory_reserved":0,"compute_reserved":0,"fenced":"min_free"}])");
  EXPECT_EQ(DescribeFreeRoom(gpus),
            "GPU 0: 1 GiB and 30 % compute free; GPU 1: exclusive; GPU 2: takes no new slices for now (min_free)");
  EXPECT_EQ(DescribeFreeRoom(json::array()), "no GPU");
}

TEST(AgentStatusTest, LargerThanEveryGpuEvenEmpty) {
  const json gpus = json::parse(R"([{"index":0,"uuid":"GPU-a","memory_total":4294967296},
                                    {"index":1,"uuid":"GPU-b","memory_total":8589934592}])");
  EXPECT_FALSE(LargerThanEveryGpu(gpus, 6ull << 30, ""));
  EXPECT_TRUE(LargerThanEveryGpu(gpus, 9ull << 30, ""));
  EXPECT_TRUE(LargerThanEveryGpu(gpus, 6ull << 30, "0"));
  EXPECT_TRUE(LargerThanEveryGpu(gpus, 6ull << 30, "GPU-a"));
  EXPECT_FALSE(LargerThanEveryGpu(gpus, 6ull << 30, "GPU-b"));
}

}  // namespace
}  // namespace fgpu::cli
