#include "slurm/slice_request.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace fgpu::slurm {
namespace {

using nlohmann::json;

TEST(SliceRequest, StepLabelsAsSacctWritesThem) {
  EXPECT_EQ(StepLabel(1234, 0), "1234.0");
  EXPECT_EQ(StepLabel(1234, 17), "1234.17");
  EXPECT_EQ(StepLabel(1234, 0xFFFFFFFB), "1234.batch");
  EXPECT_EQ(StepLabel(7, kExternStep), "7.extern");
  EXPECT_EQ(StepLabel(7, kInteractiveStep), "7.interactive");
}

TEST(SliceRequest, TenantIsTheAccountElseTheUser) {
  EXPECT_EQ(TenantOf({.job_id = 1, .step_id = 0, .user = "alice", .account = "physics"}), "physics");
  EXPECT_EQ(TenantOf({.job_id = 1, .step_id = 0, .user = "alice", .account = ""}), "alice");
}

TEST(SliceRequest, BodyCarriesTheSliceAndTheJob) {
  SliceOptions options;
  ASSERT_TRUE(SetMemory("30GiB", options).ok());
  const json body = json::parse(
      BuildSliceRequest(options, "1", {.job_id = 42, .step_id = kBatchStep, .uid = 1001, .user = "alice", .account = "physics"}));
  EXPECT_EQ(body, json::parse(R"({"memory": 32212254720, "gpu": "1", "tenant": "physics", "release_on_exit": true,
                                 "job": "42.batch", "user": "alice", "account": "physics", "owner": 1001})"));
}

TEST(SliceRequest, ComputeAndTierOnlyWhenAsked) {
  SliceOptions options;
  ASSERT_TRUE(SetMemory("1GiB", options).ok());
  ASSERT_TRUE(SetCompute("25", options).ok());
  ASSERT_TRUE(SetTier("latency", options).ok());
  const json body = json::parse(BuildSliceRequest(options, "0", {.job_id = 5, .step_id = 3, .uid = 1002, .user = "bob", .account = ""}));
  EXPECT_EQ(body["compute"], 25);
  EXPECT_EQ(body["tier"], "latency");
  EXPECT_EQ(body["tenant"], "bob");
  EXPECT_FALSE(body.contains("account"));  // the agent wants an empty name left out
  EXPECT_EQ(body["job"], "5.3");
}

TEST(SliceRequest, NamesAreMadeWhatTheAgentAccepts) {
  EXPECT_EQ(AgentName("alice", true), "alice");
  EXPECT_EQ(AgentName("al.ice-2_x", false), "al.ice-2_x");
  EXPECT_EQ(AgentName("DOMAIN\\alice", true), "DOMAIN_alice");
  EXPECT_EQ(AgentName("alice@lab+x", true), "alice@lab+x");
  EXPECT_EQ(AgentName("alice@lab+x", false), "alice_lab_x");
  EXPECT_EQ(AgentName(std::string(70, 'a'), true), std::string(63, 'a'));
  EXPECT_EQ(AgentName("", true), "");
  EXPECT_EQ(TenantOf({.job_id = 1, .step_id = 0, .user = "bob", .account = "phys+chem"}), "phys_chem");
}

TEST(SliceRequest, OddBytesInANameDoNotThrow) {
  SliceOptions options;
  ASSERT_TRUE(SetMemory("1GiB", options).ok());
  const std::string body = BuildSliceRequest(options, "0", {.job_id = 1, .step_id = 0, .uid = 1003, .user = "a\xff\xfe b", .account = ""});
  EXPECT_TRUE(json::accept(body));
  EXPECT_EQ(json::parse(body)["user"], "a___b");
}

}  // namespace
}  // namespace fgpu::slurm
