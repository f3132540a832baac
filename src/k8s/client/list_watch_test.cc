#include "k8s/client/list_watch.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "k8s/client/test_apiserver.h"

namespace fgpu::k8s {
namespace {

using std::chrono::milliseconds;

constexpr const char* kClaims = "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims";

nlohmann::json Claim(const std::string& name) {
  auto claim = nlohmann::json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "", "namespace": "team-a"},
    "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "gpu.fgpu.io", "capacity": {"requests": {"memory": "10Gi"}}}}]}}})");
  claim["metadata"]["name"] = name;
  return claim;
}

template <typename Pred>
bool WaitFor(Pred pred, milliseconds limit = milliseconds(5000)) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (pred()) return true;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return pred();
}

TEST(ListAndWatch, ListsWatchesAndRelistsWhenTheVersionIsGone) {
  if (std::string why = testing::MissingPrerequisite(); !why.empty()) GTEST_SKIP() << why;
  auto server = testing::TestApiServer::Start();
  ASSERT_TRUE(server.ok()) << server.status().message();
  ClientOptions options;
  options.retry.initial_backoff = milliseconds(20);
  auto client = KubeClient::FromConfig((*server)->Config(), options);
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Create(kClaims, Claim("before")).ok());

  std::mutex mu;
  std::vector<size_t> syncs;  // item count of each list
  std::vector<std::string> events;
  std::stop_source stop;
  Status result = Status::Internal("not finished");
  std::thread loop([&] {
    result = ListAndWatch(**client, kClaims, {.page_size = 1, .watch_timeout_seconds = 2},
                          {.on_sync = [&](const nlohmann::json& list) {
                             std::lock_guard lock(mu);
                             syncs.push_back(list["items"].size());
                           },
                           .on_event = [&](const WatchEvent& e) {
                             std::lock_guard lock(mu);
                             events.push_back(std::string(WatchEventTypeName(e.type)) + " " +
                                              e.object["metadata"]["name"].get<std::string>());
                           }},
                          stop.get_token());
  });
  auto locked = [&](auto f) {
    std::lock_guard lock(mu);
    return f();
  };
  ASSERT_TRUE(WaitFor([&] { return locked([&] { return syncs.size() == 1; }); }));
  EXPECT_EQ(locked([&] { return syncs[0]; }), 1u);
  ASSERT_TRUE((*client)->Create(kClaims, Claim("during")).ok());
  ASSERT_TRUE(WaitFor([&] { return locked([&] { return events.size() == 1; }); }));
  EXPECT_EQ(locked([&] { return events[0]; }), "ADDED during");

  // The server drops its history and ends open watches with 410: the loop lists again.
  ASSERT_TRUE((*server)->Control("POST", "/compact", {{"close_watches", true}}).ok());
  ASSERT_TRUE(WaitFor([&] { return locked([&] { return syncs.size() == 2; }); }));
  EXPECT_EQ(locked([&] { return syncs[1]; }), 2u);  // both pages of the re-list
  ASSERT_TRUE((*client)->Delete(std::string(kClaims) + "/before").ok());
  ASSERT_TRUE(WaitFor([&] { return locked([&] { return events.size() == 2; }); }));
  EXPECT_EQ(locked([&] { return events[1]; }), "DELETED before");

  auto start = std::chrono::steady_clock::now();
  stop.request_stop();
  loop.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(500));
  EXPECT_TRUE(result.ok()) << result.message();
}

TEST(ListAndWatch, GivesUpAfterTheConfiguredFailures) {
  if (std::string why = testing::MissingPrerequisite(); !why.empty()) GTEST_SKIP() << why;
  auto server = testing::TestApiServer::Start();
  ASSERT_TRUE(server.ok());
  ClientOptions options;
  options.retry.max_attempts = 1;
  options.retry.initial_backoff = milliseconds(10);
  auto client = KubeClient::FromConfig((*server)->Config(), options);
  std::atomic<int> errors{0};
  Status s = ListAndWatch(**client, "/apis/resource.k8s.io/v1/nosuchthings", {.max_consecutive_failures = 3},
                          {.on_error = [&](const Status&) { ++errors; }}, std::stop_token());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(errors.load(), 3);
}

}  // namespace
}  // namespace fgpu::k8s
