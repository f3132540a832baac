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

TEST(AgentStatusTest, NoSlices) {
  EXPECT_NE(RenderAgentStatus(json::array(), json::array()).find("no slices"), std::string::npos);
}

}  // namespace
}  // namespace fgpu::cli
