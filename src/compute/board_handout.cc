// The board handout's wire format, both sides (see board_handout.h).
#include "compute/board_handout.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "compute/board.h"
#include "compute/board_layout.h"

namespace fgpu::compute {
namespace {

// Room for more descriptors than a reply carries: a sender that passes extra ones is detected
// (and they are closed) rather than truncated silently.
constexpr size_t kMaxFds = 4;

std::string Errno() { return std::strerror(errno); }

class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

bool ValidUuid(std::string_view uuid) {
  if (uuid.empty() || uuid.size() >= layout::kUuidBytes) return false;
  for (const char c : uuid) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f || c == '/') return false;
  }
  return true;
}

// The agent's reason, as something safe to print on one line.
std::string Printable(const char* data, size_t size) {
  std::string text;
  for (size_t i = 0; i < size && i < kMaxReasonBytes; ++i) {
    const auto c = static_cast<unsigned char>(data[i]);
    text += c >= ' ' && c < 0x7f ? static_cast<char>(c) : '?';
  }
  return text;
}

void CloseAll(const int* fds, size_t count) {
  for (size_t i = 0; i < count; ++i) ::close(fds[i]);
}

}  // namespace

Result<SealedPair> RequestBoard(const std::string& socket_path, std::string_view uuid, int timeout_ms, uid_t server_uid) {
  const std::string where = "the board socket " + socket_path;
  if (!ValidUuid(uuid)) return Status::InvalidArgument("bad GPU uuid '" + std::string(uuid) + "'");
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (socket_path.empty() || socket_path.size() >= sizeof(address.sun_path)) {
    return Status::InvalidArgument(where + ": the path does not fit a Unix socket address");
  }
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  const Socket socket(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (socket.get() < 0) return Status::Unavailable(where + ": socket: " + Errno());
  // Bounds connect (a full backlog) and send; the answer is waited for with poll below.
  const timeval bound{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  ::setsockopt(socket.get(), SOL_SOCKET, SO_SNDTIMEO, &bound, sizeof(bound));
  const int64_t deadline = MonotonicNs() + int64_t{timeout_ms} * 1'000'000;
  int connected = ::connect(socket.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  while (connected != 0 && errno == EINTR && MonotonicNs() < deadline) {
    connected = ::connect(socket.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address));
    if (connected != 0 && errno == EISCONN) connected = 0;
  }
  if (connected != 0) {
    if (errno == EAGAIN || errno == EINPROGRESS || errno == EINTR) {
      return Status::Unavailable(where + ": the node agent did not accept within " + std::to_string(timeout_ms) + " ms");
    }
    return Status::Unavailable(where + ": " + Errno() + " (is the node agent running?)");
  }
  ucred peer{};
  socklen_t peer_size = sizeof(peer);
  if (::getsockopt(socket.get(), SOL_SOCKET, SO_PEERCRED, &peer, &peer_size) != 0) {
    return Status::Unavailable(where + ": SO_PEERCRED: " + Errno());
  }
  if (peer.uid != server_uid) {
    return Status::PermissionDenied(where + " is served by uid " + std::to_string(peer.uid) + ", not the node agent's uid " +
                                    std::to_string(server_uid));
  }
  ssize_t sent = -1;
  do {
    sent = ::send(socket.get(), uuid.data(), uuid.size(), MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR && MonotonicNs() < deadline);
  if (sent != static_cast<ssize_t>(uuid.size())) return Status::Unavailable(where + ": send: " + Errno());

  char reply[1 + kMaxReasonBytes];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
  ssize_t got = -1;
  msghdr message{};
  for (;;) {
    const int64_t left_ms = (deadline - MonotonicNs()) / 1'000'000;
    pollfd wait{socket.get(), POLLIN, 0};
    const int ready = left_ms > 0 ? ::poll(&wait, 1, static_cast<int>(left_ms)) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      return Status::Unavailable(where + ": the node agent did not answer within " + std::to_string(timeout_ms) + " ms");
    }
    iovec part{reply, sizeof(reply)};
    message = msghdr{};
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    got = ::recvmsg(socket.get(), &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    break;
  }
  if (got < 0) return Status::Unavailable(where + ": recvmsg: " + Errno());
  int fds[kMaxFds];
  size_t count = 0;
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr; header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    const size_t carried = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < carried && count < kMaxFds; ++i) {
      std::memcpy(&fds[count++], CMSG_DATA(header) + i * sizeof(int), sizeof(int));
    }
  }
  if (got == 0) {
    CloseAll(fds, count);
    return Status::Unavailable(where + ": the node agent closed the connection without an answer");
  }
  if ((message.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) != 0) {
    CloseAll(fds, count);
    return Status::Corrupt(where + ": the answer was longer than the protocol allows");
  }
  const auto code = static_cast<HandoutCode>(reply[0]);
  const std::string reason = Printable(reply + 1, static_cast<size_t>(got) - 1);
  if (code != HandoutCode::kOk) {
    CloseAll(fds, count);
    const std::string text = where + ": " + (reason.empty() ? "refused" : reason);
    switch (code) {
      case HandoutCode::kRefused: return Status::PermissionDenied(text);
      case HandoutCode::kUnknownGpu: return Status::NotFound(text);
      case HandoutCode::kBadRequest: return Status::InvalidArgument(text);
      default: return Status::Unavailable(text);
    }
  }
  if (count != 2) {
    CloseAll(fds, count);
    return Status::Corrupt(where + ": the answer carried " + std::to_string(count) + " descriptors, not 2");
  }
  return SealedPair{fds[0], fds[1]};
}

Result<std::string> ReadBoardRequest(int connection) {
  char request[kMaxRequestBytes + 1];
  const ssize_t got = ::recv(connection, request, sizeof(request), MSG_DONTWAIT);
  if (got < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return Status::NotFound("nothing yet");
    return Status::Unavailable(Errno());
  }
  if (got == 0) return Status::Unavailable("the client hung up");
  const std::string_view uuid(request, static_cast<size_t>(got));
  if (!ValidUuid(uuid)) return Status::InvalidArgument("the request is not a GPU uuid");
  return std::string(uuid);
}

bool SendBoardReply(int connection, HandoutCode code, std::string_view reason, const SealedPair* fds) {
  char reply[1 + kMaxReasonBytes];
  reply[0] = static_cast<char>(code);
  const size_t length = std::min(reason.size(), kMaxReasonBytes);
  std::memcpy(reply + 1, reason.data(), length);
  iovec part{reply, 1 + length};
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 2)];
  if (code == HandoutCode::kOk && fds != nullptr) {
    std::memset(control, 0, sizeof(control));
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int) * 2);
    const int pair[2] = {fds->board, fds->policy};
    std::memcpy(CMSG_DATA(header), pair, sizeof(pair));
  }
  return ::sendmsg(connection, &message, MSG_DONTWAIT | MSG_NOSIGNAL) == static_cast<ssize_t>(1 + length);
}

}  // namespace fgpu::compute
