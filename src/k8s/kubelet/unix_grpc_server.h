// A gRPC server on a Unix domain socket, the transport of every kubelet contract: the socket
// appears at its path already listening and with its final mode (it is bound in a private
// directory beside the path and renamed into place), so a kubelet watching the directory never
// dials a half-made socket, and a stale socket left by a crashed predecessor is replaced.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace grpc {
class Server;
class Service;
class Channel;
}  // namespace grpc

namespace fgpu::k8s {

struct UnixGrpcServerOptions {
  mode_t mode = 0600;  // the kubelet runs as root; nobody else needs to connect
  // Bounds what one peer can make us buffer; the kubelet's messages are far smaller.
  int max_message_bytes = 4 << 20;
};

class UnixGrpcServer {
 public:
  // Serves `services` (not owned; they must outlive the server) on `socket_path`. Fails when the
  // path is too long for a socket, its directory is missing, or a non-socket file is in the way.
  static Result<std::unique_ptr<UnixGrpcServer>> Start(const std::string& socket_path,
                                                       const std::vector<grpc::Service*>& services,
                                                       UnixGrpcServerOptions options = {});
  ~UnixGrpcServer();  // Shutdown(1 s)
  UnixGrpcServer(const UnixGrpcServer&) = delete;
  UnixGrpcServer& operator=(const UnixGrpcServer&) = delete;

  // Stops accepting, gives in-flight calls (and open streams) until `deadline` to finish, then
  // cancels them, and removes the socket file if it is still ours (a successor may have replaced
  // it). Idempotent.
  void Shutdown(std::chrono::milliseconds deadline = std::chrono::seconds(1));

  const std::string& socket_path() const { return path_; }
  // False once the socket file was removed or replaced by someone else (a restarted kubelet
  // deletes the device plugins' sockets): the server still runs but nobody can dial it.
  bool SocketIsOurs() const;

 private:
  UnixGrpcServer(std::string path, std::unique_ptr<grpc::Server> server, dev_t dev, ino_t ino);
  std::string path_;
  std::unique_ptr<grpc::Server> server_;
  dev_t dev_;
  ino_t ino_;
};

// A channel to the gRPC server on `socket_path`. RPCs on it fail fast (UNAVAILABLE) when nothing
// listens there.
std::shared_ptr<grpc::Channel> DialUnix(const std::string& socket_path, int max_message_bytes = 4 << 20);

// Whether `path` fits in sockaddr_un (107 bytes and a NUL).
bool FitsUnixSocketPath(const std::string& path);

}  // namespace fgpu::k8s
