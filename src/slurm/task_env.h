// The environment a task gets from its slice: the agent's variables merged into the task's, as
// every launcher merges them (api/workload_env.h: LD_PRELOAD and LD_LIBRARY_PATH prepended
// without repeats, every other variable set to the agent's value). Pure; never throws except
// std::bad_alloc.
#pragma once

#include "api/workload_env.h"
#include "slurm/agent_reply.h"

namespace fgpu::slurm {

// The task's current value of a variable, or nullopt when it is unset.
using EnvLookup = api::EnvLookup;

// The (name, value) pairs to set in the task, in the agent's order.
inline EnvList MergeTaskEnv(const EnvList& agent_env, const EnvLookup& current) { return api::MergeEnv(agent_env, current); }

}  // namespace fgpu::slurm
