// The client against a real net::HttpServer on a Unix socket that answers as the agent would:
// every call's request, its typed answer, and each refusal's Status code and text.
#include "api/agent_client.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <mutex>

#include "api/codec.h"
#include "net/http_server.h"

namespace fgpu::api {
namespace {

using nlohmann::json;

class AgentClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    socket_ = "/tmp/fgpu-api-client-" + std::to_string(getpid()) + ".sock";
    server_ = std::make_unique<net::HttpServer>(
        [this](const net::HttpRequest& request) {
          std::lock_guard<std::mutex> lock(mutex_);
          last_ = request;
          return answer_;
        },
        net::HttpServer::Options{});
    ASSERT_TRUE(server_->ListenUnix(socket_, 0600).ok());
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    server_->Stop();
    std::filesystem::remove(socket_);
  }

  AgentClient Client() const {
    net::Endpoint endpoint;
    endpoint.unix_socket = true;
    endpoint.path = socket_;
    return AgentClient(endpoint, 5000);
  }
  void Answer(int status, const json& body) {
    std::lock_guard<std::mutex> lock(mutex_);
    answer_ = {};
    answer_.status = status;
    answer_.body = body.is_null() ? "" : body.dump();
  }
  net::HttpRequest Last() {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_;
  }

  static Slice ASlice() {
    Slice slice;
    slice.id = "s3";
    slice.gpu = "GPU-a";
    slice.memory_bytes = 1 << 30;
    slice.compute = 10;
    slice.compute_mode = "share";
    slice.tier = "standard";
    slice.tenant = "default";
    slice.details = SliceDetails{1000, 99, false, "/s/s3", {{"FGPU_SLICE", "/s/s3"}}, "key-1"};
    return slice;
  }

  std::string socket_;
  std::unique_ptr<net::HttpServer> server_;
  std::mutex mutex_;
  net::HttpResponse answer_;
  net::HttpRequest last_;
};

TEST_F(AgentClientTest, CreateSendsTheCodecsBodyAndReadsASliceATicketOrAnExistingSlice) {
  SliceRequest request;
  request.memory_bytes = 1 << 30;
  request.idempotency_key = "key-1";
  request.labels.pod = "p";
  Answer(201, ToJson(ASlice()));
  Result<CreateReply> created = Client().CreateSlice(request);
  ASSERT_TRUE(created.ok()) << created.status().message();
  EXPECT_EQ(*created->slice, ASlice());
  EXPECT_FALSE(created->existing);
  EXPECT_EQ(Last().method, "POST");
  EXPECT_EQ(Last().path, "/v1/slices");
  EXPECT_EQ(*Parse<SliceRequest>(json::parse(Last().body)), request);

  Answer(200, ToJson(ASlice()));
  EXPECT_TRUE(Client().CreateSlice(request)->existing) << "200: the slice made earlier for the key";

  Answer(202, ToJson(QueueTicket{"t1", 2}));
  created = Client().CreateSlice(request);
  ASSERT_TRUE(created.ok());
  EXPECT_TRUE(created->queued());
  EXPECT_EQ(*created->ticket, (QueueTicket{"t1", 2}));

  Answer(201, json{{"no", "id"}});
  EXPECT_EQ(Client().CreateSlice(request).status().code(), StatusCode::kInternal);
}

TEST_F(AgentClientTest, RefusalsBecomeStatusCodesWithTheAgentsText) {
  const std::pair<int, StatusCode> cases[] = {{400, StatusCode::kInvalidArgument},
                                              {403, StatusCode::kPermissionDenied},
                                              {404, StatusCode::kNotFound},
                                              {409, StatusCode::kResourceExhausted},
                                              {503, StatusCode::kUnavailable},
                                              {500, StatusCode::kInternal}};
  for (const auto& [http, code] : cases) {
    Answer(http, ToJson(ApiError{"because " + std::to_string(http)}));
    const Status deleted = Client().DeleteSlice("s1");
    EXPECT_EQ(deleted.code(), code) << http;
    EXPECT_EQ(deleted.message().rfind("because " + std::to_string(http), 0), 0u) << deleted.message();
  }
  Answer(204, nullptr);
  EXPECT_TRUE(Client().DeleteSlice("s1").ok());
  EXPECT_EQ(Last().method, "DELETE");
  EXPECT_EQ(Last().path, "/v1/slices/s1");
  EXPECT_EQ(Client().DeleteSlice("../gpus").code(), StatusCode::kInvalidArgument) << "an id cannot change the path";
}

TEST_F(AgentClientTest, ReadsSlicesGpusHealthAndTheQueue) {
  Answer(200, json::array({ToJson(ASlice())}));
  Result<std::vector<Slice>> slices = Client().ListSlices({true, "key-1"});
  ASSERT_TRUE(slices.ok()) << slices.status().message();
  EXPECT_EQ(slices->size(), 1u);
  EXPECT_EQ(Last().query, "usage=1&idempotency_key=key-1");

  Answer(200, ToJson(ASlice()));
  EXPECT_EQ(Client().GetSlice("s3")->details->idempotency_key, "key-1");
  SliceResize resize;
  resize.compute = 20;
  EXPECT_TRUE(Client().ResizeSlice("s3", resize).ok());
  EXPECT_EQ(Last().method, "PATCH");
  EXPECT_EQ(json::parse(Last().body), (json{{"compute", 20}}));

  Answer(200, json::array({ToJson(Gpu{0, "GPU-a", "H100", 80ull << 30, 0, 0, false, "", 0, "9.0", "580.65.06", true, 0})}));
  EXPECT_EQ(Client().ListGpus()->at(0).uuid, "GPU-a");
  EXPECT_EQ(Client().ListGpus()->at(0).compute_capability, "9.0");
  Answer(200, ToJson(Health{"ok", 1, 0}));
  EXPECT_EQ(Client().Health()->gpus, 1);

  Answer(200, ToJson(QueueTicket{"t1", 1}));
  EXPECT_TRUE(Client().PollTicket("t1")->queued());
  Answer(201, ToJson(ASlice()));
  EXPECT_EQ(Client().PollTicket("t1")->slice->id, "s3");
  EXPECT_EQ(Last().path, "/v1/queue/t1");
  Answer(404, ToJson(ApiError{"no queued request t1 of yours"}));
  EXPECT_EQ(Client().CancelTicket("t1").code(), StatusCode::kNotFound);
  Answer(200, ToJson(JoinReply{"s3", 7, ""}));
  EXPECT_EQ(Client().JoinSlice("s3")->pid, 7);
  EXPECT_EQ(Last().path, "/v1/slices/s3/join");
}

TEST_F(AgentClientTest, ReadsTheUsageReport) {
  Answer(200, json::array({ToJson(UsageTotal{"physics", 3600, 0.5, 1800, 2})}));
  Result<std::vector<UsageTotal>> rows = Client().Usage({1000, std::nullopt, "account"});
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  EXPECT_EQ(*rows, (std::vector<UsageTotal>{{"physics", 3600, 0.5, 1800, 2}}));
  EXPECT_EQ(Last().path, "/v1/usage");
  EXPECT_EQ(Last().query, "since=1000&by=account");
  EXPECT_TRUE(Client().Usage({0, 5000, "tenant"}).ok());
  EXPECT_EQ(Last().query, "since=0&by=tenant&until=5000");
  EXPECT_EQ(Client().Usage({0, std::nullopt, "tenant&until=1"}).status().code(), StatusCode::kInvalidArgument)
      << "the grouping cannot change the query";
  Answer(403, ToJson(ApiError{"usage by account is for admins"}));
  EXPECT_EQ(Client().Usage({0, std::nullopt, "account"}).status().message(), "usage by account is for admins");
  Answer(200, json::object());
  EXPECT_EQ(Client().Usage({}).status().code(), StatusCode::kInternal) << "not a list: an agent of another version";
}

TEST_F(AgentClientTest, NoAgentIsUnavailable) {
  net::Endpoint nowhere;
  nowhere.unix_socket = true;
  nowhere.path = socket_ + ".missing";
  EXPECT_EQ(AgentClient(nowhere, 1000).Health().status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace fgpu::api
