#include "slurm/plugin_config.h"

#include <gtest/gtest.h>

namespace fgpu::slurm {
namespace {

TEST(PluginConfig, DefaultsWithoutArguments) {
  Result<PluginConfig> config = ParsePluginArgs({});
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->agent_pattern, "/var/lib/fgpu/agent.sock");
  EXPECT_EQ(config->timeout_ms, 3000);
  EXPECT_EQ(*AgentSocket(*config, ""), "/var/lib/fgpu/agent.sock");
}

TEST(PluginConfig, AgentPathExpandsTheNodeName) {
  Result<PluginConfig> config = ParsePluginArgs({"agent=/run/fgpu/%n/agent.sock", "timeout_ms=1500"});
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->timeout_ms, 1500);
  EXPECT_EQ(*AgentSocket(*config, "node2"), "/run/fgpu/node2/agent.sock");
  EXPECT_FALSE(AgentSocket(*config, "").ok());
  EXPECT_EQ(*ExpandNodeName("/x/100%%/%n-%n", "n1"), "/x/100%/n1-n1");
}

TEST(PluginConfig, BadArgumentsAreNamed) {
  const struct {
    std::vector<std::string> args;
    const char* says;
  } cases[] = {
      {{"agent="}, "absolute path"},
      {{"agent=relative.sock"}, "absolute path"},
      {{"agent=/x/%h.sock"}, "only %n"},
      {{"agent=/x/%"}, "only %n"},
      {{"timeout_ms=50"}, "from 100 to 60000"},
      {{"timeout_ms=60001"}, "from 100 to 60000"},
      {{"timeout_ms=3s"}, "timeout_ms='3s'"},
      {{"timeout_ms"}, "timeout_ms=''"},
      {{"socket=/x"}, "unknown argument 'socket=/x'"},
      {{"agent=/ok", "verbose"}, "unknown argument 'verbose'"},
  };
  for (const auto& c : cases) {
    Result<PluginConfig> config = ParsePluginArgs(c.args);
    ASSERT_FALSE(config.ok()) << c.args.front();
    EXPECT_NE(config.status().message().find(c.says), std::string::npos) << config.status().message();
  }
}

}  // namespace
}  // namespace fgpu::slurm

namespace fgpu::slurm {
namespace {

TEST(PluginConfig, AStepWithShardsGetsTheDefaultSliceOrARefusal) {
  Result<PluginConfig> refuse = ParsePluginArgs({});
  ASSERT_TRUE(refuse.ok());
  const Result<SliceOptions> refused = ShardDefault(*refuse, 2);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("2 shard(s)"), std::string::npos) << refused.status().message();
  EXPECT_NE(refused.status().message().find("--gpu-memory"), std::string::npos);
  Result<PluginConfig> sized = ParsePluginArgs({"shards=10GiB"});
  ASSERT_TRUE(sized.ok()) << sized.status().message();
  const Result<SliceOptions> options = ShardDefault(*sized, 3);
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(*options->memory_bytes, uint64_t{30} << 30);
  EXPECT_TRUE(ParsePluginArgs({"shards=refuse"}).ok());
  for (const char* bad : {"shards=", "shards=0", "shards=lots", "shards=off"}) {
    EXPECT_FALSE(ParsePluginArgs({bad}).ok()) << bad;
  }
}

}  // namespace
}  // namespace fgpu::slurm
