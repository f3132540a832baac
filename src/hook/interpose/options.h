// The interposer's options, read once from the process environment.
//
// Contract
// - ReadOptions(env) scans an environ-style array (NULL-terminated "NAME=value" strings) and
//   never calls getenv, allocates or writes anything but its result: it runs inside the hook's
//   one-time init, possibly before the C library or the application is fully set up (the
//   mimalloc rule: read options from `environ`, once).
// - FGPU_DISABLE: "1", "true", "yes" or "on" (any case) selects pass-through; unset, empty or
//   any other value leaves enforcement on (a typo must not silently lift the limits).
// - FGPU_SLICE: the slice directory, copied into the Options (the application may later
//   setenv/unsetenv; our copy stays valid). Empty counts as unset; a path that does not fit
//   is reported as too long rather than truncated into another path.
// - FGPU_COMPUTE_DIR: the compute boards' directory; unset, empty or too long = the default.
//   Ignored on a managed node, where the node configuration names it (init overwrites it).
// - FGPU_NODE_CONFIG: another node configuration file (slice/node_config.h: trusted only if root
//   alone can change it), copied like FGPU_SLICE. Empty counts as unset; too long is reported
//   (init then fails closed: an override that cannot be read is never ignored).
// - DisabledIn(env): FGPU_DISABLE alone, by the same rule, for the dlopen override when it runs
//   before init (it must not start init: that would load the driver into a process that may never
//   use CUDA).
#pragma once

#include <climits>
#include <cstddef>

namespace fgpu::hook {

struct Options {
  bool disabled = false;       // FGPU_DISABLE asked for pass-through
  bool slice_set = false;      // FGPU_SLICE present and non-empty
  bool slice_too_long = false; // FGPU_SLICE longer than slice_dir can hold
  char slice_dir[PATH_MAX] = {};
  // FGPU_COMPUTE_DIR: where the per-GPU compute boards live (docs/compute.md); empty = default.
  char compute_dir[PATH_MAX] = {};
  bool node_config_set = false;       // FGPU_NODE_CONFIG present and non-empty
  bool node_config_too_long = false;  // FGPU_NODE_CONFIG longer than node_config can hold
  char node_config[PATH_MAX] = {};
};

inline constexpr const char* kDisableEnv = "FGPU_DISABLE";
inline constexpr const char* kComputeDirEnv = "FGPU_COMPUTE_DIR";
inline constexpr const char* kDefaultComputeDir = "/dev/shm/fgpu-compute";

void ReadOptions(const char* const* env, Options* options);
bool DisabledIn(const char* const* env);

}  // namespace fgpu::hook
