// Which compute board a GPU's gate uses (docs/compute.md "The board", "The board on a managed
// node").
//
// Contract
// - OpenComputeBoard(options, uuid, policy) runs at a gate's first resolution (init-like: may allocate
//   and make syscalls; never on a launch's hot path). It reads the node configuration as init did
//   (FGPU_NODE_CONFIG from `options`, else the fixed path):
//   - a managed node whose configuration names board_socket: the node agent's sealed board and
//     policy table for `uuid`, asked over that socket (each step bounded by about a second: a
//     stopped agent never hangs the workload), checked (size, seals, root's, policy descriptor
//     read-only) and mapped, the policy read-only. The descriptors are closed once mapped.
//   - any other node: the board file in options.compute_dir (Board::Open), as before.
//   Errors carry the reason for the caller's one `fgpu: ...` line (no answer, refused, a
//   descriptor that fails a check, a configuration that cannot be read).
// - From the same reading of the node configuration it sets *policy's strict_priority: true where
//   a managed node's configuration names the GPU (or all) in strict_priority; never on an
//   unmanaged node, which has no administrator to choose it. The rest of *policy is untouched.

#include "compute/board.h"
#include "compute/policy.h"
#include "core/status.h"
#include "hook/interpose/options.h"

namespace fgpu::hook {

Result<compute::Board*> OpenComputeBoard(const Options& options, const char* uuid, compute::Policy* policy);

}  // namespace fgpu::hook
