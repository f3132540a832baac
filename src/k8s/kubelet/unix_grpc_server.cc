#include "k8s/kubelet/unix_grpc_server.h"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace fgpu::k8s {
namespace {

// Removes the private directory the socket was bound in, whatever state it was left in.
struct TempDir {
  std::string path;
  ~TempDir() {
    if (path.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

}  // namespace

bool FitsUnixSocketPath(const std::string& path) { return path.size() < sizeof(sockaddr_un{}.sun_path); }

Result<std::unique_ptr<UnixGrpcServer>> UnixGrpcServer::Start(const std::string& socket_path,
                                                              const std::vector<grpc::Service*>& services,
                                                              UnixGrpcServerOptions options) {
  if (socket_path.empty()) return Status::InvalidArgument("empty socket path");
  if (!FitsUnixSocketPath(socket_path)) {
    return Status::InvalidArgument("socket path " + socket_path + " is longer than a Unix socket path may be (" +
                                   std::to_string(sizeof(sockaddr_un{}.sun_path) - 1) + " bytes)");
  }
  struct stat st{};
  if (lstat(socket_path.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode)) {
    return Status::InvalidArgument(socket_path + " exists and is not a socket; not replacing it");
  }
  std::string dir = std::filesystem::path(socket_path).parent_path().string();
  if (dir.empty()) dir = ".";
  // Short names: the bound path must fit in sun_path too.
  TempDir tmp{dir + "/.fgpu-XXXXXX"};
  if (!FitsUnixSocketPath(tmp.path + "/s")) {
    return Status::InvalidArgument("directory " + dir + " is too deep for a Unix socket of fgpu's");
  }
  if (mkdtemp(tmp.path.data()) == nullptr) {
    std::string err = ErrnoMessage("cannot create a directory in " + dir);
    tmp.path.clear();
    return Status::Unavailable(err);
  }
  const std::string bound = tmp.path + "/s";

  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + bound, grpc::InsecureServerCredentials());
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  for (grpc::Service* s : services) builder.RegisterService(s);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) return Status::Unavailable("gRPC could not listen on " + bound);
  if (chmod(bound.c_str(), options.mode) != 0 || rename(bound.c_str(), socket_path.c_str()) != 0 ||
      lstat(socket_path.c_str(), &st) != 0) {
    std::string err = ErrnoMessage("cannot put the socket in place at " + socket_path);
    server->Shutdown(std::chrono::system_clock::now());
    return Status::Unavailable(err);
  }
  return std::unique_ptr<UnixGrpcServer>(new UnixGrpcServer(socket_path, std::move(server), st.st_dev, st.st_ino));
}

UnixGrpcServer::UnixGrpcServer(std::string path, std::unique_ptr<grpc::Server> server, dev_t dev, ino_t ino)
    : path_(std::move(path)), server_(std::move(server)), dev_(dev), ino_(ino) {}

UnixGrpcServer::~UnixGrpcServer() { Shutdown(); }

bool UnixGrpcServer::SocketIsOurs() const {
  struct stat st{};
  return lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_;
}

void UnixGrpcServer::Shutdown(std::chrono::milliseconds deadline) {
  if (!server_) return;
  if (SocketIsOurs()) unlink(path_.c_str());
  server_->Shutdown(std::chrono::system_clock::now() + deadline);
  server_->Wait();
  server_.reset();
}

std::shared_ptr<grpc::Channel> DialUnix(const std::string& socket_path, int max_message_bytes) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(max_message_bytes);
  args.SetMaxSendMessageSize(max_message_bytes);
  // A fresh connection per channel: a restarted peer at the same path is a new server, and
  // gRPC's subchannel sharing would otherwise hand back a connection to the dead one.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel("unix:" + socket_path, grpc::InsecureChannelCredentials(), args);
}

}  // namespace fgpu::k8s
