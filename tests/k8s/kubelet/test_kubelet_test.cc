// The test kubelet refuses what a kubelet refuses. Tiny fake plugins (a DRA driver, a device
// plugin) stand on the other side; the checks run both in-process and through the
// fgpu-test-kubelet binary, whose exit code and JSON the shell end-to-end tests rely on.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "deviceplugin_v1beta1.grpc.pb.h"
#include "device_plugin_kubelet.h"
#include "dra_client.h"
#include "dra_v1.grpc.pb.h"
#include "dra_v1beta1.grpc.pb.h"
#include "k8s/kubelet/device_plugin_registrar.h"
#include "k8s/kubelet/registration_server.h"
#include "k8s/kubelet/unix_grpc_server.h"
#include "plugin_watcher.h"

namespace fgpu::k8s::test {
namespace {

using namespace std::chrono_literals;
namespace dra = ::k8s::io::kubelet::pkg::apis::dra;

class Dir {
 public:
  Dir() {
    char tmpl[] = "/tmp/fgpu-tk-XXXXXX";
    path_ = mkdtemp(tmpl) ? tmpl : "";
  }
  ~Dir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& n) const { return path_ + "/" + n; }

 private:
  std::string path_;
};

struct CliRun {
  int code = -1;
  nlohmann::json out;
};

// The binary, as a shell test runs it; stdout's last line parsed as JSON.
CliRun RunKubelet(const std::string& args) {
  std::string cmd = std::string(FGPU_TEST_KUBELET_PATH) + " " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::string text, line;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), p) != nullptr) text += buf.data();
  int status = pclose(p);
  CliRun r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::string last = text.substr(0, text.size() - (text.ends_with("\n") ? 1 : 0));
  last = last.substr(last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1);
  r.out = nlohmann::json::parse(last, nullptr, false);
  return r;
}

// ---------------------------------------------------------------- plugin registration

// A DRA driver's endpoint: serves DRAPlugin v1 and v1beta1; `omit` names a claim UID it leaves
// out of its answers (a buggy driver).
template <typename Api>
class FakeDra final : public Api::DRAPlugin::Service {
 public:
  std::string omit;
  grpc::Status NodePrepareResources(grpc::ServerContext*, const typename Api::NodePrepareResourcesRequest* in,
                                    typename Api::NodePrepareResourcesResponse* out) override {
    for (const auto& c : in->claims()) {
      if (c.uid() == omit) continue;
      auto& claim = (*out->mutable_claims())[c.uid()];
      auto* d = claim.add_devices();
      d->add_request_names("gpu");
      d->set_pool_name("node-a");
      d->set_device_name("gpu-0-slice-" + c.name());
      d->add_cdi_device_ids("fgpu.io/slice=" + c.uid());
    }
    return grpc::Status::OK;
  }
  grpc::Status NodeUnprepareResources(grpc::ServerContext*, const typename Api::NodeUnprepareResourcesRequest* in,
                                      typename Api::NodeUnprepareResourcesResponse* out) override {
    for (const auto& c : in->claims()) {
      if (c.uid() != omit) (*out->mutable_claims())[c.uid()];
    }
    return grpc::Status::OK;
  }
};

struct DraApi1 {
  using DRAPlugin = dra::v1::DRAPlugin;
  using NodePrepareResourcesRequest = dra::v1::NodePrepareResourcesRequest;
  using NodePrepareResourcesResponse = dra::v1::NodePrepareResourcesResponse;
  using NodeUnprepareResourcesRequest = dra::v1::NodeUnprepareResourcesRequest;
  using NodeUnprepareResourcesResponse = dra::v1::NodeUnprepareResourcesResponse;
};
struct DraApi1beta1 {
  using DRAPlugin = dra::v1beta1::DRAPlugin;
  using NodePrepareResourcesRequest = dra::v1beta1::NodePrepareResourcesRequest;
  using NodePrepareResourcesResponse = dra::v1beta1::NodePrepareResourcesResponse;
  using NodeUnprepareResourcesRequest = dra::v1beta1::NodeUnprepareResourcesRequest;
  using NodeUnprepareResourcesResponse = dra::v1beta1::NodeUnprepareResourcesResponse;
};

// A DRA driver: its endpoint (both versions on one socket) and its registration socket.
struct FakeDriver {
  FakeDra<DraApi1> v1;
  FakeDra<DraApi1beta1> v1beta1;
  std::unique_ptr<UnixGrpcServer> endpoint;
  std::unique_ptr<RegistrationServer> registration;

  FakeDriver(const Dir& dir, PluginInfo info, const std::string& registry = "") {
    auto e = UnixGrpcServer::Start(dir / "dra.sock", {&v1, &v1beta1});
    EXPECT_TRUE(e.ok()) << e.status().message();
    if (e.ok()) endpoint = std::move(e).value();
    auto r = RegistrationServer::Start(registry.empty() ? dir.path() : registry, std::move(info));
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (r.ok()) registration = std::move(r).value();
  }
};

PluginInfo GoodInfo(const Dir& dir) { return {"DRAPlugin", "gpu.fgpu.io", dir / "dra.sock", {"v1.DRAPlugin"}}; }

TEST(TestKubeletRegister, RegistersAGoodDriverAndTellsIt) {
  Dir dir;
  FakeDriver driver(dir, GoodInfo(dir));
  auto r = RegisterPlugin(dir / "gpu.fgpu.io-reg.sock", "DRAPlugin", "gpu.fgpu.io", 2s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->registered) << r->error;
  EXPECT_TRUE(driver.registration->Registered().ok());

  CliRun run = RunKubelet("register --registry " + dir.path() + " --type DRAPlugin --name gpu.fgpu.io --timeout 5");
  EXPECT_EQ(run.code, 0);
  EXPECT_EQ(run.out["registered"], true);
  EXPECT_EQ(run.out["endpoint"], dir / "dra.sock");
  EXPECT_EQ(run.out["versions"], nlohmann::json::array({"v1.DRAPlugin"}));
  EXPECT_EQ(driver.registration->info_requests(), 2);
}

struct BadInfoCase {
  const char* what;
  PluginInfo (*info)(const Dir&);
  const char* error;
};

class TestKubeletRefuses : public ::testing::TestWithParam<BadInfoCase> {};

TEST_P(TestKubeletRefuses, ABadPluginInfoAndSaysWhyToThePlugin) {
  Dir dir;
  FakeDriver driver(dir, GetParam().info(dir));
  auto r = RegisterPlugin(dir / "gpu.fgpu.io-reg.sock", "DRAPlugin", "gpu.fgpu.io", 2s);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->registered);
  EXPECT_NE(r->error.find(GetParam().error), std::string::npos) << r->error;
  Status told = driver.registration->Registered();
  EXPECT_EQ(told.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(told.message().find(GetParam().error), std::string::npos) << told.message();

  CliRun run = RunKubelet("register --registry " + dir.path() + " --type DRAPlugin --name gpu.fgpu.io --timeout 5");
  EXPECT_EQ(run.code, 1);
  EXPECT_EQ(run.out["registered"], false);
  EXPECT_NE(run.out["error"].get<std::string>().find(GetParam().error), std::string::npos) << run.out.dump();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TestKubeletRefuses,
    ::testing::Values(
        BadInfoCase{"WrongType",
                    [](const Dir& d) { return PluginInfo{"DevicePlugin", "gpu.fgpu.io", d / "dra.sock", {"v1.DRAPlugin"}}; },
                    "no handler registered for plugin type: DevicePlugin"},
        BadInfoCase{"RelativeEndpoint",
                    [](const Dir&) { return PluginInfo{"DRAPlugin", "gpu.fgpu.io", "dra.sock", {"v1.DRAPlugin"}}; },
                    "is not an absolute path"},
        BadInfoCase{"MissingEndpoint",
                    [](const Dir& d) { return PluginInfo{"DRAPlugin", "gpu.fgpu.io", d / "gone.sock", {"v1.DRAPlugin"}}; },
                    "is not an existing socket"},
        BadInfoCase{"NoSupportedVersion",
                    [](const Dir& d) { return PluginInfo{"DRAPlugin", "gpu.fgpu.io", d / "dra.sock", {"v1alpha4.DRAPlugin"}}; },
                    "none of the plugin's supported versions [v1alpha4.DRAPlugin]"},
        BadInfoCase{"NoVersionsAtAll",
                    [](const Dir& d) { return PluginInfo{"DRAPlugin", "gpu.fgpu.io", d / "dra.sock", {}}; },
                    "none of the plugin's supported versions []"}),
    [](const auto& p) { return std::string(p.param.what); });

TEST(TestKubeletRegister, FindsASocketByTheNameInItsInfo) {
  Dir dir;
  FakeDra<DraApi1> v1;
  auto endpoint = UnixGrpcServer::Start(dir / "dra.sock", {&v1});
  ASSERT_TRUE(endpoint.ok());
  // A rolling-update name: <driver>-<pod uid>-reg.sock.
  ASSERT_TRUE(std::filesystem::create_directory(dir / "reg"));
  auto reg = RegistrationServer::Start(dir / "reg", GoodInfo(dir));
  ASSERT_TRUE(reg.ok());
  std::filesystem::rename(dir / "reg/gpu.fgpu.io-reg.sock", dir / "gpu.fgpu.io-1234-reg.sock");
  auto found = WaitForRegistrationSocket(dir.path(), "gpu.fgpu.io", 2s);
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(*found, dir / "gpu.fgpu.io-1234-reg.sock");
  EXPECT_EQ(WaitForRegistrationSocket(dir.path(), "other.io", 100ms).status().code(), StatusCode::kNotFound);
}

TEST(TestKubeletWatchRegistry, RegistersAgainAfterAPluginRestart) {
  Dir dir;
  // The registry holds registration sockets only (a driver's endpoint is elsewhere).
  const std::string registry = dir / "registry";
  ASSERT_TRUE(std::filesystem::create_directory(registry));
  std::string events = dir / "events.jsonl";
  pid_t pid = fork();
  if (pid == 0) {
    execl(FGPU_TEST_KUBELET_PATH, FGPU_TEST_KUBELET_PATH, "watch-registry", "--registry", registry.c_str(), "--name",
          "gpu.fgpu.io", "--events", events.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  auto lines = [&] {
    std::vector<nlohmann::json> out;
    std::ifstream in(events);
    for (std::string l; std::getline(in, l);) out.push_back(nlohmann::json::parse(l));
    return out;
  };
  auto wait_for = [&](size_t n) {
    for (int i = 0; i < 500 && lines().size() < n; ++i) std::this_thread::sleep_for(10ms);
    return lines();
  };
  {
    FakeDriver first(dir, GoodInfo(dir), registry);
    auto got = wait_for(1);
    ASSERT_GE(got.size(), 1u);
    EXPECT_EQ(got[0]["event"], "registered");
    EXPECT_TRUE(first.registration->WaitRegistered(5s).ok());
  }  // the plugin stops: its sockets go
  FakeDriver second(dir, GoodInfo(dir), registry);
  auto got = wait_for(3);
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[1]["event"], "removed");
  EXPECT_EQ(got[2]["event"], "registered");
  EXPECT_TRUE(second.registration->WaitRegistered(5s).ok());
}

// ---------------------------------------------------------------- DRA calls

std::vector<ClaimRef> TwoClaims() { return {{"default", "a", "uid-a"}, {"default", "b", "uid-b"}}; }

TEST(TestKubeletDra, PreparesOverBothApis) {
  Dir dir;
  FakeDriver driver(dir, GoodInfo(dir));
  for (DraApi api : {DraApi::kV1, DraApi::kV1beta1}) {
    auto call = NodePrepareResources(dir / "dra.sock", api, TwoClaims(), 2s);
    ASSERT_TRUE(call.ok()) << call.status().message();
    EXPECT_TRUE(call->problem.ok()) << call->problem.message();
    const auto& dev = call->response["claims"]["uid-a"]["devices"][0];
    EXPECT_EQ(dev["pool_name"], "node-a");
    EXPECT_EQ(dev["device_name"], "gpu-0-slice-a");
    EXPECT_EQ(dev["request_names"], nlohmann::json::array({"gpu"}));
    EXPECT_EQ(dev["cdi_device_ids"], nlohmann::json::array({"fgpu.io/slice=uid-a"}));
    EXPECT_EQ(call->response["claims"]["uid-a"]["error"], "");
  }
  CliRun run = RunKubelet("prepare --endpoint " + dir / "dra.sock" + " --api v1beta1 --claim default/a/uid-a");
  EXPECT_EQ(run.code, 0);
  EXPECT_EQ(run.out["claims"]["uid-a"]["devices"][0]["device_name"], "gpu-0-slice-a");
  run = RunKubelet("unprepare --endpoint " + dir / "dra.sock" + " --api v1 --claim default/a/uid-a --claim default/b/uid-b");
  EXPECT_EQ(run.code, 0);
  EXPECT_EQ(run.out, nlohmann::json::parse(R"({"claims":{"uid-a":{"error":""},"uid-b":{"error":""}}})"));
}

TEST(TestKubeletDra, RefusesAResponseMissingAClaim) {
  Dir dir;
  FakeDriver driver(dir, GoodInfo(dir));
  driver.v1.omit = "uid-b";
  auto call = NodePrepareResources(dir / "dra.sock", DraApi::kV1, TwoClaims(), 2s);
  ASSERT_TRUE(call.ok());
  EXPECT_NE(call->problem.message().find("no entry for claim(s) uid-b"), std::string::npos) << call->problem.message();
  auto un = NodeUnprepareResources(dir / "dra.sock", DraApi::kV1, TwoClaims(), 2s);
  ASSERT_TRUE(un.ok());
  EXPECT_FALSE(un->problem.ok());

  CliRun run = RunKubelet("prepare --endpoint " + dir / "dra.sock" + " --api v1 --claim default/a/uid-a --claim default/b/uid-b");
  EXPECT_EQ(run.code, 1);
  EXPECT_TRUE(run.out["claims"].contains("uid-a"));
  EXPECT_NE(run.out["error"].get<std::string>().find("uid-b"), std::string::npos);
  // The same driver is fine over v1beta1, which omits nothing.
  EXPECT_EQ(RunKubelet("prepare --endpoint " + dir / "dra.sock" + " --api v1beta1 --claim default/b/uid-b").code, 0);
}

TEST(TestKubeletDra, FailsWhenTheRpcFails) {
  Dir dir;
  CliRun run = RunKubelet("prepare --endpoint " + dir / "none.sock" + " --api v1 --claim default/a/uid-a --timeout-ms 500");
  EXPECT_EQ(run.code, 1);
  EXPECT_NE(run.out["error"].get<std::string>().find("NodePrepareResources"), std::string::npos);
  EXPECT_EQ(RunKubelet("prepare --endpoint x --api v2 --claim default/a/uid-a").code, 1);
  EXPECT_EQ(ParseClaim("default/a").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseClaim("a/b/c/d").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseClaim("ns/name/uid")->uid, "uid");
}

// ---------------------------------------------------------------- device plugins

class FakeDevicePlugin final : public ::v1beta1::DevicePlugin::Service {
 public:
  std::vector<std::pair<std::string, std::string>> devices{{"gpu-0-shard-0", "Healthy"}, {"gpu-0-shard-1", "Healthy"},
                                                           {"gpu-0-shard-2", "Unhealthy"}};
  std::atomic<int> pre_starts{0};

  grpc::Status GetDevicePluginOptions(grpc::ServerContext*, const ::v1beta1::Empty*,
                                      ::v1beta1::DevicePluginOptions* out) override {
    out->set_pre_start_required(true);
    out->set_get_preferred_allocation_available(true);
    return grpc::Status::OK;
  }
  grpc::Status ListAndWatch(grpc::ServerContext* ctx, const ::v1beta1::Empty*,
                            grpc::ServerWriter<::v1beta1::ListAndWatchResponse>* writer) override {
    ::v1beta1::ListAndWatchResponse r;
    for (const auto& [id, health] : devices) {
      auto* d = r.add_devices();
      d->set_id(id);
      d->set_health(health);
    }
    writer->Write(r);
    while (!ctx->IsCancelled()) std::this_thread::sleep_for(10ms);
    return grpc::Status::OK;
  }
  grpc::Status GetPreferredAllocation(grpc::ServerContext*, const ::v1beta1::PreferredAllocationRequest* in,
                                      ::v1beta1::PreferredAllocationResponse* out) override {
    for (const auto& c : in->container_requests()) {
      auto* r = out->add_container_responses();
      for (int i = 0; i < c.allocation_size() && i < c.available_deviceids_size(); ++i) {
        r->add_deviceids(c.available_deviceids(i));
      }
    }
    return grpc::Status::OK;
  }
  grpc::Status Allocate(grpc::ServerContext*, const ::v1beta1::AllocateRequest* in,
                        ::v1beta1::AllocateResponse* out) override {
    for (const auto& c : in->container_requests()) {
      auto* r = out->add_container_responses();
      (*r->mutable_envs())["FGPU_SHARDS"] = std::to_string(c.devices_ids_size());
      auto* m = r->add_mounts();
      m->set_container_path("/usr/lib/fgpu");
      m->set_host_path("/opt/fgpu/lib");
      m->set_read_only(true);
      r->add_cdi_devices()->set_name("fgpu.io/shard=" + c.devices_ids(0));
    }
    return grpc::Status::OK;
  }
  grpc::Status PreStartContainer(grpc::ServerContext*, const ::v1beta1::PreStartContainerRequest*,
                                 ::v1beta1::PreStartContainerResponse*) override {
    ++pre_starts;
    return grpc::Status::OK;
  }
};

template <typename F>
bool Eventually(F done) {
  for (int i = 0; i < 500 && !done(); ++i) std::this_thread::sleep_for(10ms);
  return done();
}

DevicePluginRegistration Shard(const Dir& dir, std::string endpoint = "fgpu.sock") {
  return {dir.path(), std::move(endpoint), "fgpu.io/shard", true, true};
}

TEST(TestKubeletDevicePlugin, FollowsARegisteredPluginAndAllocates) {
  Dir dir;
  auto kubelet = DevicePluginKubelet::Start(dir.path(), "");
  ASSERT_TRUE(kubelet.ok()) << kubelet.status().message();
  FakeDevicePlugin plugin;
  auto served = UnixGrpcServer::Start(dir / "fgpu.sock", {&plugin});
  ASSERT_TRUE(served.ok());
  ASSERT_TRUE(RegisterDevicePlugin(Shard(dir), 2s).ok());
  ASSERT_TRUE(Eventually([&] { return (*kubelet)->State()["resources"]["fgpu.io/shard"]["updates"] == 1; }));
  nlohmann::json state = nlohmann::json::parse(std::ifstream(DefaultStatePath(dir.path())));
  const auto& r = state["resources"]["fgpu.io/shard"];
  EXPECT_EQ(r["endpoint"], "fgpu.sock");
  EXPECT_EQ(r["options"]["pre_start_required"], true);
  EXPECT_EQ(r["devices"].size(), 3u);
  EXPECT_EQ(r["devices"][2], nlohmann::json::parse(R"({"id":"gpu-0-shard-2","health":"Unhealthy"})"));
  EXPECT_EQ(r["connected"], true);

  CliRun run = RunKubelet("allocate --dir " + dir.path() +
                       " --resource fgpu.io/shard --preferred-from gpu-0-shard-1,gpu-0-shard-0 --size 1");
  ASSERT_EQ(run.code, 0) << run.out.dump();
  EXPECT_EQ(run.out["preferred"], nlohmann::json::array({"gpu-0-shard-1"}));
  EXPECT_EQ(run.out["allocated"], nlohmann::json::array({"gpu-0-shard-1"}));
  EXPECT_EQ(run.out["envs"]["FGPU_SHARDS"], "1");
  EXPECT_EQ(run.out["mounts"][0]["read_only"], true);
  EXPECT_EQ(run.out["cdi_devices"], nlohmann::json::array({"fgpu.io/shard=gpu-0-shard-1"}));
  EXPECT_EQ(run.out["pre_start_called"], true);
  EXPECT_EQ(plugin.pre_starts.load(), 1);
  // The kubelet allocates only healthy devices it was told about.
  EXPECT_EQ(RunKubelet("allocate --dir " + dir.path() + " --resource fgpu.io/shard --devices gpu-0-shard-2").code, 1);
  EXPECT_EQ(RunKubelet("allocate --dir " + dir.path() + " --resource fgpu.io/shard --devices nope").code, 1);
  EXPECT_EQ(RunKubelet("allocate --dir " + dir.path() + " --resource fgpu.io/other --devices gpu-0-shard-0").code, 1);
}

TEST(TestKubeletDevicePlugin, RefusesWhatTheKubeletRefuses) {
  Dir dir;
  auto kubelet = DevicePluginKubelet::Start(dir.path(), "");
  ASSERT_TRUE(kubelet.ok());
  FakeDevicePlugin plugin;
  auto served = UnixGrpcServer::Start(dir / "fgpu.sock", {&plugin});
  ASSERT_TRUE(served.ok());
  ASSERT_TRUE(RegisterDevicePlugin(Shard(dir), 2s).ok());
  ASSERT_TRUE(Eventually([&] { return (*kubelet)->State()["resources"]["fgpu.io/shard"]["connected"] == true; }));
  // The same resource name while its plugin lives.
  Status twice = RegisterDevicePlugin(Shard(dir, "other.sock"), 2s);
  EXPECT_EQ(twice.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(twice.message().find("already registered"), std::string::npos) << twice.message();
  // Names the kubelet does not take as extended resources.
  EXPECT_FALSE(ValidateExtendedResourceName("shard").ok());
  EXPECT_FALSE(ValidateExtendedResourceName("kubernetes.io/shard").ok());
  EXPECT_FALSE(ValidateExtendedResourceName("FGPU.io/shard").ok());
  EXPECT_TRUE(ValidateExtendedResourceName("fgpu.io/shard").ok());
  // A version the kubelet does not speak, sent by hand.
  auto stub = ::v1beta1::Registration::NewStub(DialUnix(dir / "kubelet.sock"));
  ::v1beta1::RegisterRequest req;
  req.set_version("v1alpha");
  req.set_endpoint("x.sock");
  req.set_resource_name("fgpu.io/x");
  grpc::ClientContext ctx;
  ::v1beta1::Empty out;
  grpc::Status st = stub->Register(&ctx, req, &out);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.error_message().find("not supported"), std::string::npos);
}

TEST(TestKubeletDevicePlugin, ARestartDeletesPluginSocketsAndTheRegistrarComesBack) {
  Dir dir;
  auto kubelet = DevicePluginKubelet::Start(dir.path(), "");
  ASSERT_TRUE(kubelet.ok());
  FakeDevicePlugin plugin;
  std::mutex mu;
  std::unique_ptr<UnixGrpcServer> serving = std::move(UnixGrpcServer::Start(dir / "fgpu.sock", {&plugin})).value();
  DevicePluginRegistrar::Hooks hooks;
  hooks.recreate_endpoint = [&]() -> Status {
    std::lock_guard lock(mu);
    serving.reset();
    auto again = UnixGrpcServer::Start(dir / "fgpu.sock", {&plugin});
    if (!again.ok()) return again.status();
    serving = std::move(again).value();
    return Status::Ok();
  };
  auto registrar = DevicePluginRegistrar::Start(Shard(dir), hooks, 5s);
  ASSERT_TRUE(registrar.ok()) << registrar.status().message();
  ASSERT_TRUE(Eventually([&] { return (*kubelet)->State()["resources"]["fgpu.io/shard"]["updates"] == 1; }));

  ASSERT_TRUE((*kubelet)->Restart().ok());
  ASSERT_TRUE(Eventually([&] { return (*registrar)->registrations() == 2; })) << (*registrar)->last_status().message();
  ASSERT_TRUE(Eventually([&] { return (*kubelet)->State()["resources"]["fgpu.io/shard"]["updates"] == 1; }));
  EXPECT_EQ((*kubelet)->State()["restarts"], 1);
  std::lock_guard lock(mu);
  EXPECT_TRUE(serving->SocketIsOurs());
}

}  // namespace
}  // namespace fgpu::k8s::test
