// The node configuration: which slices and compute boards this machine trusts.
//
// On a multi-user machine the interposer must not take a workload's word for where its limits
// are: a process that names a slice it made itself (FGPU_SLICE) would pick its own cap. A
// *managed* node has a small root-owned file saying where the node's slices and compute boards
// live; the interposer then accepts only a slice there that root made (docs/hook.md "Managed
// nodes: what the interposer trusts"). The node agent reads the same file.
//
// Contract
// - Format (ParseNodeConfig): at most kNodeConfigMaxBytes (4 KiB) of text, one `key = value`
//   per line; blank lines and lines whose first non-blank character is `#` are ignored. Keys,
//   both required, each exactly once:
//     slice_root  = /absolute/dir   every slice of this node is a directory directly under it
//     compute_dir = /absolute/dir   the per-GPU compute boards of this node
//   Optional keys, each at most once:
//     pass_through = allow|deny     whether FGPU_DISABLE=1 is honoured (default deny)
//     board_socket = /absolute/path the node agent's socket that hands out the sealed compute
//                                   boards (docs/compute.md "The board on a managed node");
//                                   when set, compute_dir is not used for boards
//     strict_priority = all|GPU-…[,GPU-…]   the GPUs whose tiers come before the shares'
//                                   guarantees (docs/compute.md "Strict priority"): lower tiers
//                                   can starve there
//   A value is one word (no blank or control character: a `#` after a value is not a comment)
//   and, but for pass_through, an absolute path (shorter than PATH_MAX, as the whole file is). Unknown or duplicate
//   keys, a missing key, a line without `=`, a NUL byte or an oversized file are
//   InvalidArgument, naming "<source>:<line>" and the problem (and the nearest key for a
//   misspelt one).
// - Where (LoadNodePolicy): `override_path` (the FGPU_NODE_CONFIG variable) when set and
//   non-empty, else `fixed_path` (kNodeConfigPath, /etc/fgpu/node.conf unless the build's
//   FGPU_NODE_CONFIG_PATH says otherwise). The node is *unmanaged* only when no override is
//   given and nothing exists at the fixed path (lstat says ENOENT): today's behaviour, any
//   slice. Anything else is managed or an error, never unmanaged:
//   - the file (an override must be an absolute path) is trusted only when, after realpath,
//     every directory from / down to it is owned by root and not writable by group or others
//     (a sticky directory, such as /tmp, may be), and the file itself is a regular file owned by
//     root and not writable by group or others. Each step is opened with O_NOFOLLOW relative to
//     the descriptor of the one above and checked with fstat on that descriptor, so nothing can
//     be swapped between the check and the read;
//   - an override that is missing, untrusted or unparsable, a fixed file that is untrusted,
//     unreadable or unparsable: an error (the caller fails closed). A non-root user can
//     therefore neither replace nor downgrade the node's policy.
//   Errors: InvalidArgument (the text, a relative override), NotFound (the override does not
//   exist), Unavailable (cannot be read, or not trusted: the message says which directory or
//   file and why).
// - OpenTrustedSlice: on a managed node, `slice_dir` is accepted only if its realpath is a
//   directory directly under the realpath of slice_root, slice_root and every directory above it
//   pass the rule above, the slice directory is owned by root and not writable by group or others
//   (no sticky exception), and its `limits` is a regular file owned by root and not writable by
//   group or others. Every check is an fstat of a descriptor opened relative to the one above it
//   (O_NOFOLLOW). The result holds the slice directory's descriptor and a path through it
//   (/proc/self/fd/N) for Ledger::Attach: the limits it maps is looked up in that very
//   directory, which only root can change, so it is the file checked. Errors: NotFound (the slice
//   or its limits does not exist), Unavailable (anything refused), each naming the path and the
//   reason.
// - `rules.owner`: the one uid besides root whose files are trusted. Always 0 in the interposer
//   and the agent; tests that cannot run as root pass their own uid.
// - Usable inside the interposer's init: no iostreams, no global constructors; libc reads into a
//   fixed buffer; allocates (std::string) as Ledger::Attach does.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "core/status.h"

namespace fgpu::slice {

// The fixed path of the node configuration (the build's FGPU_NODE_CONFIG_PATH).
extern const char kNodeConfigPath[];
// The variable that may name another node configuration (trusted only as described above).
inline constexpr const char* kNodeConfigEnv = "FGPU_NODE_CONFIG";
inline constexpr size_t kNodeConfigMaxBytes = 4096;

struct NodeConfig {
  std::string slice_root;   // absolute, as written (resolved when a slice is checked)
  std::string compute_dir;  // absolute, as written
  // `pass_through = allow|deny` (optional, default deny): whether FGPU_DISABLE=1 lets a process
  // run without enforcement on this node. Denied, it is ignored: a user cannot switch its own
  // caps off.
  bool allow_pass_through = false;
  // `board_socket = /abs/path` (optional; "" when unset): where the node agent hands each GPU's
  // compute board and policy table to the users of that GPU's slices, as sealed memfds. Set, the
  // interposer gets its boards there and never opens a file in compute_dir.
  std::string board_socket;
  // `strict_priority = all|UUID[,UUID…]` (optional; "" when unset): GPUs arbitrated with strict
  // priority between tiers (compute::Policy::strict_priority).
  std::string strict_priority;
};

// Whether `config` asks for strict priority on the GPU `uuid`.
bool StrictPriorityFor(const NodeConfig& config, std::string_view uuid);

Result<NodeConfig> ParseNodeConfig(std::string_view text, std::string_view source);

struct TrustRules {
  uid_t owner = 0;  // trusted besides root (tests only)
};

struct NodePolicy {
  bool managed = false;
  std::string source;  // the file the configuration was read from; "" when unmanaged
  NodeConfig config;   // when managed
};

Result<NodePolicy> LoadNodePolicy(const char* override_path, const char* fixed_path = kNodeConfigPath,
                                  const TrustRules& rules = {});

// A slice directory that passed OpenTrustedSlice, held open. Move-only; closes it when destroyed.
class TrustedSlice {
 public:
  TrustedSlice(int fd, std::string real_path);
  TrustedSlice(TrustedSlice&& other) noexcept;
  TrustedSlice& operator=(TrustedSlice&& other) noexcept;
  ~TrustedSlice();
  TrustedSlice(const TrustedSlice&) = delete;
  TrustedSlice& operator=(const TrustedSlice&) = delete;

  // "/proc/self/fd/N": names exactly the checked directory, whatever happens to its path.
  const std::string& path() const { return path_; }
  // The slice's realpath, as checked.
  const std::string& real_path() const { return real_path_; }
  // `message` (from Ledger::Attach, which names the files it opened) with path() written as
  // real_path(), for the user.
  std::string Describe(std::string message) const;

 private:
  int fd_ = -1;
  std::string path_;
  std::string real_path_;
};

Result<TrustedSlice> OpenTrustedSlice(const NodeConfig& config, const char* slice_dir, const TrustRules& rules = {});

// After OpenTrustedSlice refused `slice_dir`: adds one to its ledger's fail_closed_refusals when
// it is one of this node's slices (its realpath lies directly under slice_root, where the agent
// reads counters) and both its files can be mapped as for an attach. False, with nothing
// counted, otherwise (a slice elsewhere is nobody's to count in).
bool CountRefusedNodeSlice(const NodeConfig& config, const char* slice_dir);

}  // namespace fgpu::slice
