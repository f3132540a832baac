#include "hook/interpose/slice_policy.h"

#include <climits>
#include <cstring>
#include <utility>

#include "slice/node_config.h"
#include "slice/slice.h"

namespace fgpu::hook {

namespace {

SliceOutcome Refused(bool managed, std::string reason, std::string advice) {
  SliceOutcome outcome;
  outcome.managed = managed;
  outcome.reason = std::move(reason);
  outcome.advice = std::move(advice);
  return outcome;
}

SliceOutcome Attached(slice::Ledger* ledger, bool managed) {
  SliceOutcome outcome;
  outcome.ledger = ledger;
  outcome.managed = managed;
  return outcome;
}

// FGPU_SLICE unset or too long: the same words on every node.
bool SliceNamed(const Options& options, std::string* reason) {
  if (options.slice_too_long) {
    *reason = std::string(slice::kSliceEnv) + " is longer than PATH_MAX (" + std::to_string(PATH_MAX) + " bytes)";
    return false;
  }
  if (!options.slice_set) {
    *reason = std::string(slice::kSliceEnv) + " is not set";
    return false;
  }
  return true;
}

SliceOutcome AttachUnmanaged(const Options& options) {
  std::string reason;
  if (!SliceNamed(options, &reason)) return Refused(false, std::move(reason), kDisableAdvice);
  Result<slice::Ledger*> ledger = slice::Ledger::Attach(options.slice_dir);
  if (!ledger.ok()) {
    return Refused(false, "cannot use slice " + std::string(options.slice_dir) + ": " + ledger.status().message(),
                   kDisableAdvice);
  }
  return Attached(*ledger, false);
}

SliceOutcome AttachManaged(const slice::NodePolicy& policy, Options* options) {
  // The boards are where the node says; the workload's FGPU_COMPUTE_DIR is not asked.
  const std::string& boards = policy.config.compute_dir;
  if (boards.size() >= sizeof(options->compute_dir)) return Refused(true, "compute_dir is longer than PATH_MAX", "");
  std::memcpy(options->compute_dir, boards.c_str(), boards.size() + 1);
  // Not advice to bypass fgpu: on a managed node the user needs the node's slices, and where
  // the rule comes from.
  const std::string advice = "; this node runs CUDA only in its own slices, under " + policy.config.slice_root + " (" +
                             policy.source + ")";
  std::string reason;
  if (!SliceNamed(*options, &reason)) return Refused(true, std::move(reason), advice);
  const std::string named = options->slice_dir;
  Result<slice::TrustedSlice> trusted = slice::OpenTrustedSlice(policy.config, options->slice_dir);
  if (!trusted.ok()) {
    // A slice of this node that fails the checks is the agent's to hear about; any other is nobody's.
    if (trusted.status().code() != StatusCode::kNotFound) slice::CountRefusedNodeSlice(policy.config, options->slice_dir);
    return Refused(true, "cannot use slice " + named + ": " + trusted.status().message(), advice);
  }
  // Through the checked directory's descriptor: the limits mapped is the limits checked.
  Result<slice::Ledger*> ledger = slice::Ledger::Attach(trusted->path().c_str());
  if (!ledger.ok()) {
    return Refused(true, "cannot use slice " + named + ": " + trusted->Describe(ledger.status().message()), advice);
  }
  // The slice's identity from here on (the compute boards key their rows by it).
  const std::string& real = trusted->real_path();  // a realpath: shorter than PATH_MAX
  std::memcpy(options->slice_dir, real.c_str(), real.size() + 1);
  return Attached(*ledger, true);
}

}  // namespace

bool PassThroughAllowed(const Options& options, std::string* reason) {
  if (options.node_config_too_long) {
    *reason = std::string(slice::kNodeConfigEnv) + " is longer than PATH_MAX; refused rather than ignored";
    return false;
  }
  Result<slice::NodePolicy> policy = slice::LoadNodePolicy(options.node_config_set ? options.node_config : nullptr);
  if (!policy.ok()) {
    *reason = "cannot read the node configuration: " + policy.status().message();
    return false;
  }
  return !policy->managed || policy->config.allow_pass_through;
}

SliceOutcome AttachSlice(Options* options) {
  if (options->node_config_too_long) {
    return Refused(true,
                   std::string(slice::kNodeConfigEnv) + " is longer than PATH_MAX (" + std::to_string(PATH_MAX) +
                       " bytes); refused rather than ignored",
                   "");
  }
  Result<slice::NodePolicy> policy = slice::LoadNodePolicy(options->node_config_set ? options->node_config : nullptr);
  if (!policy.ok()) {
    // A policy that cannot be read is not an unmanaged node: fail closed, never open.
    return Refused(true, "cannot read the node configuration: " + policy.status().message(), "");
  }
  if (!policy->managed) return AttachUnmanaged(*options);
  return AttachManaged(*policy, options);
}

}  // namespace fgpu::hook
