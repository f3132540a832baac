// The environment a task gets from its slice: the agent's variables merged into the task's.
//
// LD_PRELOAD and LD_LIBRARY_PATH are lists: the agent's entries go first (the interposer and
// the driver it names must win), joined with ':' to what the task already has, without
// repeating an entry (a step started from a batch script already carries the batch step's).
// Every other variable is set to the agent's value. Pure; never throws except std::bad_alloc.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "slurm/agent_reply.h"

namespace fgpu::slurm {

// The task's current value of a variable, or nullopt when it is unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The (name, value) pairs to set in the task, in the agent's order.
EnvList MergeTaskEnv(const EnvList& agent_env, const EnvLookup& current);

}  // namespace fgpu::slurm
