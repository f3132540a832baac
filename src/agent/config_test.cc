// The agent's configuration file: every key known, every value checked, defaults kept.
#include "agent/config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

#include "slice/node_config.h"

namespace fgpu::agent {
namespace {

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override { path_ = "/tmp/fgpu-config-test-" + std::to_string(getpid()) + ".json"; }
  void TearDown() override { unlink(path_.c_str()); }
  Result<AgentConfig> Load(const std::string& text) {
    std::ofstream(path_) << text;
    return LoadConfig(path_);
  }
  std::string path_;
};

TEST_F(ConfigTest, DefaultsWithoutAFile) {
  Result<AgentConfig> config = LoadConfig("");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->access.defaults.tiers.count(slice::Tier::kLatency), 0u) << "the latency tier is a privilege";
  EXPECT_TRUE(config->access.token.empty());
  EXPECT_GT(config->usage_retention_ms, 0);
}

TEST_F(ConfigTest, AccessRulesInheritTheDefault) {
  Result<AgentConfig> config = Load(R"({
    "access": {
      "users": {"alice": {"tiers": ["batch", "standard", "latency"]}},
      "default": {"max_memory": "20GiB", "max_compute": 50, "gpus": ["0"], "tenants": ["*"], "max_slices": 4},
      "admin_group": "fgpu-admin",
      "groups": {"ml": {"max_memory": "40GiB"}}
    },
    "stop_loss": {"bypass": "alert", "grace_s": 2},
    "usage_retention_days": 30
  })");
  ASSERT_TRUE(config.ok()) << config.status().message();
  const AccessPolicy& access = config->access;
  EXPECT_EQ(access.admin_group, "fgpu-admin");
  EXPECT_EQ(access.defaults.max_memory, uint64_t{20} << 30);
  const AccessRule& alice = access.users.at("alice");
  EXPECT_EQ(alice.tiers.count(slice::Tier::kLatency), 1u);
  EXPECT_EQ(alice.max_memory, uint64_t{20} << 30) << "inherited whatever the key order";
  EXPECT_EQ(alice.max_slices, 4);
  EXPECT_EQ(access.groups.at("ml").max_memory, uint64_t{40} << 30);
  EXPECT_EQ(access.groups.at("ml").max_compute, 50u);
  EXPECT_EQ(config->stop_loss.bypass, StopLossPolicy::Bypass::kAlert);
  EXPECT_EQ(config->usage_retention_ms, int64_t{30} * 24 * 3600 * 1000);
}

TEST_F(ConfigTest, AMisspelledOrOutOfRangeKeyIsRefusedByName) {
  const struct {
    const char* text;
    const char* names;
  } cases[] = {
      {R"({"acess": {}})", "acess"},
      {R"({"access": {"default": {"max_memroy": "1GiB"}}})", "max_memroy"},
      {R"({"access": {"users": {"bob": {"tiers": ["gold"]}}}})", "users.bob.tiers"},
      {R"({"access": {"default": {"max_compute": 0}}})", "max_compute"},
      {R"({"access": {"default": {"max_memory": "lots"}}})", "max_memory"},
      {R"({"access": {"groups": []}})", "groups"},
      {R"({"stop_loss": {"starved_below": 2}})", "starved_below"},
      {R"({"usage_retention_days": -1})", "usage_retention_days"},
      {R"([1, 2])", "not a JSON object"},
  };
  for (const auto& c : cases) {
    Result<AgentConfig> config = Load(c.text);
    ASSERT_FALSE(config.ok()) << c.text;
    EXPECT_NE(config.status().message().find(c.names), std::string::npos) << config.status().message();
  }
}

// A value of the wrong type or out of range: the message names the whole key path and quotes
// the value as written, once (a nested key is not named twice).
TEST_F(ConfigTest, ABadValueIsNamedByItsKeyPathAndQuoted) {
  const struct {
    const char* text;
    const char* message;
  } cases[] = {
      {R"({"stop_loss": {"grace_s": "5"}})", ".stop_loss.grace_s: a number of seconds >= 0, not \"5\""},
      {R"({"stop_loss": {"bypass": "shrug"}})", ".stop_loss.bypass: \"evict\" or \"alert\", not \"shrug\""},
      {R"({"stop_loss": {"starvation": "kill"}})", ".stop_loss.starvation: \"report\" or \"evict\", not \"kill\""},
      {R"({"stop_loss": {"overuse_checks": 1.5}})", ".stop_loss.overuse_checks: an integer 1..3600, not 1.5"},
      {R"({"access": {"default": {"max_compute": 101}}})", ".access.default.max_compute: an integer percent 1..100, not 101"},
      {R"({"access": {"users": {"bob": {"max_slices": -2}}}})", ".access.users.bob.max_slices: an integer >= 0, not -2"},
      {R"({"access": {"groups": []}})", ".access.groups must be an object of name: rule, not []"},
      {R"({"stop_loss": 7})", ".stop_loss must be an object, not 7"},
      {R"({"log_level": "loud"})", ".log_level: debug, info, warn or error, not \"loud\""},
  };
  for (const auto& c : cases) {
    Result<AgentConfig> config = Load(c.text);
    ASSERT_FALSE(config.ok()) << c.text;
    EXPECT_EQ(config.status().message(), path_ + c.message) << c.text;
  }
}

TEST_F(ConfigTest, StarvationIsWatchedByDefaultAndOnlyReported) {
  Result<AgentConfig> config = LoadConfig("");
  ASSERT_TRUE(config.ok());
  EXPECT_GT(config->stop_loss.starved_below, 0) << "on by default";
  EXPECT_EQ(config->stop_loss.starvation, StopLossPolicy::StarvationAction::kReport) << "reported, nobody evicted";
  EXPECT_EQ(config->log_level, LogLevel::kInfo);
  config = Load(R"({"stop_loss": {"starvation": "evict", "starved_below": 0.25}, "log_level": "debug"})");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->stop_loss.starvation, StopLossPolicy::StarvationAction::kEvict);
  EXPECT_DOUBLE_EQ(config->stop_loss.starved_below, 0.25);
  EXPECT_EQ(config->log_level, LogLevel::kDebug);
}

TEST_F(ConfigTest, TheTokenFileMustBePrivate) {
  const std::string token = "/tmp/fgpu-token-test-" + std::to_string(getpid());
  std::ofstream(token) << "0123456789abcdef-token\n";
  chmod(token.c_str(), 0644);
  EXPECT_FALSE(LoadToken(token).ok()) << "readable by others";
  chmod(token.c_str(), 0600);
  Result<std::string> loaded = LoadToken(token);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(*loaded, "0123456789abcdef-token");
  std::ofstream(token) << "short\n";
  EXPECT_FALSE(LoadToken(token).ok());
  unlink(token.c_str());
  EXPECT_EQ(LoadToken(token).status().code(), StatusCode::kNotFound);
}

// What deploy/ ships is what an admin copies: it must load as it is.
TEST(DeployedConfigTest, TheExamplesLoad) {
  Result<AgentConfig> config = LoadConfig(std::string(FGPU_DEPLOY_DIR) + "/agent.json");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->access.admin_group, "fgpu-admin");
  EXPECT_EQ(config->access.groups.at("inference").tiers.count(slice::Tier::kLatency), 1u);
  std::ifstream file(std::string(FGPU_DEPLOY_DIR) + "/node.conf");
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  Result<slice::NodeConfig> node = slice::ParseNodeConfig(text, "deploy/node.conf");
  ASSERT_TRUE(node.ok()) << node.status().message();
  EXPECT_FALSE(node->allow_pass_through);
  EXPECT_FALSE(node->board_socket.empty());
}

}  // namespace
}  // namespace fgpu::agent
