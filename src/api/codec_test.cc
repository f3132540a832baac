// The codec: every type round-trips; requests are strict, with the field named; replies
// tolerate what they do not know.
#include "api/codec.h"

#include <gtest/gtest.h>

namespace fgpu::api {
namespace {

using nlohmann::json;

template <typename T>
T RoundTrip(const T& value) {
  Result<T> parsed = Parse<T>(json::parse(ToJson(value).dump()));
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  return parsed.ok() ? *parsed : T{};
}

std::string ErrorOf(const std::string& text) {
  Result<SliceRequest> parsed = Parse<SliceRequest>(json::parse(text));
  return parsed.ok() ? "(ok)" : parsed.status().message();
}

TEST(CodecTest, ASliceRequestRoundTripsWithEveryField) {
  SliceRequest request;
  request.memory_bytes = 10ull << 30;
  request.compute = 30;
  request.compute_mode = "cap";
  request.tier = "latency";
  request.tenant = "team-a";
  request.gpu = "GPU-1";
  request.release_on_exit = true;
  request.wait = true;
  request.labels = {"1234.0", "alice", "physics", "ml-team", "trainer-0", "claim-gpu"};
  request.owner = uint32_t{1001};
  request.idempotency_key = "ns/claim:uid-1.2_3";
  request.isolation = "hard";
  EXPECT_EQ(RoundTrip(request), request);
  request.mig_profile = "1g.10gb+me";
  request.mig_start = 6;
  EXPECT_EQ(RoundTrip(request), request);
  request.owner = std::string("alice");
  EXPECT_EQ(RoundTrip(request), request);
  SliceRequest bare;
  bare.memory_bytes = 1;
  EXPECT_EQ(ToJson(bare), (json{{"memory", 1}})) << "unset fields are left out, as the agent asks";
  EXPECT_EQ(RoundTrip(bare), bare);
}

TEST(CodecTest, ASliceRequestIsStrictAndNamesTheField) {
  EXPECT_EQ(ErrorOf(R"({"memory":"1GiB","colour":"red"})"), "unknown field \"colour\"");
  EXPECT_EQ(ErrorOf(R"({"compute":30})"), "memory is required");
  EXPECT_EQ(ErrorOf(R"({"memory":-5})"), "memory must be a byte count or a size such as \"10GiB\"");
  EXPECT_EQ(ErrorOf(R"({"memory":"1GiB","compute":101})"), "compute must be an integer percent 1..100");
  EXPECT_EQ(ErrorOf(R"({"memory":"1GiB","compute":"x"})"), "compute must be an integer percent 1..100");
  EXPECT_EQ(ErrorOf(R"({"memory":"1GiB","tier":7})"), "tier must be a string");
  EXPECT_EQ(ErrorOf(R"({"memory":"1GiB","user":42})"), "user must be a string");
  EXPECT_EQ(ErrorOf(R"({"memory":"1GiB","account":""})"), "account must not be empty (leave it out instead)");
  EXPECT_EQ(ErrorOf(R"({"memory":"1GiB","wait":"yes"})"), "wait must be true or false");
  EXPECT_EQ(ErrorOf(R"({"memory":"1GiB","owner":-1})"), "owner must be a uid or a user name");
  EXPECT_EQ(ErrorOf(R"({"memory":"1GiB","namespace":"Team_A"})"),
            "namespace must be at most 253 of a-z 0-9 . - (a Kubernetes name)");
  EXPECT_EQ(ErrorOf(R"({"memory":"1GiB","pod":3})"), "pod must be a string");
  EXPECT_EQ(ErrorOf(R"({"memory":"1GiB","isolation":"strong"})"), "isolation must be trusted, hard or exclusive");
  EXPECT_EQ(ErrorOf(R"({"memory":"1GiB","isolation":true})"), "isolation must be a string");
  EXPECT_EQ(ErrorOf(R"({"memory":"1GiB","mig_profile":"3g.40gb"})"),
            "mig_profile takes a MIG instance whole: it needs isolation hard");
  EXPECT_EQ(ErrorOf(R"({"memory":"1GiB","isolation":"hard","mig_profile":"3g 40gb"})"),
            "mig_profile must be a MIG profile's name, like 3g.40gb");
  EXPECT_EQ(ErrorOf(R"({"memory":"1GiB","isolation":"hard","mig_profile":"3g.40gb","mig_start":8})"),
            "mig_start must be a memory slice, 0..7");
  EXPECT_EQ(ErrorOf(R"({"memory":"1GiB","isolation":"hard","mig_start":4})"),
            "mig_start places an instance of mig_profile: name the profile too");
  EXPECT_EQ(ErrorOf(R"({"memory":"1GiB","isolation":"hard","mig_profile":"3g.40gb","mig_start":4})"), "(ok)");
  EXPECT_EQ(ErrorOf(R"({"memory":"1GiB","claim":")" + std::string(254, 'a') + "\"}"),
            "claim must be at most 253 of a-z 0-9 . - (a Kubernetes name)");
  EXPECT_EQ(ErrorOf(R"({"memory":"1GiB","namespace":"","pod":"","claim":""})"), "(ok)") << "empty: not set";
  EXPECT_EQ(ErrorOf(R"({"memory":"1GiB","idempotency_key":""})"),
            "idempotency_key must be 1-128 of A-Z a-z 0-9 . _ : / -");
  EXPECT_EQ(ErrorOf(R"({"memory":"1GiB","idempotency_key":"a b"})"),
            "idempotency_key must be 1-128 of A-Z a-z 0-9 . _ : / -");
  EXPECT_EQ(ErrorOf(R"({"memory":"1GiB","idempotency_key":")" + std::string(129, 'k') + "\"}"),
            "idempotency_key must be 1-128 of A-Z a-z 0-9 . _ : / -");
  EXPECT_EQ(ErrorOf(R"({"memory":"1GiB","idempotency_key":")" + std::string(128, 'k') + "\"}"), "(ok)");
  EXPECT_EQ(Parse<SliceRequest>(json::parse(R"({"memory":"2GiB"})"))->memory_bytes, 2ull << 30);
}

TEST(CodecTest, BodiesAreObjectsOfBoundedDepth) {
  EXPECT_EQ(ParseObject("{not json").status().message(), "the body is not valid JSON");
  EXPECT_EQ(ParseObject("[1,2]").status().message(), "the body must be a JSON object");
  EXPECT_EQ(ParseObject(std::string(100000, '[')).status().message(), "the body nests deeper than 8 levels");
  EXPECT_TRUE(ParseObject(R"({"a":"[[[[[[[[[["})").ok()) << "brackets in strings do not count";
}

TEST(CodecTest, AResizeIsStrictAndWritesOnlyWhatChanges) {
  SliceResize resize;
  resize.compute = 40;
  EXPECT_EQ(ToJson(resize), (json{{"compute", 40}}));
  EXPECT_EQ(RoundTrip(resize), resize);
  EXPECT_EQ(Parse<SliceResize>(json{{"gpu", "1"}}).status().message(), "unknown field \"gpu\"");
  EXPECT_EQ(Parse<GpuMode>(json{{"exclusive", "yes"}}).status().message(), "exclusive must be true or false");
  EXPECT_TRUE(Parse<GpuMode>(json{{"exclusive", true}})->exclusive);
}

Slice FullSlice() {
  Slice slice;
  slice.id = "s7";
  slice.gpu = "GPU-aaaa";
  slice.memory_bytes = 8ull << 30;
  slice.compute = 25;
  slice.compute_mode = "share";
  slice.tier = "standard";
  slice.tenant = "physics";
  slice.created_unix_ms = 1700000000000;
  slice.compute_throttled_seconds = 1.5;
  slice.starved = true;
  slice.labels = {"1234.0", "alice", "physics", "ml", "trainer-0", "gpu-claim"};
  slice.details = SliceDetails{1001, 4242, true, "/var/lib/fgpu/slices/s7",
                               {{"CUDA_VISIBLE_DEVICES", "GPU-aaaa"}, {"FGPU_SLICE", "/var/lib/fgpu/slices/s7"}},
                               "k1"};
  slice.usage = SliceUsage{1ull << 30, 2, 3.25, false, "truncated"};
  return slice;
}

TEST(CodecTest, ASliceRoundTripsInFullAndInPublic) {
  const Slice full = FullSlice();
  EXPECT_EQ(RoundTrip(full), full);
  Slice public_view = full;
  public_view.details.reset();
  public_view.usage.reset();
  const json written = ToJson(public_view);
  EXPECT_FALSE(written.contains("job")) << "a batch job's labels are for its owner and admins";
  EXPECT_FALSE(written.contains("idempotency_key"));
  EXPECT_EQ(written["pod"], "trainer-0") << "Kubernetes labels are public, as in /metrics";
  Slice expected = public_view;
  expected.labels.job = expected.labels.user = expected.labels.account = "";
  EXPECT_EQ(RoundTrip(public_view), expected);
}

TEST(CodecTest, RepliesTolerateNewFieldsButNotWrongTypes) {
  json body = ToJson(FullSlice());
  body["from_the_future"] = 1;
  EXPECT_TRUE(Parse<Slice>(body).ok());
  body["memory_bytes"] = "lots";
  EXPECT_EQ(Parse<Slice>(body).status().message(), "slice s7: memory_bytes must be an integer");
  body = ToJson(FullSlice());
  body["env"]["A=B"] = "x";
  EXPECT_EQ(Parse<Slice>(body).status().message(), "slice s7: env has a malformed entry 'A=B'");
  EXPECT_EQ(Parse<Slice>(json{{"gpu", "x"}}).status().message(), "the slice has no id");
  EXPECT_FALSE(Parse<std::vector<Slice>>(json::object()).ok());
}

TEST(CodecTest, AnOlderAgentsSliceWithoutThrottledTimeKeepsItAbsent) {
  json body = ToJson(FullSlice());
  body.erase("compute_throttled_seconds");
  Result<Slice> older = Parse<Slice>(body);
  ASSERT_TRUE(older.ok()) << older.status().message();
  EXPECT_FALSE(older->compute_throttled_seconds.has_value()) << "absent, not 0: the agent did not say";
  EXPECT_FALSE(ToJson(*older).contains("compute_throttled_seconds")) << "and written back absent";
  Slice none_yet = FullSlice();
  none_yet.compute_throttled_seconds = 0.0;
  EXPECT_EQ(ToJson(none_yet)["compute_throttled_seconds"], 0.0) << "a reading of zero is written";
  EXPECT_EQ(RoundTrip(none_yet), none_yet);
  body["compute_throttled_seconds"] = "long";
  EXPECT_EQ(Parse<Slice>(body).status().message(), "slice s7: compute_throttled_seconds must be a number");
}

TEST(CodecTest, UsageRowsRoundTrip) {
  const UsageTotal row{"physics", 7200.5, 1.25, 3600, 3};
  EXPECT_EQ(RoundTrip(row), row);
  EXPECT_EQ(ToJson(row), (json{{"key", "physics"},
                               {"reserved_gpu_seconds", 7200.5},
                               {"memory_gib_hours", 1.25},
                               {"busy_gpu_seconds", 3600.0},
                               {"records", 3}}));
  EXPECT_EQ(RoundTrip(std::vector<UsageTotal>{row, UsageTotal{}}), (std::vector<UsageTotal>{row, UsageTotal{}}));
  json body = ToJson(row);
  body["records"] = 2.5;
  EXPECT_EQ(Parse<UsageTotal>(body).status().message(), "usage of 'physics': records must be an integer");
  EXPECT_EQ(Parse<std::vector<UsageTotal>>(json::object()).status().message(), "the usage report must be a JSON array");
}

TEST(CodecTest, TheSmallRepliesRoundTrip) {
  EXPECT_EQ(RoundTrip(QueueTicket{"abcd", 3}), (QueueTicket{"abcd", 3}));
  const Gpu gpu{1, "GPU-b", "H100", 80ull << 30, 8ull << 30, 25, true, "low memory", 2, "9.0", "580.65.06", true, 1};
  EXPECT_EQ(RoundTrip(gpu), gpu);
  EXPECT_EQ(RoundTrip(std::vector<Gpu>{gpu, gpu}).size(), 2u);
  const Gpu instance{1,    "MIG-c", "H100 MIG 3g.40gb", 40ull << 30, 0,         0, false, "", 0, "9.0", "580.65.06",
                     false, 1,      "mig",            "GPU-b",       "3g.40gb", 4, "the geometry is not applied"};
  EXPECT_EQ(RoundTrip(instance), instance);
  Gpu dynamic = gpu;
  dynamic.isolation = "mig";
  dynamic.mig_dynamic = true;
  EXPECT_EQ(RoundTrip(dynamic), dynamic);
  EXPECT_EQ(RoundTrip(Health{"ok", 2, 5}), (Health{"ok", 2, 5}));
  EXPECT_EQ(RoundTrip(JoinReply{"s1", 42, "/sys/fs/cgroup/fgpu/x/s1"}), (JoinReply{"s1", 42, "/sys/fs/cgroup/fgpu/x/s1"}));
  EXPECT_EQ(RoundTrip(ApiError{"no room"}), (ApiError{"no room"}));
  EXPECT_EQ(ParseText<Health>("{oops").status().message(), "not valid JSON");
}

}  // namespace
}  // namespace fgpu::api

namespace fgpu::api {
namespace {

TEST(CodecTest, TheQueueAndTheQuotasRoundTrip) {
  const std::vector<QueueItem> queue = {{1, "q12345678", 1000, 8ULL << 30, 25, "latency", "team-a", 1500, "no node fits"},
                                        {2, "", 1001, 1ULL << 30, std::nullopt, "batch", "team-b", 10, "strict"}};
  Result<std::vector<QueueItem>> read = Parse<std::vector<QueueItem>>(ToJson(queue));
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(*read, queue);
  EXPECT_FALSE(ToJson(queue[1]).contains("compute"));
  const std::vector<Quota> quotas = {{"org", "", 1, 2, 3, 4, 5, 6}, {"team", "org", 7, 8, 9, 10, 11, 12}};
  Result<std::vector<Quota>> parsed = Parse<std::vector<Quota>>(ToJson(quotas));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, quotas);
  EXPECT_FALSE(Parse<Quota>(nlohmann::json{{"name", "x"}, {"compute_used", "many"}}).ok());
  EXPECT_FALSE(Parse<std::vector<QueueItem>>(nlohmann::json::object()).ok());
}

}  // namespace
}  // namespace fgpu::api
