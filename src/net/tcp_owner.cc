#include "net/tcp_owner.h"

#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <poll.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace fgpu::net {
namespace {

// Copies `address` into a sock_diag socket id half (address words and port, network order).
bool FillEnd(const sockaddr_storage& address, __be32 words[4], __be16* port) {
  std::memset(words, 0, 4 * sizeof(__be32));
  if (address.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    std::memcpy(words, &v4->sin_addr, sizeof(v4->sin_addr));
    *port = v4->sin_port;
    return true;
  }
  if (address.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    std::memcpy(words, &v6->sin6_addr, sizeof(v6->sin6_addr));
    *port = v6->sin6_port;
    return true;
  }
  return false;
}

}  // namespace

TcpOwnerLookup::~TcpOwnerLookup() {
  if (fd_ >= 0) close(fd_);
}

Result<uid_t> TcpOwnerLookup::Owner(const sockaddr_storage& local, const sockaddr_storage& remote) {
  if (local.ss_family != remote.ss_family) return Status::InvalidArgument("the two ends differ in family");
  if (fd_ < 0) {
    fd_ = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_SOCK_DIAG);
    if (fd_ < 0) return Status::Unavailable(std::string("sock_diag: ") + std::strerror(errno));
  }
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } message{};
  message.header.nlmsg_len = sizeof(message);
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST;  // no NLM_F_DUMP: an exact lookup, not a table walk
  message.header.nlmsg_seq = ++sequence_;
  message.request.sdiag_family = static_cast<uint8_t>(local.ss_family);
  message.request.sdiag_protocol = IPPROTO_TCP;
  message.request.idiag_states = ~0u;
  // The client's socket: its source is the address the server sees as remote.
  if (!FillEnd(remote, message.request.id.idiag_src, &message.request.id.idiag_sport) ||
      !FillEnd(local, message.request.id.idiag_dst, &message.request.id.idiag_dport)) {
    return Status::InvalidArgument("not an IP socket address");
  }
  message.request.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  message.request.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;

  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (sendto(fd_, &message, sizeof(message), 0, reinterpret_cast<sockaddr*>(&kernel), sizeof(kernel)) < 0) {
    return Status::Unavailable(std::string("sock_diag: ") + std::strerror(errno));
  }
  alignas(nlmsghdr) char buffer[8192];
  for (int attempts = 0; attempts < 4; ++attempts) {
    const ssize_t got = recv(fd_, buffer, sizeof(buffer), 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN) return Status::Unavailable(std::string("sock_diag: ") + std::strerror(errno));
      // The kernel answers inside sendto(), so this does not happen; wait briefly rather than
      // trust that from the event loop.
      pollfd entry{fd_, POLLIN, 0};
      if (poll(&entry, 1, 20) <= 0) return Status::Unavailable("sock_diag: no answer");
      continue;
    }
    int left = static_cast<int>(got);
    for (auto* reply = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(reply, left);
         reply = NLMSG_NEXT(reply, left)) {
      if (reply->nlmsg_seq != sequence_) continue;  // the late answer to an earlier query
      if (reply->nlmsg_type == NLMSG_ERROR) {
        const auto* error = static_cast<const nlmsgerr*>(NLMSG_DATA(reply));
        if (error->error == -ENOENT) return Status::NotFound("no such socket on this host");
        return Status::Unavailable(std::string("sock_diag: ") + std::strerror(-error->error));
      }
      if (reply->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
          reply->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg))) {
        return Status::Unavailable("sock_diag: unexpected answer");
      }
      const auto* socket_info = static_cast<const inet_diag_msg*>(NLMSG_DATA(reply));
      // No inode: no process holds the client's socket any more (closed: orphaned in FIN_WAIT,
      // or TIME_WAIT), and the kernel reports such a socket's uid as 0. Taking that for root
      // would let any user charge its connections to root's budget, past the global cap, by
      // closing its end before the server accepts.
      if (socket_info->idiag_inode == 0) return Status::NotFound("the client has closed its socket");
      return static_cast<uid_t>(socket_info->idiag_uid);
    }
  }
  return Status::Unavailable("sock_diag: no answer");
}

}  // namespace fgpu::net
