#include "k8s/kubelet/unix_grpc_server.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fstream>

#include "k8s/kubelet/kubelet_test_support.h"
#include "pluginregistration.grpc.pb.h"

namespace fgpu::k8s {
namespace {

using testing::SocketDir;

class EchoInfo final : public ::pluginregistration::Registration::Service {
 public:
  grpc::Status GetInfo(grpc::ServerContext*, const ::pluginregistration::InfoRequest*,
                       ::pluginregistration::PluginInfo* out) override {
    out->set_name("echo");
    return grpc::Status::OK;
  }
};

bool Answers(const std::string& path) {
  auto stub = ::pluginregistration::Registration::NewStub(DialUnix(path));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  ::pluginregistration::PluginInfo out;
  return stub->GetInfo(&ctx, {}, &out).ok() && out.name() == "echo";
}

mode_t ModeOf(const std::string& path) {
  struct stat st{};
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// A socket file nobody listens on, as a crashed server leaves behind.
void MakeStaleSocket(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  path.copy(addr.sun_path, sizeof addr.sun_path - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  close(fd);
}

TEST(UnixGrpcServer, ServesOnItsPathWithMode0600) {
  SocketDir dir;
  EchoInfo service;
  auto server = UnixGrpcServer::Start(dir / "a.sock", {&service});
  ASSERT_TRUE(server.ok()) << server.status().message();
  EXPECT_EQ(ModeOf(dir / "a.sock"), 0600u);
  EXPECT_TRUE(Answers(dir / "a.sock"));
  // Only the socket is left in the directory: the private bind directory is gone.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
}

TEST(UnixGrpcServer, TakesAGivenMode) {
  SocketDir dir;
  EchoInfo service;
  auto server = UnixGrpcServer::Start(dir / "a.sock", {&service}, {.mode = 0660});
  ASSERT_TRUE(server.ok()) << server.status().message();
  EXPECT_EQ(ModeOf(dir / "a.sock"), 0660u);
}

TEST(UnixGrpcServer, ReplacesAStaleSocket) {
  SocketDir dir;
  MakeStaleSocket(dir / "a.sock");
  EchoInfo service;
  auto server = UnixGrpcServer::Start(dir / "a.sock", {&service});
  ASSERT_TRUE(server.ok()) << server.status().message();
  EXPECT_TRUE(Answers(dir / "a.sock"));
}

TEST(UnixGrpcServer, RefusesToReplaceAFileThatIsNoSocket) {
  SocketDir dir;
  std::ofstream(dir / "a.sock") << "data";
  EchoInfo service;
  auto server = UnixGrpcServer::Start(dir / "a.sock", {&service});
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(server.status().message().find("not a socket"), std::string::npos);
}

TEST(UnixGrpcServer, RefusesAPathTooLongForASocket) {
  EchoInfo service;
  auto server = UnixGrpcServer::Start("/tmp/" + std::string(120, 'x') + ".sock", {&service});
  ASSERT_FALSE(server.ok());
  EXPECT_NE(server.status().message().find("longer than"), std::string::npos);
}

TEST(UnixGrpcServer, FailsInAMissingDirectory) {
  EchoInfo service;
  auto server = UnixGrpcServer::Start("/tmp/fgpu-no-such-dir-k8s/a.sock", {&service});
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), StatusCode::kUnavailable);
}

TEST(UnixGrpcServer, ShutdownRemovesItsSocket) {
  SocketDir dir;
  EchoInfo service;
  auto server = UnixGrpcServer::Start(dir / "a.sock", {&service});
  ASSERT_TRUE(server.ok());
  (*server)->Shutdown();
  EXPECT_FALSE(std::filesystem::exists(dir / "a.sock"));
  EXPECT_FALSE(Answers(dir / "a.sock"));
}

TEST(UnixGrpcServer, ShutdownLeavesASuccessorsSocket) {
  SocketDir dir;
  EchoInfo first_service, second_service;
  auto first = UnixGrpcServer::Start(dir / "a.sock", {&first_service});
  ASSERT_TRUE(first.ok());
  auto second = UnixGrpcServer::Start(dir / "a.sock", {&second_service});
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE((*first)->SocketIsOurs());
  (*first)->Shutdown();
  EXPECT_TRUE((*second)->SocketIsOurs());
  EXPECT_TRUE(Answers(dir / "a.sock"));
}

TEST(UnixGrpcServer, KnowsWhenItsSocketWasDeleted) {
  SocketDir dir;
  EchoInfo service;
  auto server = UnixGrpcServer::Start(dir / "a.sock", {&service});
  ASSERT_TRUE(server.ok());
  EXPECT_TRUE((*server)->SocketIsOurs());
  std::filesystem::remove(dir / "a.sock");
  EXPECT_FALSE((*server)->SocketIsOurs());
}

}  // namespace
}  // namespace fgpu::k8s
