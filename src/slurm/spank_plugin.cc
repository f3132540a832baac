// fgpu_spank.so: the SPANK plugin (spank(7)) that gives each Slurm job step an fgpu slice on
// the GPU Slurm allocated to it. The C ABI glue only: the logic lives in step_slice.h and its
// parts, tested without Slurm.
//
// Where each callback runs (integration.md B1) and what it does here:
//   slurm_spank_init           every context: registers --gpu-memory/--gpu-compute/--gpu-tier
//                              (sbatch sees only registered options), reads plugstack.conf args
//   option callbacks           srun/sbatch/salloc: validate, refuse a bad value (nonzero);
//                              slurmstepd: store the value (a bad one refuses the step later)
//   slurm_spank_init_post_opt  srun/sbatch/salloc: options that only make sense together;
//                              slurmstepd, once per step, as root: asks the node agent for the
//                              slice for the job's user (an admin's request naming its owner,
//                              with user and account from Slurm's job record); never fails (a
//                              failure here drains the node), it keeps the refusal for task_init
//   slurm_spank_task_init      each task, before exec, as the job's user: joins the slice (the
//                              task becomes a proven member) and puts its variables in the env;
//                              a step that asked for a slice and has none fails here, with the
//                              reason (fail closed; the node stays healthy)
//   slurm_spank_exit           slurmstepd, step end: releases the slice (bounded; a dead agent
//                              is only logged: its release-on-exit reaper frees the slice)
// No exception leaves a callback, and every agent call is bounded by timeout_ms.
#include <pwd.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

extern "C" {
#include <slurm/slurm.h>
#include <slurm/spank.h>
}

#include "slurm/plugin_config.h"
#include "slurm/slice_options.h"
#include "slurm/step_slice.h"
#include "slurm/task_env.h"

#define FGPU_SPANK_EXPORT __attribute__((visibility("default")))

// SPANK_PLUGIN defines const arrays, which C++ gives internal linkage unless declared extern
// "C" first (integration.md B1); the loader looks these four up by name.
extern "C" {
FGPU_SPANK_EXPORT extern const char plugin_name[];
FGPU_SPANK_EXPORT extern const char plugin_type[];
FGPU_SPANK_EXPORT extern const unsigned int plugin_version;
FGPU_SPANK_EXPORT extern const unsigned int spank_plugin_version;
SPANK_PLUGIN(fgpu, 1)
}

namespace {

using fgpu::Result;
using fgpu::Status;
namespace slurm = fgpu::slurm;

// One step per slurmstepd, one command per srun: process-wide state is the step's state.
// Never destroyed: slurmstepd's exit must not run destructors under a callback of another thread.
struct PluginState {
  bool asked = false;  // an fgpu option was given, valid or not: the step runs only in a slice
  slurm::SliceOptions options;
  std::string option_error;  // a bad value seen in slurmstepd (refuses the step in task_init)
  Result<slurm::PluginConfig> config = slurm::PluginConfig{};
  std::string refusal;  // non-empty: task_init fails with it
  std::optional<slurm::GrantedSlice> slice;
  bool owned = false;  // made for this step (released at its end), not the job's shared one
  std::string job_slice_marker;  // the batch step's: passed to the job's later steps
  std::string agent_socket;
};

PluginState& State() {
  static PluginState* const state = new PluginState;
  return *state;
}

enum OptionId : int { kMemory = 1, kCompute = 2, kTier = 3 };

int OnOption(int val, const char* optarg, int remote) noexcept {
  try {
    PluginState& state = State();
    state.asked = true;
    const Status status = val == kMemory    ? slurm::SetMemory(optarg, state.options)
                          : val == kCompute ? slurm::SetCompute(optarg, state.options)
                                            : slurm::SetTier(optarg, state.options);
    if (status.ok()) return 0;
    // In slurmstepd a nonzero return here would fail the step in a way that can drain the
    // node; keep the reason and refuse the step in task_init.
    if (remote) {
      state.option_error = status.message();
      return 0;
    }
    slurm_error("fgpu: %s", status.message().c_str());
    return -1;
  } catch (...) {
    slurm_error("fgpu: internal error while reading an option");
    return -1;
  }
}

char kMemoryName[] = "gpu-memory";
char kComputeName[] = "gpu-compute";
char kTierName[] = "gpu-tier";
char kSizeInfo[] = "SIZE";
char kPercentInfo[] = "PCT";
char kTierInfo[] = "TIER";
char kMemoryUsage[] = "fgpu: a slice of SIZE GPU memory (e.g. 30GiB) on the step's GPU, enforced";
char kComputeUsage[] = "fgpu: the slice's compute share, percent of the GPU (1-100)";
char kTierUsage[] = "fgpu: the slice's priority tier: batch, standard or latency";

spank_option kOptions[] = {
    {kMemoryName, kSizeInfo, kMemoryUsage, 1, kMemory, OnOption},
    {kComputeName, kPercentInfo, kComputeUsage, 1, kCompute, OnOption},
    {kTierName, kTierInfo, kTierUsage, 1, kTier, OnOption},
};

bool SubmitSide() {
  const spank_context_t context = spank_context();
  return context == S_CTX_LOCAL || context == S_CTX_ALLOCATOR;
}

// A job environment variable of the step (slurmstepd only), or nullopt when unset.
std::optional<std::string> JobEnv(spank_t sp, const char* name) {
  std::vector<char> buffer(4096);
  for (int attempt = 0; attempt < 4; ++attempt) {
    const spank_err_t err = spank_getenv(sp, name, buffer.data(), static_cast<int>(buffer.size()));
    if (err == ESPANK_SUCCESS) return std::string(buffer.data());
    if (err != ESPANK_NOSPACE) return std::nullopt;
    buffer.resize(buffer.size() * 4);
  }
  return std::nullopt;
}

// slurmd exports its node name to slurmstepd's own environment; the job's copy may be a batch
// script's, inherited from another node.
std::string NodeName() {
  if (const char* name = std::getenv("SLURMD_NODENAME"); name != nullptr && *name != '\0') return name;
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0) return host;
  return {};
}

// The job's user by its uid (Slurm's S_JOB_UID), never by a variable the job sets.
std::string UserName(uid_t uid) {
  passwd entry{};
  passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr) return found->pw_name;
  return std::to_string(uid);
}

// The job's account from slurmctld's job record (slurmstepd runs as root and may read it); ""
// when it cannot be read, which is logged: the slice is then billed to the user.
std::string JobAccount(uint32_t job_id) {
  job_info_msg_t* jobs = nullptr;
  if (slurm_load_job(&jobs, job_id, SHOW_DETAIL) != SLURM_SUCCESS || jobs == nullptr) {
    slurm_error("fgpu: cannot read job %u's record from slurmctld: its slice is billed to its user", job_id);
    return {};
  }
  std::string account;
  if (jobs->record_count > 0 && jobs->job_array[0].account != nullptr) account = jobs->job_array[0].account;
  slurm_free_job_info_msg(jobs);
  return account;
}

Result<slurm::StepFacts> GatherFacts(spank_t sp) {
  slurm::StepFacts facts;
  uid_t uid = 0;
  if (spank_get_item(sp, S_JOB_ID, &facts.identity.job_id) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &facts.identity.step_id) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS) {
    return Status::Internal("cannot read the step's job id, step id or user from Slurm");
  }
  facts.identity.uid = uid;
  facts.identity.user = UserName(uid);
  if (facts.identity.step_id != slurm::kExternStep) facts.identity.account = JobAccount(facts.identity.job_id);
  facts.gpus.step_gpus = JobEnv(sp, "SLURM_STEP_GPUS");
  facts.gpus.job_gpus = JobEnv(sp, "SLURM_JOB_GPUS");
  facts.gpus.cuda_visible_devices = JobEnv(sp, "CUDA_VISIBLE_DEVICES");
  return facts;
}

// A step of a batch job on the batch step's node shares the batch step's slice (step_slice.h
// kJobSliceEnv). True when adopted; false: the step asks for its own.
bool AdoptJobSlice(spank_t sp, PluginState& state, const slurm::StepFacts& facts, const slurm::AgentCall& agent,
                   const std::string& label) {
  if (facts.identity.step_id == slurm::kBatchStep) return false;
  const std::optional<std::string> marker = JobEnv(sp, slurm::kJobSliceEnv);
  const std::string id = marker ? slurm::JobSliceOf(*marker, facts.identity.job_id, NodeName()) : std::string();
  if (id.empty()) return false;
  Result<slurm::GrantedSlice> slice = slurm::AdoptSlice(id, facts.identity, agent);
  if (!slice.ok()) {  // gone, unreadable, or not this job's: a slice of its own
    if (slice.status().code() == fgpu::StatusCode::kPermissionDenied) {
      slurm_error("fgpu: step %s: %s=%s names %s; the step gets its own slice", label.c_str(), slurm::kJobSliceEnv,
                  marker->c_str(), slice.status().message().c_str());
    }
    return false;
  }
  state.slice = *slice;
  state.owned = false;
  slurm_info("fgpu: step %s: shares slice %s with its job's batch step", label.c_str(), id.c_str());
  return true;
}

// The slice for this step, or the reason there is none (kept in the state either way).
void ObtainSlice(spank_t sp, PluginState& state) {
  Result<slurm::StepFacts> facts = GatherFacts(sp);
  if (!facts.ok()) {
    state.refusal = facts.status().message();
    return;
  }
  if (facts->identity.step_id == slurm::kExternStep) return;  // no tasks of the user's run there
  const std::string label = slurm::StepLabel(facts->identity.job_id, facts->identity.step_id);
  if (!state.option_error.empty()) {
    state.refusal = "step " + label + ": " + state.option_error;
    return;
  }
  if (!state.config.ok()) {
    state.refusal = "step " + label + ": the plugin's arguments in plugstack.conf: " + state.config.status().message();
    return;
  }
  Result<slurm::StepPlan> plan = slurm::PlanStep(state.options, *facts);
  if (!plan.ok()) {
    state.refusal = plan.status().message();
    return;
  }
  Result<std::string> socket = slurm::AgentSocket(*state.config, NodeName());
  if (!socket.ok()) {
    state.refusal = "step " + label + ": agent=" + socket.status().message();
    return;
  }
  state.agent_socket = *socket;
  const slurm::AgentCall agent = slurm::UnixAgent(*socket, state.config->timeout_ms);
  if (AdoptJobSlice(sp, state, *facts, agent, label)) return;
  Result<slurm::GrantedSlice> slice = slurm::AcquireSlice(*plan, agent, *socket);
  if (!slice.ok()) {
    state.refusal = slice.status().message();
    return;
  }
  state.slice = *slice;
  state.owned = true;
  if (facts->identity.step_id == slurm::kBatchStep) {
    state.job_slice_marker = slurm::JobSliceMarker(facts->identity.job_id, NodeName(), slice->id);
  }
  slurm_info("fgpu: step %s: slice %s of %s for user %s, tenant %s", label.c_str(), slice->id.c_str(),
             plan->summary.c_str(), facts->identity.user.c_str(), slurm::TenantOf(facts->identity).c_str());
}

// How many shards of a GPU Slurm gave the step on this node (gres/shard sets it); 0: none.
uint64_t ShardsOnNode(spank_t sp) {
  const std::optional<std::string> shards = JobEnv(sp, "SLURM_SHARDS_ON_NODE");
  if (!shards) return 0;
  uint64_t count = 0;
  for (char c : *shards) {
    if (c < '0' || c > '9') return 0;
    count = count * 10 + static_cast<uint64_t>(c - '0');
  }
  return count;
}

// A step with shards and no fgpu option of its own: the node's default slice, or a refusal kept
// for task_init. True when the step now asks for a slice.
bool ApplyShardDefault(spank_t sp, PluginState& state) {
  const uint64_t shards = ShardsOnNode(sp);
  if (shards == 0) return false;
  uint32_t job = 0, step = 0;
  if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS || spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS ||
      step == slurm::kExternStep) {
    return false;
  }
  state.asked = true;
  if (!state.config.ok()) return true;  // ObtainSlice gives the reason
  Result<slurm::SliceOptions> options = slurm::ShardDefault(*state.config, shards);
  if (options.ok()) {
    state.options = *options;
  } else {
    state.option_error = options.status().message();
  }
  return true;
}

int ApplySlice(spank_t sp, const PluginState& state) {
  const slurm::GrantedSlice& slice = *state.slice;
  // The task (this process, about to exec the user's program) becomes a member of the slice.
  // Without it the caps still hold; only stop-loss could not tell its processes from others.
  if (state.config.ok()) {
    if (Status joined = slurm::JoinSlice(slice.id, slurm::UnixAgent(state.agent_socket, state.config->timeout_ms));
        !joined.ok()) {
      slurm_error("fgpu: %s", joined.message().c_str());
    }
  }
  slurm::EnvList env =
      slurm::MergeTaskEnv(slice.env, [sp](const std::string& name) { return JobEnv(sp, name.c_str()); });
  if (!state.job_slice_marker.empty()) env.emplace_back(slurm::kJobSliceEnv, state.job_slice_marker);
  for (const auto& [name, value] : env) {
    if (spank_setenv(sp, name.c_str(), value.c_str(), 1) != ESPANK_SUCCESS) {
      slurm_error("fgpu: cannot set %s for the task of slice %s", name.c_str(), slice.id.c_str());
      return -1;
    }
  }
  return 0;
}

std::vector<std::string> Arguments(int ac, char** av) {
  std::vector<std::string> args;
  for (int i = 0; i < ac; ++i) args.emplace_back(av[i] == nullptr ? "" : av[i]);
  return args;
}

}  // namespace

extern "C" {

FGPU_SPANK_EXPORT int slurm_spank_init(spank_t sp, int ac, char** av) {
  try {
    const spank_context_t context = spank_context();
    if (context != S_CTX_LOCAL && context != S_CTX_ALLOCATOR && context != S_CTX_REMOTE) return 0;
    for (spank_option& option : kOptions) {
      if (const spank_err_t err = spank_option_register(sp, &option); err != ESPANK_SUCCESS) {
        slurm_error("fgpu: cannot register --%s: %s", option.name, spank_strerror(err));
      }
    }
    PluginState& state = State();
    state.config = slurm::ParsePluginArgs(Arguments(ac, av));
    // Said where an admin reads it; on the submit side only when a job asks for a slice.
    if (!state.config.ok() && context == S_CTX_REMOTE) {
      slurm_error("fgpu: plugstack.conf: %s", state.config.status().message().c_str());
    }
  } catch (...) {
    slurm_error("fgpu: internal error in slurm_spank_init");
  }
  return 0;
}

FGPU_SPANK_EXPORT int slurm_spank_init_post_opt(spank_t sp, int, char**) {
  try {
    if (spank_context() == S_CTX_REMOTE) {
      // slurmstepd, as root: the agent trusts the job's user and account it is told.
      PluginState& state = State();
      if (!state.asked) ApplyShardDefault(sp, state);
      if (state.asked) ObtainSlice(sp, state);
      return 0;  // never nonzero here: it would drain the node; task_init refuses the step
    }
    if (!SubmitSide()) return 0;
    const PluginState& state = State();
    if (!state.options.Requested()) return 0;
    if (Status complete = slurm::Complete(state.options); !complete.ok()) {
      slurm_error("fgpu: %s", complete.message().c_str());
      return -1;
    }
    if (!state.config.ok()) {
      slurm_error("fgpu: the plugin's arguments in plugstack.conf: %s", state.config.status().message().c_str());
      return -1;
    }
  } catch (...) {
    slurm_error("fgpu: internal error while checking the options");
    return -1;
  }
  return 0;
}

// Fail closed: a step that asked for a slice runs only inside one.
FGPU_SPANK_EXPORT int slurm_spank_task_init(spank_t sp, int, char**) {
  try {
    const PluginState& state = State();
    if (!state.asked) {
      // Shards Slurm set up after the step started: no slice was made, so the GPU would be shared
      // unenforced. Never run it so.
      const uint64_t shards = ShardsOnNode(sp);
      if (shards == 0) return 0;
      slurm_error("fgpu: the step has %llu shard(s) of a GPU but no slice (SLURM_SHARDS_ON_NODE appeared after the "
                  "step started): add --gpu-memory=SIZE",
                  static_cast<unsigned long long>(shards));
      return -1;
    }
    if (state.slice) return ApplySlice(sp, state);
    slurm_error("fgpu: %s", state.refusal.empty() ? "internal error: the step has no slice" : state.refusal.c_str());
  } catch (...) {
    slurm_error("fgpu: internal error while preparing the task's environment");
  }
  return -1;
}

FGPU_SPANK_EXPORT int slurm_spank_exit(spank_t, int, char**) {
  try {
    PluginState& state = State();
    if (spank_context() != S_CTX_REMOTE || !state.slice || !state.owned) return 0;  // the job's: its batch step's
    const Status released = slurm::ReleaseSlice(
        state.slice->id, slurm::UnixAgent(state.agent_socket, state.config.ok() ? state.config->timeout_ms
                                                                                 : slurm::kDefaultTimeoutMs));
    if (!released.ok()) {
      slurm_error("fgpu: %s; the agent releases it once the step's processes have exited", released.message().c_str());
    }
    state.slice.reset();
  } catch (...) {
    slurm_error("fgpu: internal error while releasing the slice");
  }
  return 0;
}

}  // extern "C"
