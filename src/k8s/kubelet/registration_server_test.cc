#include "k8s/kubelet/registration_server.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>

#include "k8s/kubelet/kubelet_test_support.h"
#include "k8s/kubelet/unix_grpc_server.h"
#include "pluginregistration.grpc.pb.h"

namespace fgpu::k8s {
namespace {

using testing::SocketDir;

PluginInfo DraInfo(const SocketDir& dir) {
  return {kDraPluginType, "gpu.fgpu.io", dir / "dra.sock", {kDraV1Service, kDraV1beta1Service}};
}

// The kubelet's two calls, as it makes them.
struct Kubelet {
  std::unique_ptr<::pluginregistration::Registration::Stub> stub;
  explicit Kubelet(const std::string& path) : stub(::pluginregistration::Registration::NewStub(DialUnix(path))) {}
  ::pluginregistration::PluginInfo GetInfo() {
    grpc::ClientContext ctx;
    ::pluginregistration::PluginInfo out;
    EXPECT_TRUE(stub->GetInfo(&ctx, {}, &out).ok());
    return out;
  }
  void Notify(bool ok, const std::string& error = "") {
    grpc::ClientContext ctx;
    ::pluginregistration::RegistrationStatus in;
    in.set_plugin_registered(ok);
    in.set_error(error);
    ::pluginregistration::RegistrationStatusResponse out;
    EXPECT_TRUE(stub->NotifyRegistrationStatus(&ctx, in, &out).ok());
  }
};

TEST(RegistrationServer, AnswersGetInfoOnNameRegSock) {
  SocketDir dir;
  auto server = RegistrationServer::Start(dir.path(), DraInfo(dir));
  ASSERT_TRUE(server.ok()) << server.status().message();
  EXPECT_EQ((*server)->socket_path(), dir / "gpu.fgpu.io-reg.sock");
  auto info = Kubelet(dir / "gpu.fgpu.io-reg.sock").GetInfo();
  EXPECT_EQ(info.type(), "DRAPlugin");
  EXPECT_EQ(info.name(), "gpu.fgpu.io");
  EXPECT_EQ(info.endpoint(), dir / "dra.sock");
  ASSERT_EQ(info.supported_versions_size(), 2);
  EXPECT_EQ(info.supported_versions(0), "v1.DRAPlugin");
  EXPECT_EQ(info.supported_versions(1), "v1beta1.DRAPlugin");
}

TEST(RegistrationServer, RecordsTheKubeletsVerdictAndCallsBack) {
  SocketDir dir;
  std::atomic<int> reports{0};
  RegistrationReport last;
  auto server = RegistrationServer::Start(dir.path(), DraInfo(dir), [&](const RegistrationReport& r) {
    last = r;
    ++reports;
  });
  ASSERT_TRUE(server.ok());
  EXPECT_EQ((*server)->Registered().code(), StatusCode::kUnavailable);
  Kubelet kubelet((*server)->socket_path());
  kubelet.GetInfo();
  kubelet.Notify(false, "no supported version");
  Status refused = (*server)->Registered();
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("no supported version"), std::string::npos);
  EXPECT_FALSE(last.registered);
  kubelet.Notify(true);
  EXPECT_TRUE((*server)->Registered().ok());
  EXPECT_TRUE(last.registered);
  EXPECT_EQ(reports.load(), 2);
}

TEST(RegistrationServer, WaitsForTheFirstReport) {
  SocketDir dir;
  auto server = RegistrationServer::Start(dir.path(), DraInfo(dir));
  ASSERT_TRUE(server.ok());
  EXPECT_EQ((*server)->WaitRegistered(std::chrono::milliseconds(20)).code(), StatusCode::kUnavailable);
  std::thread kubelet([&] { Kubelet((*server)->socket_path()).Notify(true); });
  EXPECT_TRUE((*server)->WaitRegistered(std::chrono::seconds(5)).ok());
  kubelet.join();
}

TEST(RegistrationServer, SurvivesAKubeletRestart) {
  SocketDir dir;
  auto server = RegistrationServer::Start(dir.path(), DraInfo(dir));
  ASSERT_TRUE(server.ok());
  {
    Kubelet first((*server)->socket_path());
    first.GetInfo();
    first.Notify(true);
  }
  // A new kubelet process: a new connection, the same two calls.
  Kubelet second((*server)->socket_path());
  EXPECT_EQ(second.GetInfo().name(), "gpu.fgpu.io");
  second.Notify(true);
  EXPECT_EQ((*server)->info_requests(), 2);
  EXPECT_TRUE((*server)->Registered().ok());
}

TEST(RegistrationServer, StopRemovesItsSocket) {
  SocketDir dir;
  auto server = RegistrationServer::Start(dir.path(), DraInfo(dir));
  ASSERT_TRUE(server.ok());
  (*server)->Stop();
  (*server)->Stop();
  EXPECT_FALSE(std::filesystem::exists(dir / "gpu.fgpu.io-reg.sock"));
}

TEST(RegistrationServer, RefusesIncompleteInfo) {
  SocketDir dir;
  EXPECT_FALSE(RegistrationServer::Start(dir.path(), {kDraPluginType, "", dir / "dra.sock", {}}).ok());
  EXPECT_FALSE(RegistrationServer::Start(dir.path(), {kDraPluginType, "a/b", dir / "dra.sock", {}}).ok());
  EXPECT_FALSE(RegistrationServer::Start(dir.path(), {"", "n", dir / "dra.sock", {}}).ok());
}

}  // namespace
}  // namespace fgpu::k8s
