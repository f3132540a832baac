// TcpOwnerLookup: which uid owns the client end of a TCP connection accepted on this host, so
// the server can limit a loopback TCP client per user as it does a Unix-socket one (TCP has no
// SO_PEERCRED).
//
// Why NETLINK_SOCK_DIAG and not /proc/net/tcp: the kernel answers an exact 4-tuple query
// (INET_DIAG_NOCOOKIE, no NLM_F_DUMP) with a hash lookup, one sendto and one recv, about as
// cheap as an accept; /proc/net/tcp is the whole socket table as text, scanned and parsed on
// every accept — O(sockets) per connection, and 300 connections make it O(n²) exactly when a
// client floods. Both show every socket's uid to any user, so neither needs privileges.
//
// Contract
// - Owner(local, remote): `local` is the server's end (getsockname), `remote` the client's
//   address (accept/getpeername). Returns the uid of the socket bound to `remote` and connected
//   to `local`, which exists only when the client runs on this host (loopback, or one of the
//   host's own addresses). NotFound when there is none (a remote client, or one already
//   gone); Unavailable when sock_diag cannot be used (no netlink, a seccomp filter). The
//   caller falls back to the client's address.
// - A client that has closed its socket (no process holds it: orphaned, or TIME_WAIT) is
//   NotFound too, never uid 0, which is what the kernel reports for such a socket.
// - The uid is the socket's creator's (the kernel's sk_uid); a process cannot make a socket
//   that reads as another user's, short of being handed one by that user. Use it for limits,
//   not for authorization (the API trusts only SO_PEERCRED).
// - Never blocks: the kernel answers a sock_diag request inside sendto(). Not thread-safe (one
//   netlink socket, kept open between calls); the server's event loop owns one.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <cstdint>

#include "core/status.h"

namespace fgpu::net {

class TcpOwnerLookup {
 public:
  TcpOwnerLookup() = default;
  ~TcpOwnerLookup();
  TcpOwnerLookup(const TcpOwnerLookup&) = delete;
  TcpOwnerLookup& operator=(const TcpOwnerLookup&) = delete;

  Result<uid_t> Owner(const sockaddr_storage& local, const sockaddr_storage& remote);

 private:
  int fd_ = -1;
  uint32_t sequence_ = 0;
};

}  // namespace fgpu::net
