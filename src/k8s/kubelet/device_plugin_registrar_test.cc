#include "k8s/kubelet/device_plugin_registrar.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <mutex>
#include <thread>

#include "deviceplugin_v1beta1.grpc.pb.h"
#include "k8s/kubelet/kubelet_test_support.h"
#include "k8s/kubelet/unix_grpc_server.h"

namespace fgpu::k8s {
namespace {

using namespace std::chrono_literals;
using testing::SocketDir;

// The kubelet's Registration service; refuses when told to, records what it got.
class FakeKubelet final : public ::v1beta1::Registration::Service {
 public:
  grpc::Status Register(grpc::ServerContext*, const ::v1beta1::RegisterRequest* in, ::v1beta1::Empty*) override {
    std::lock_guard lock(mu_);
    requests_.push_back(*in);
    if (!refusal_.empty()) return {grpc::StatusCode::UNKNOWN, refusal_};
    return grpc::Status::OK;
  }
  void Refuse(std::string why) {
    std::lock_guard lock(mu_);
    refusal_ = std::move(why);
  }
  std::vector<::v1beta1::RegisterRequest> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  std::mutex mu_;
  std::vector<::v1beta1::RegisterRequest> requests_;
  std::string refusal_;
};

// A device plugin's own socket (what it serves does not matter to registration).
class Plugin final : public ::v1beta1::DevicePlugin::Service {};

DevicePluginRegistration Shard(const SocketDir& dir) {
  return {dir.path(), "fgpu-shard.sock", "fgpu.io/shard", true, true};
}

template <typename F>
bool Eventually(F done, std::chrono::milliseconds within = 5s) {
  for (auto until = std::chrono::steady_clock::now() + within; std::chrono::steady_clock::now() < until;) {
    if (done()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return done();
}

TEST(DevicePluginRegistrar, RegistersWhatTheKubeletExpects) {
  SocketDir dir;
  FakeKubelet kubelet;
  auto kubelet_server = UnixGrpcServer::Start(dir / "kubelet.sock", {&kubelet});
  ASSERT_TRUE(kubelet_server.ok());
  Status s = RegisterDevicePlugin(Shard(dir), 2s);
  ASSERT_TRUE(s.ok()) << s.message();
  auto got = kubelet.requests();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].version(), "v1beta1");
  EXPECT_EQ(got[0].endpoint(), "fgpu-shard.sock");
  EXPECT_EQ(got[0].resource_name(), "fgpu.io/shard");
  EXPECT_TRUE(got[0].options().pre_start_required());
  EXPECT_TRUE(got[0].options().get_preferred_allocation_available());
}

TEST(DevicePluginRegistrar, ReportsTheKubeletsRefusal) {
  SocketDir dir;
  FakeKubelet kubelet;
  kubelet.Refuse("resource name fgpu.io/shard is already registered");
  auto kubelet_server = UnixGrpcServer::Start(dir / "kubelet.sock", {&kubelet});
  ASSERT_TRUE(kubelet_server.ok());
  auto r = DevicePluginRegistrar::Start(Shard(dir), {}, 2s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("refused device plugin fgpu.io/shard"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("already registered"), std::string::npos);
}

TEST(DevicePluginRegistrar, SaysWhenNoKubeletAnswers) {
  SocketDir dir;
  auto r = DevicePluginRegistrar::Start(Shard(dir), {}, 200ms);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find(dir / "kubelet.sock"), std::string::npos) << r.status().message();
}

TEST(DevicePluginRegistrar, RefusesRegistrationsNoKubeletAccepts) {
  SocketDir dir;
  auto bad = Shard(dir);
  bad.endpoint = dir / "x.sock";  // a path, not a file name
  EXPECT_EQ(ValidateRegistration(bad).code(), StatusCode::kInvalidArgument);
  bad = Shard(dir);
  bad.resource_name = "shard";
  EXPECT_EQ(ValidateRegistration(bad).code(), StatusCode::kInvalidArgument);
  bad = Shard(dir);
  bad.plugin_dir = dir / "missing";
  EXPECT_EQ(ValidateRegistration(bad).code(), StatusCode::kNotFound);
  EXPECT_TRUE(ValidateRegistration(Shard(dir)).ok());
}

TEST(DevicePluginRegistrar, ServesAgainAndReRegistersAfterAKubeletRestart) {
  SocketDir dir;
  FakeKubelet kubelet;
  auto kubelet_server = UnixGrpcServer::Start(dir / "kubelet.sock", {&kubelet});
  ASSERT_TRUE(kubelet_server.ok());
  Plugin plugin;
  std::mutex mu;
  auto plugin_server = UnixGrpcServer::Start(dir / "fgpu-shard.sock", {&plugin});
  ASSERT_TRUE(plugin_server.ok());
  std::unique_ptr<UnixGrpcServer> serving = std::move(plugin_server).value();
  int recreated = 0;
  std::vector<Status> outcomes;
  DevicePluginRegistrar::Hooks hooks;
  hooks.recreate_endpoint = [&]() -> Status {
    std::lock_guard lock(mu);
    ++recreated;
    serving.reset();
    auto again = UnixGrpcServer::Start(dir / "fgpu-shard.sock", {&plugin});
    if (!again.ok()) return again.status();
    serving = std::move(again).value();
    return Status::Ok();
  };
  hooks.on_register = [&](const Status& s) {
    std::lock_guard lock(mu);
    outcomes.push_back(s);
  };
  auto registrar = DevicePluginRegistrar::Start(Shard(dir), hooks, 5s);
  ASSERT_TRUE(registrar.ok()) << registrar.status().message();
  EXPECT_EQ((*registrar)->registrations(), 1);

  // What a restarting kubelet does: its old socket goes, every plugin socket is deleted, a new
  // kubelet.sock appears.
  (*kubelet_server)->Shutdown();
  std::filesystem::remove(dir / "fgpu-shard.sock");
  auto restarted = UnixGrpcServer::Start(dir / "kubelet.sock", {&kubelet});
  ASSERT_TRUE(restarted.ok());

  ASSERT_TRUE(Eventually([&] { return (*registrar)->registrations() == 2; }));
  EXPECT_TRUE((*registrar)->last_status().ok());
  EXPECT_EQ(kubelet.requests().size(), 2u);
  std::lock_guard lock(mu);
  EXPECT_EQ(recreated, 1);
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_TRUE(outcomes[0].ok());
  EXPECT_TRUE(serving->SocketIsOurs());
}

}  // namespace
}  // namespace fgpu::k8s
