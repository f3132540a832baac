#include "slurm/agent_reply.h"

#include <gtest/gtest.h>

namespace fgpu::slurm {
namespace {

TEST(AgentReply, CreatedSliceGivesItsIdGpuAndEnv) {
  Result<GrantedSlice> slice = ParseCreateReply(201, R"({"id":"s7","gpu":"GPU-abc","memory_bytes":1,
      "env":{"FGPU_SLICE":"/var/lib/fgpu/slices/s7","CUDA_VISIBLE_DEVICES":"GPU-abc","LD_PRELOAD":"/usr/lib/fgpu/libfgpu.so"}})");
  ASSERT_TRUE(slice.ok()) << slice.status().message();
  EXPECT_EQ(slice->id, "s7");
  EXPECT_EQ(slice->gpu, "GPU-abc");
  ASSERT_EQ(slice->env.size(), 3u);
  EXPECT_EQ(slice->env[0].first, "CUDA_VISIBLE_DEVICES");  // nlohmann orders keys
}

TEST(AgentReply, CreatedWithoutEnvIsAnAgentTooOld) {
  Result<GrantedSlice> slice = ParseCreateReply(201, R"({"id":"s7","gpu":"GPU-abc"})");
  ASSERT_FALSE(slice.ok());
  EXPECT_EQ(slice.status().code(), StatusCode::kInternal);
  EXPECT_NE(slice.status().message().find("no \"env\""), std::string::npos);
  EXPECT_FALSE(ParseCreateReply(201, R"({"id":"s7","env":{"A":1}})").ok());
  EXPECT_FALSE(ParseCreateReply(201, "not json").ok());
  EXPECT_FALSE(ParseCreateReply(201, R"({"env":{"A":"b"}})").ok());
  EXPECT_EQ(SliceIdOf(R"({"id":"s7","gpu":"GPU-abc"})"), "s7");
  EXPECT_EQ(SliceIdOf("[]"), "");
}

TEST(AgentReply, RefusalsCarryTheAgentsWords) {
  Result<GrantedSlice> full = ParseCreateReply(409, R"({"error":"no GPU has room for 100 GiB"})");
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(full.status().message(), "no GPU has room for 100 GiB");
  Result<GrantedSlice> unknown = ParseCreateReply(404, R"({"error":"unknown GPU 7"})");
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  Result<GrantedSlice> bad = ParseCreateReply(400, R"({"error":"unknown field \"job\""})");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "unknown field \"job\"");
  EXPECT_EQ(ParseCreateReply(403, R"({"error":"not yours"})").status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(ParseCreateReply(500, "").status().message(), "HTTP status 500 (HTTP 500)");
  EXPECT_EQ(ParseCreateReply(503, "busy").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(ParseCreateReply(503, "busy").status().message(), "busy");
}

}  // namespace
}  // namespace fgpu::slurm
