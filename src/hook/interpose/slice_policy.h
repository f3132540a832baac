// Which slice the hook's init attaches, under the node's policy (docs/hook.md "Managed nodes:
// what the interposer trusts").
//
// Contract
// - AttachSlice(options) runs once, inside init, with the options as read from environ. It loads
//   the node configuration (slice/node_config.h: FGPU_NODE_CONFIG if set, else the fixed path).
//   - Unmanaged node (no override, nothing at the fixed path): Ledger::Attach(FGPU_SLICE), exactly
//     as before managed nodes existed.
//   - Managed node: the configuration's compute_dir replaces FGPU_COMPUTE_DIR in `options`; the
//     slice is attached only through OpenTrustedSlice (a root-owned directory directly under
//     slice_root with a root-owned limits), and `options->slice_dir` becomes its realpath.
//   - Anything else (the configuration cannot be trusted, read or parsed; the slice is missing,
//     refused or corrupt): `ledger` is NULL and `reason` is one line saying what is wrong with
//     which file, `advice` what to do (appended to it on stderr). A slice of this node refused
//     by the trust checks is counted in its ledger's fail_closed_refusals.
// - May allocate and make syscalls (init does); never prints.
#pragma once

#include <string>

#include "hook/interpose/options.h"

namespace fgpu::slice {
class Ledger;
}

namespace fgpu::hook {

struct SliceOutcome {
  slice::Ledger* ledger = nullptr;  // attached: enforcing
  bool managed = false;             // the node has (or was told of) a configuration
  std::string reason;               // why not attached
  std::string advice;               // "; what to do", appended to reason
};

SliceOutcome AttachSlice(Options* options);

// FGPU_DISABLE=1 was asked: whether this node honours it. True on an unmanaged node and on a
// managed one whose configuration says pass_through = allow; false (enforce anyway) when it says
// deny, the default; false with `reason` set when the configuration cannot be read (fail closed).
bool PassThroughAllowed(const Options& options, std::string* reason);

// What the unmanaged failure line ends with.
inline constexpr const char* kDisableAdvice = "; set FGPU_DISABLE=1 to run without fgpu";

}  // namespace fgpu::hook
