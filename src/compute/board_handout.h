// The board handout: how a workload on a managed node gets its GPU's sealed board and policy
// table (sealed.h) from the node agent (docs/compute.md "The board on a managed node"). Both
// sides are here, so the wire format lives in one file.
//
// Protocol (a SOCK_SEQPACKET Unix socket; node.conf's board_socket, e.g. <state>/boards.sock,
// 0666: every local user may ask, the agent decides who gets an answer)
// - Request: one message, the GPU's uuid (1..47 bytes, no NUL, no '/').
// - Reply: one message, a status byte (HandoutCode) and a human-readable reason (at most
//   kMaxReasonBytes), and on kOk exactly two descriptors as one SCM_RIGHTS: the board
//   (read-write) and the policy table (an O_RDONLY description). The connection is then closed.
// - The agent answers kOk to root and to a user who owns a slice on that GPU, kRefused to
//   anyone else (SO_PEERCRED names the caller).
//
// Contract
// - RequestBoard(socket, uuid, timeout_ms, server_uid): connect, send and receive each bounded
//   by `timeout_ms` (SO_SNDTIMEO/SO_RCVTIMEO: a stopped agent costs the caller that long, never
//   a hang). The server must run as `server_uid` (SO_PEERCRED; root on a node): anyone else
//   listening there is refused. Returns the two descriptors (O_CLOEXEC, the caller's to close)
//   — not yet checked (Board::Map does). Errors: Unavailable (no agent, no answer in time),
//   PermissionDenied (kRefused, a server of another user), NotFound (kUnknownGpu), Corrupt (a
//   malformed reply); each names the socket and carries the agent's reason. Any descriptor of a
//   refused or malformed reply is closed.
// - ReadBoardRequest / SendBoardReply: the agent's halves, on an accepted connection
//   (non-blocking sends: a client that does not read loses its answer, the agent never waits).
// - Usable inside the interposer (libc only; allocates only strings, at a gate's first use).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "compute/sealed.h"
#include "core/status.h"

namespace fgpu::compute {

enum class HandoutCode : uint8_t {
  kOk = 0,
  kRefused = 1,      // the caller owns no slice on that GPU
  kUnknownGpu = 2,   // no such GPU on this node
  kBadRequest = 3,   // not a uuid
  kUnavailable = 4,  // the agent has no board for it (yet)
};

inline constexpr int kHandoutTimeoutMs = 1000;
inline constexpr size_t kMaxReasonBytes = 256;
inline constexpr size_t kMaxRequestBytes = 64;

Result<SealedPair> RequestBoard(const std::string& socket_path, std::string_view uuid,
                                int timeout_ms = kHandoutTimeoutMs, uid_t server_uid = 0);

// The uuid asked on `connection` (one message, non-blocking): NotFound when nothing has
// arrived yet (EAGAIN), Unavailable when the peer hung up, InvalidArgument when it is no uuid.
Result<std::string> ReadBoardRequest(int connection);
// `fds` null unless code is kOk. False when the message could not be sent.
bool SendBoardReply(int connection, HandoutCode code, std::string_view reason, const SealedPair* fds);

}  // namespace fgpu::compute
