// The board handout socket (see board_server.h).
#include "agent/board_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <vector>

#include "agent/slice_service.h"
#include "compute/board.h"
#include "compute/board_handout.h"

namespace fgpu::agent {
namespace {

struct Pending {
  int fd = -1;
  uid_t uid = 0;
  int64_t deadline_ns = 0;
};

}  // namespace

BoardServer::BoardServer(const BoardRegistry* registry, MayHave may_have)
    : registry_(registry), may_have_(std::move(may_have)) {}

BoardServer::~BoardServer() {
  Stop();
  if (listener_ >= 0) ::close(listener_);
  for (int fd : wake_) {
    if (fd >= 0) ::close(fd);
  }
}

Status BoardServer::Listen(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) {
    return Status::InvalidArgument("board_socket " + path + ": the path does not fit a Unix socket address");
  }
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), error);
  struct stat info {};
  if (::lstat(path.c_str(), &info) == 0) {
    // A socket left by an agent that was killed; anything else there is not ours to remove.
    if (!S_ISSOCK(info.st_mode)) return Status::InvalidArgument("board_socket " + path + " exists and is not a socket");
    ::unlink(path.c_str());
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  listener_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listener_ < 0) return Status::Unavailable("board_socket: socket: " + std::string(std::strerror(errno)));
  if (::bind(listener_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 ||
      ::chmod(path.c_str(), 0666) != 0 || ::listen(listener_, 128) != 0) {
    return Status::Unavailable("board_socket " + path + ": " + std::strerror(errno));
  }
  path_ = path;
  return Status::Ok();
}

Status BoardServer::Start() {
  if (listener_ < 0) return Status::InvalidArgument("board_socket: Listen first");
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) return Status::Unavailable(std::string("pipe: ") + std::strerror(errno));
  thread_ = std::thread([this] { Serve(); });
  return Status::Ok();
}

void BoardServer::Stop() {
  if (!thread_.joinable()) return;
  const char byte = 0;
  (void)!::write(wake_[1], &byte, 1);
  thread_.join();
  if (!path_.empty()) ::unlink(path_.c_str());
}

void BoardServer::Serve() {
  std::vector<Pending> pending;
  std::map<uid_t, int> per_uid;
  const auto drop = [&](size_t index) {
    ::close(pending[index].fd);
    if (--per_uid[pending[index].uid] == 0) per_uid.erase(pending[index].uid);
    pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(index));
  };
  for (;;) {
    std::vector<pollfd> polled = {{wake_[0], POLLIN, 0}, {listener_, POLLIN, 0}};
    int64_t next_deadline = INT64_MAX;
    for (const Pending& one : pending) {
      polled.push_back({one.fd, POLLIN, 0});
      next_deadline = std::min(next_deadline, one.deadline_ns);
    }
    const int64_t now = compute::MonotonicNs();
    const int timeout =
        next_deadline == INT64_MAX ? -1 : static_cast<int>(std::max<int64_t>(0, (next_deadline - now) / 1'000'000 + 1));
    if (::poll(polled.data(), polled.size(), timeout) < 0 && errno != EINTR) break;
    if (polled[0].revents != 0) break;
    // Answer what has arrived, drop what is overdue (from the back: indices stay valid).
    const int64_t after = compute::MonotonicNs();
    for (size_t i = pending.size(); i-- > 0;) {
      const short events = polled[i + 2].revents;
      if (events != 0) {
        Result<std::string> request = compute::ReadBoardRequest(pending[i].fd);
        if (!request.ok() && request.status().code() == StatusCode::kNotFound && (events & (POLLHUP | POLLERR)) == 0) {
          continue;  // woken without a message yet
        }
        if (request.ok()) {
          Answer(pending[i].fd, pending[i].uid, *request);
        } else if (request.status().code() == StatusCode::kInvalidArgument) {
          compute::SendBoardReply(pending[i].fd, compute::HandoutCode::kBadRequest, request.status().message(), nullptr);
          refused_.fetch_add(1, std::memory_order_relaxed);
        }
        drop(i);
      } else if (after >= pending[i].deadline_ns) {
        drop(i);
      }
    }
    if (polled[1].revents == 0) continue;
    for (;;) {
      const int connection = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (connection < 0) break;
      ucred peer{};
      socklen_t size = sizeof(peer);
      bool keep = ::getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &peer, &size) == 0 &&
                  static_cast<int>(pending.size()) < kMaxPending;
      if (keep) {
        const auto held = per_uid.find(peer.uid);
        keep = held == per_uid.end() || held->second < kMaxPerUid;
      }
      if (!keep) {
        ::close(connection);  // unanswered: the client sees the connection close
        continue;
      }
      per_uid[peer.uid]++;
      pending.push_back({connection, peer.uid, after + int64_t{kRequestDeadlineMs} * 1'000'000});
    }
  }
  for (const Pending& one : pending) ::close(one.fd);
}

void BoardServer::Answer(int connection, uid_t uid, const std::string& uuid) {
  const std::optional<compute::SealedPair> fds = registry_->Handout(uuid);
  if (!fds) {
    compute::SendBoardReply(connection, compute::HandoutCode::kUnknownGpu, "no GPU " + uuid + " on this node", nullptr);
    refused_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (uid != 0 && !(may_have_ && may_have_(uid, uuid))) {
    compute::SendBoardReply(connection, compute::HandoutCode::kRefused,
                            "uid " + std::to_string(uid) + " has no slice on GPU " + uuid + ": its compute board is not handed out",
                            nullptr);
    refused_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (compute::SendBoardReply(connection, compute::HandoutCode::kOk, "", &*fds)) {
    handed_out_.fetch_add(1, std::memory_order_relaxed);
  }
}

BoardServer::MayHave SliceOwnersOn(const SliceService* slices) {
  return [slices](uid_t uid, const std::string& uuid) {
    for (const SliceRecord& slice : slices->List()) {
      if (slice.gpu_uuid == uuid && slice.owner_uid == static_cast<int64_t>(uid)) return true;
    }
    return false;
  };
}

}  // namespace fgpu::agent
