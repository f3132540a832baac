// KubeClient against the fake API server over real TLS (test_apiserver.h).
#include "k8s/client/kube_client.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "k8s/client/events.h"
#include "k8s/client/test_apiserver.h"

namespace fgpu::k8s {
namespace {

using std::chrono::milliseconds;
using testing::TestApiServer;

constexpr const char* kSlices = "/apis/resource.k8s.io/v1/resourceslices";

nlohmann::json Slice(const std::string& name, const std::string& node = "node-1") {
  auto slice = nlohmann::json::parse(R"({
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "metadata": {"name": "", "labels": {}},
    "spec": {"driver": "gpu.fgpu.io", "nodeName": "",
             "pool": {"name": "", "generation": 1, "resourceSliceCount": 1},
             "devices": [{"name": "gpu-0", "allowMultipleAllocations": true,
                          "attributes": {"model": {"string": "H100"}},
                          "capacity": {"memory": {"value": "80Gi", "requestPolicy": {
                              "default": "1Gi", "validRange": {"min": "1Gi", "max": "80Gi", "step": "1Gi"}}}}}]}})");
  slice["metadata"]["name"] = name;
  slice["metadata"]["labels"]["fgpu.io/node"] = node;
  slice["spec"]["nodeName"] = node;
  slice["spec"]["pool"]["name"] = node;
  return slice;
}

ClientOptions FastRetries() {
  ClientOptions o;
  o.retry.initial_backoff = milliseconds(20);
  o.retry.max_backoff = milliseconds(200);
  return o;
}

class KubeClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!testing::MissingPrerequisite().empty()) return;
    auto server = TestApiServer::Start();
    ASSERT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(*server).release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (std::string why = testing::MissingPrerequisite(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_TRUE(server_->Control("POST", "/reset").ok());
    auto client = KubeClient::FromConfig(server_->Config(), FastRetries());
    ASSERT_TRUE(client.ok()) << client.status().message();
    client_ = std::move(*client);
  }
  // The API requests the server saw (method and code), in order.
  std::vector<std::pair<std::string, int>> Seen() {
    std::vector<std::pair<std::string, int>> out;
    auto requests = server_->Requests();
    EXPECT_TRUE(requests.ok()) << requests.status().message();
    if (!requests.ok()) return out;
    for (const auto& r : *requests) out.emplace_back(r["method"], r["code"]);
    return out;
  }
  static TestApiServer* server_;
  std::unique_ptr<KubeClient> client_;
};
TestApiServer* KubeClientTest::server_ = nullptr;

TEST_F(KubeClientTest, CreateGetUpdateDeleteWithTheServersAnswers) {
  auto created = client_->Create(kSlices, Slice("node-1-gpu"));
  ASSERT_TRUE(created.ok()) << created.status().message();
  EXPECT_FALSE((*created)["metadata"]["uid"].get<std::string>().empty());
  EXPECT_EQ((*created)["metadata"]["generation"], 1);

  auto got = client_->Get(std::string(kSlices) + "/node-1-gpu");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, *created);

  nlohmann::json changed = *got;
  changed["spec"]["pool"]["generation"] = 2;
  auto updated = client_->Update(std::string(kSlices) + "/node-1-gpu", changed);
  ASSERT_TRUE(updated.ok()) << updated.status().message();
  EXPECT_EQ((*updated)["metadata"]["generation"], 2);
  EXPECT_NE((*updated)["metadata"]["resourceVersion"], (*got)["metadata"]["resourceVersion"]);

  auto again = client_->Create(kSlices, Slice("node-1-gpu"));
  EXPECT_TRUE(IsAlreadyExists(again.status())) << again.status().message();

  ASSERT_TRUE(client_->Delete(std::string(kSlices) + "/node-1-gpu").ok());
  auto gone = client_->Delete(std::string(kSlices) + "/node-1-gpu");
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(HttpStatusOf(gone.status()), 404);
  EXPECT_NE(gone.status().message().find("\"node-1-gpu\" not found"), std::string::npos) << gone.status().message();
}

TEST_F(KubeClientTest, UpdateWithAStaleResourceVersionIsAConflict) {
  auto created = client_->Create(kSlices, Slice("s"));
  ASSERT_TRUE(created.ok());
  nlohmann::json first = *created;
  first["spec"]["pool"]["generation"] = 2;
  ASSERT_TRUE(client_->Update(std::string(kSlices) + "/s", first).ok());
  nlohmann::json stale = *created;  // still the old resourceVersion
  stale["spec"]["pool"]["generation"] = 3;
  auto conflict = client_->Update(std::string(kSlices) + "/s", stale);
  ASSERT_FALSE(conflict.ok());
  EXPECT_TRUE(IsConflict(conflict.status())) << conflict.status().message();
  EXPECT_EQ(conflict.status().code(), StatusCode::kVersionMismatch);
  EXPECT_NE(conflict.status().message().find("the object has been modified"), std::string::npos);
  // Re-read and retry: what callers of a 409 do.
  auto fresh = client_->Get(std::string(kSlices) + "/s");
  (*fresh)["spec"]["pool"]["generation"] = 3;
  EXPECT_TRUE(client_->Update(std::string(kSlices) + "/s", *fresh).ok());
}

TEST_F(KubeClientTest, InvalidObjectsAreRejectedOnceWithTheServersMessage) {
  ASSERT_TRUE(server_->ClearRequests().ok());
  nlohmann::json bad = Slice("s");
  bad["spec"]["devices"][0]["capacity"]["memory"]["requestPolicy"]["default"] = "100Gi";
  auto invalid = client_->Create(kSlices, bad);
  EXPECT_EQ(invalid.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(HttpStatusOf(invalid.status()), 422);
  EXPECT_NE(invalid.status().message().find("requestPolicy.default"), std::string::npos) << invalid.status().message();

  nlohmann::json unknown = Slice("s");
  unknown["spec"]["gpus"] = 8;
  auto strict = client_->Create(kSlices, unknown);
  EXPECT_EQ(HttpStatusOf(strict.status()), 400);
  EXPECT_NE(strict.status().message().find("unknown field \"spec.gpus\""), std::string::npos);
  EXPECT_EQ(Seen().size(), 2u);  // neither was retried
}

TEST_F(KubeClientTest, PatchMergeJsonStrategicAndApply) {
  ASSERT_TRUE(client_->Create(kSlices, Slice("s")).ok());
  std::string path = std::string(kSlices) + "/s";
  auto merged = client_->Patch(path, {{"metadata", {{"labels", {{"tier", "a"}}}}}}, PatchType::kMerge);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_EQ((*merged)["metadata"]["labels"]["tier"], "a");
  EXPECT_EQ((*merged)["metadata"]["labels"]["fgpu.io/node"], "node-1");
  auto json_patched = client_->Patch(
      path, nlohmann::json::array({{{"op", "replace"}, {"path", "/spec/pool/generation"}, {"value", 5}}}),
      PatchType::kJson);
  ASSERT_TRUE(json_patched.ok()) << json_patched.status().message();
  EXPECT_EQ((*json_patched)["spec"]["pool"]["generation"], 5);
  auto strategic = client_->Patch(path, {{"metadata", {{"labels", {{"tier", nullptr}}}}}}, PatchType::kStrategicMerge);
  ASSERT_TRUE(strategic.ok());
  EXPECT_FALSE((*strategic)["metadata"]["labels"].contains("tier"));
  EXPECT_FALSE(client_->Patch(path, nlohmann::json::object(), PatchType::kApply).ok());  // no field manager
  auto applied = client_->Patch(std::string(kSlices) + "/t", Slice("t"), PatchType::kApply, "fgpu-test");
  ASSERT_TRUE(applied.ok()) << applied.status().message();
  auto bad = client_->Patch(path, {{"spec", {{"nodeName", nullptr}, {"allNodes", false}}}}, PatchType::kMerge);
  EXPECT_EQ(HttpStatusOf(bad.status()), 422) << bad.status().message();
}

TEST_F(KubeClientTest, ListPagesAndSelectors) {
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE(client_->Create(kSlices, Slice("s" + std::to_string(i), i < 3 ? "node-a" : "node-b")).ok());
  }
  auto page = client_->List(kSlices, {.limit = 3});
  ASSERT_TRUE(page.ok()) << page.status().message();
  EXPECT_EQ((*page)["items"].size(), 3u);
  std::string next = (*page)["metadata"]["continue"];
  EXPECT_FALSE(next.empty());
  auto second = client_->List(kSlices, {.limit = 3, .continue_token = next});
  ASSERT_TRUE(second.ok());
  EXPECT_EQ((*second)["items"][0]["metadata"]["name"], "s3");

  ASSERT_TRUE(server_->ClearRequests().ok());
  auto all = client_->List(kSlices, {.limit = 3, .all_pages = true});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ((*all)["items"].size(), 7u);
  EXPECT_FALSE((*all)["metadata"].contains("continue"));
  EXPECT_EQ(Seen().size(), 3u);  // 3 + 3 + 1

  auto by_label = client_->List(kSlices, {.label_selector = "fgpu.io/node=node-a"});
  EXPECT_EQ((*by_label)["items"].size(), 3u);
  auto by_field = client_->List(kSlices, {.field_selector = "spec.nodeName=node-b,metadata.name!=s6"});
  EXPECT_EQ((*by_field)["items"].size(), 3u);
  auto unsupported = client_->List(kSlices, {.field_selector = "spec.devices=x"});
  EXPECT_EQ(HttpStatusOf(unsupported.status()), 400);
}

TEST_F(KubeClientTest, WatchStreamsEventsAndBookmarksAndResumesFromTheLastResourceVersion) {
  auto list = client_->List(kSlices);
  ASSERT_TRUE(list.ok());
  std::string rv = (*list)["metadata"]["resourceVersion"];
  std::vector<std::string> seen;
  std::string bookmark_rv;
  std::thread writer([&] {
    std::this_thread::sleep_for(milliseconds(200));
    auto s = client_->Create(kSlices, Slice("w1"));
    (void)client_->Patch(std::string(kSlices) + "/w1", {{"spec", {{"pool", {{"generation", 2}}}}}},
                         PatchType::kMerge);
  });
  auto end = client_->Watch(kSlices, {.resource_version = rv, .timeout_seconds = 2}, [&](const WatchEvent& e) {
    seen.push_back(WatchEventTypeName(e.type));
    if (e.type == WatchEvent::Type::kBookmark) bookmark_rv = e.object["metadata"]["resourceVersion"];
    return true;
  });
  writer.join();
  ASSERT_TRUE(end.ok()) << end.status().message();
  ASSERT_GE(seen.size(), 3u);
  EXPECT_EQ(seen[0], "ADDED");
  EXPECT_EQ(seen[1], "MODIFIED");
  EXPECT_NE(std::find(seen.begin(), seen.end(), "BOOKMARK"), seen.end());
  EXPECT_EQ(*end, bookmark_rv);  // a bookmark after the writes carries the newest version

  // Changes while nobody watched arrive when resuming from that version, and nothing older.
  ASSERT_TRUE(client_->Delete(std::string(kSlices) + "/w1").ok());
  ASSERT_TRUE(client_->Create(kSlices, Slice("w2")).ok());
  std::vector<std::pair<std::string, std::string>> resumed;
  auto again = client_->Watch(kSlices, {.resource_version = *end, .allow_bookmarks = false, .timeout_seconds = 1},
                              [&](const WatchEvent& e) {
                                resumed.emplace_back(WatchEventTypeName(e.type), e.object["metadata"]["name"]);
                                return true;
                              });
  ASSERT_TRUE(again.ok()) << again.status().message();
  ASSERT_EQ(resumed.size(), 2u);
  EXPECT_EQ(resumed[0], std::make_pair(std::string("DELETED"), std::string("w1")));
  EXPECT_EQ(resumed[1], std::make_pair(std::string("ADDED"), std::string("w2")));
}

TEST_F(KubeClientTest, WatchFromACompactedVersionIsGone) {
  auto list = client_->List(kSlices);
  std::string rv = (*list)["metadata"]["resourceVersion"];
  ASSERT_TRUE(client_->Create(kSlices, Slice("a")).ok());
  ASSERT_TRUE(server_->Control("POST", "/compact").ok());
  bool saw_error = false;
  auto end = client_->Watch(kSlices, {.resource_version = rv, .timeout_seconds = 5}, [&](const WatchEvent& e) {
    saw_error = e.type == WatchEvent::Type::kError;
    return true;
  });
  ASSERT_FALSE(end.ok());
  EXPECT_TRUE(IsGone(end.status())) << end.status().message();
  EXPECT_TRUE(saw_error);
}

TEST_F(KubeClientTest, CallbackEndsTheWatchAndStopEndsItPromptly) {
  ASSERT_TRUE(client_->Create(kSlices, Slice("a")).ok());
  ASSERT_TRUE(client_->Create(kSlices, Slice("b")).ok());
  int events = 0;
  auto end = client_->Watch(kSlices, {}, [&](const WatchEvent&) { return ++events < 1; });
  ASSERT_TRUE(end.ok());
  EXPECT_EQ(events, 1);

  std::stop_source stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(300));
    stop.request_stop();
  });
  auto start = std::chrono::steady_clock::now();
  auto stopped = client_->Watch(kSlices, {.allow_bookmarks = false}, [](const WatchEvent&) { return true; },
                                stop.get_token());
  auto took = std::chrono::steady_clock::now() - start;
  stopper.join();
  ASSERT_TRUE(stopped.ok()) << stopped.status().message();
  EXPECT_LT(took, milliseconds(300 + 500));  // 300 ms before the stop, then at most a poll interval and slack
}

// A server (or something posing as one) that answers in odd shapes gets an error or a lenient
// reading, never an exception out of the client.
TEST_F(KubeClientTest, RepliesOfAnyShapeAreErrorsNotExceptions) {
  ASSERT_TRUE(server_->Reply("GET", kSlices, 1, 409, R"({"kind": 5, "reason": [1], "message": {}})").ok());
  auto odd_status = client_->Get(std::string(kSlices) + "/x");
  EXPECT_EQ(HttpStatusOf(odd_status.status()), 409) << odd_status.status().message();

  ASSERT_TRUE(server_->Reply("GET", kSlices, 1, 200, "[1, 2, 3]").ok());
  auto not_a_list = client_->List(kSlices, {.all_pages = true});
  EXPECT_EQ(not_a_list.status().code(), StatusCode::kCorrupt) << not_a_list.status().message();

  ASSERT_TRUE(server_->Reply("GET", kSlices, 1, 200, R"({"metadata": {"continue": 7}, "items": 5})").ok());
  auto odd_list = client_->List(kSlices, {.limit = 2, .all_pages = true});
  ASSERT_TRUE(odd_list.ok()) << odd_list.status().message();
  EXPECT_TRUE((*odd_list)["items"].empty());

  ASSERT_TRUE(server_->Reply("GET", kSlices, 1, 200, "not json").ok());
  EXPECT_EQ(client_->Get(kSlices).status().code(), StatusCode::kCorrupt);

  const std::string events = R"({"type": "ADDED", "object": {"metadata": {"resourceVersion": 9}}})"
                             "\n"
                             R"({"type": "MODIFIED", "object": {"metadata": "x"}})"
                             "\n"
                             R"({"type": "ERROR", "object": {"code": "410", "reason": 3}})"
                             "\n";
  ASSERT_TRUE(server_->Reply("GET", kSlices, 1, 200, events).ok());
  int delivered = 0;
  auto watched = client_->Watch(kSlices, {.resource_version = "1"}, [&](const WatchEvent&) { return ++delivered > 0; });
  ASSERT_FALSE(watched.ok());
  EXPECT_EQ(HttpStatusOf(watched.status()), 500) << watched.status().message();  // no readable code: 500
  EXPECT_EQ(delivered, 3);
}

TEST_F(KubeClientTest, TooManyRequestsHonoursRetryAfter) {
  ASSERT_TRUE(server_->Fault("GET", kSlices, 1, "status", 429, 1).ok());
  ASSERT_TRUE(server_->ClearRequests().ok());
  auto start = std::chrono::steady_clock::now();
  auto list = client_->List(kSlices);
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(list.ok()) << list.status().message();
  EXPECT_GE(took, milliseconds(950));
  EXPECT_EQ(Seen(), (std::vector<std::pair<std::string, int>>{{"GET", 429}, {"GET", 200}}));
}

TEST_F(KubeClientTest, ServerErrorsAreRetriedForReadsUpToTheBound) {
  ASSERT_TRUE(server_->Fault("GET", kSlices, 2, "status", 500).ok());
  ASSERT_TRUE(server_->ClearRequests().ok());
  ASSERT_TRUE(client_->List(kSlices).ok());
  EXPECT_EQ(Seen().size(), 3u);

  ASSERT_TRUE(server_->Fault("GET", kSlices, 10, "status", 503).ok());
  ASSERT_TRUE(server_->ClearRequests().ok());
  auto exhausted = client_->List(kSlices);
  EXPECT_EQ(exhausted.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(HttpStatusOf(exhausted.status()), 503);
  EXPECT_EQ(Seen().size(), 5u);  // RetryPolicy::max_attempts
  ASSERT_TRUE(server_->Control("DELETE", "/faults").ok());

  ASSERT_TRUE(server_->Fault("GET", kSlices, 1, "drop").ok());
  ASSERT_TRUE(client_->List(kSlices).ok());  // a dropped read is simply asked again
}

TEST_F(KubeClientTest, PostIsNotRepeatedOnceTheServerMayHaveActed) {
  ASSERT_TRUE(server_->Fault("POST", kSlices, 1, "status", 500).ok());
  ASSERT_TRUE(server_->ClearRequests().ok());
  auto failed = client_->Create(kSlices, Slice("p"));
  EXPECT_EQ(failed.status().code(), StatusCode::kInternal);
  EXPECT_EQ(Seen().size(), 1u);

  ASSERT_TRUE(server_->Fault("POST", kSlices, 1, "drop").ok());
  ASSERT_TRUE(server_->ClearRequests().ok());
  EXPECT_EQ(client_->Create(kSlices, Slice("p")).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(Seen().size(), 1u);

  // 429 and 503 mean "not processed": those are safe to send again.
  ASSERT_TRUE(server_->Fault("POST", kSlices, 1, "status", 429, 0).ok());
  ASSERT_TRUE(server_->Fault("POST", kSlices, 1, "status", 503).ok());
  ASSERT_TRUE(server_->ClearRequests().ok());
  ASSERT_TRUE(client_->Create(kSlices, Slice("p")).ok());
  EXPECT_EQ(Seen(), (std::vector<std::pair<std::string, int>>{{"POST", 429}, {"POST", 503}, {"POST", 201}}));
}

TEST_F(KubeClientTest, TokenAuthAndRotation) {
  KubeConfig wrong = server_->Config();
  wrong.token_file.clear();
  wrong.token = "not-the-token";
  auto client = KubeClient::FromConfig(wrong);
  ASSERT_TRUE(client.ok());
  auto denied = (*client)->List(kSlices);
  EXPECT_EQ(denied.status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(HttpStatusOf(denied.status()), 401);

  // The kubelet rotates projected tokens by swapping the file: the next request uses the new one.
  const auto& pki = server_->pki();
  std::string next = pki.token_file + ".next";
  std::ofstream(next) << "test-token-2\n";
  ASSERT_EQ(std::rename(next.c_str(), pki.token_file.c_str()), 0);
  EXPECT_TRUE(client_->List(kSlices).ok());
  std::ofstream(next) << pki.token << "\n";
  ASSERT_EQ(std::rename(next.c_str(), pki.token_file.c_str()), 0);
  EXPECT_TRUE(client_->List(kSlices).ok());
}

TEST_F(KubeClientTest, EventsAreCoreV1Events) {
  ObjectRef claim{.api_version = "resource.k8s.io/v1", .kind = "ResourceClaim", .namespace_ = "team-a",
                  .name = "claim-1", .uid = "6f1d2f4e-0000-4000-8000-000000000001"};
  auto event = CreateEvent(*client_, "team-a", claim, "Prepared", "slice of 10Gi on gpu-0", EventType::kNormal,
                           {.component = "fgpu-dra", .host = "node-1"});
  ASSERT_TRUE(event.ok()) << event.status().message();
  EXPECT_EQ((*event)["involvedObject"]["name"], "claim-1");
  EXPECT_EQ((*event)["type"], "Normal");
  auto listed = client_->List("/api/v1/namespaces/team-a/events", {.field_selector = "involvedObject.name=claim-1"});
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ((*listed)["items"].size(), 1u);
  auto mismatched = CreateEvent(*client_, "other", claim, "Prepared", "x");
  EXPECT_EQ(HttpStatusOf(mismatched.status()), 422);
}

TEST_F(KubeClientTest, ConcurrentCallsFromManyThreads) {
  ASSERT_TRUE(client_->Create(kSlices, Slice("c")).ok());
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 15; ++i) {
        if (client_->Get(std::string(kSlices) + "/c").ok()) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 120);
}

// --- servers of their own ---

TEST(KubeClientTls, RefusesAServerWhoseCertificateTheCaDidNotSign) {
  if (std::string why = testing::MissingPrerequisite(); !why.empty()) GTEST_SKIP() << why;
  auto server = TestApiServer::Start({.rogue_certificate = true});
  ASSERT_TRUE(server.ok()) << server.status().message();
  auto client = KubeClient::FromConfig((*server)->Config());
  ASSERT_TRUE(client.ok());
  auto start = std::chrono::steady_clock::now();
  auto list = (*client)->List(kSlices);
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(list.status().message().find("TLS verification"), std::string::npos) << list.status().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2000));  // not retried
  EXPECT_TRUE((*server)->Requests()->empty());  // no request reached the server

  KubeConfig plain = (*server)->Config();
  plain.server = "http://127.0.0.1:" + std::to_string((*server)->port());
  EXPECT_EQ(KubeClient::FromConfig(plain).status().code(), StatusCode::kInvalidArgument);
}

TEST(KubeClientTls, KubeconfigWithEmbeddedCaAndClientCertificate) {
  if (std::string why = testing::MissingPrerequisite(); !why.empty()) GTEST_SKIP() << why;
  auto server = TestApiServer::Start({.client_cert_auth = true});
  ASSERT_TRUE(server.ok()) << server.status().message();
  const auto& pki = (*server)->pki();
  auto b64 = [](const std::string& path) {
    std::string out;
    FILE* p = popen(("base64 -w0 " + path).c_str(), "r");
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    pclose(p);
    return out;
  };
  std::string path = pki.dir + "/kubeconfig";
  std::ofstream(path) << "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: https://127.0.0.1:"
                      << (*server)->port() << "\n    certificate-authority-data: " << b64(pki.ca_crt)
                      << "\nusers:\n- name: cert-user\n  user:\n    client-certificate-data: " << b64(pki.client_crt)
                      << "\n    client-key-data: " << b64(pki.client_key)
                      << "\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: cert-user\n"
                         "current-context: fake\n";
  auto config = LoadKubeconfig(path);
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_TRUE(config->token.empty());
  auto client = KubeClient::FromConfig(*config);
  ASSERT_TRUE(client.ok()) << client.status().message();
  auto list = (*client)->List(kSlices);
  EXPECT_TRUE(list.ok()) << list.status().message();  // authenticated by the certificate alone

  config->client_cert_data_pem.clear();
  config->client_key_data_pem.clear();
  auto anonymous = KubeClient::FromConfig(*config);
  EXPECT_EQ(HttpStatusOf((*anonymous)->List(kSlices).status()), 401);
}

}  // namespace
}  // namespace fgpu::k8s
