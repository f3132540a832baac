// The node agent's answer to POST /v1/slices, as the plugin needs it: the slice (id, GPU and
// the environment its workload must get) or the refusal in words a user can act on.
// Pure; never throws except std::bad_alloc.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "api/types.h"
#include "core/status.h"

namespace fgpu::slurm {

using EnvList = api::Env;

struct GrantedSlice {
  std::string id;
  std::string gpu;  // the GPU's UUID
  EnvList env;      // FGPU_SLICE, CUDA_VISIBLE_DEVICES, LD_PRELOAD, ... (the agent's "env")
};

// 201 with a slice: the slice (read by src/api's codec). 201 without an id or an "env" object of
// strings: Internal (the agent is too old for this plugin). Any other status: the Status
// api::StatusOfReply gives it (409 ResourceExhausted, 404 NotFound, 400 InvalidArgument, ...),
// carrying the agent's {"error": ...} text (or the body).
Result<GrantedSlice> ParseCreateReply(int status, const std::string& body);

// GET /v1/slices/{id}: 200 with a slice is the slice; otherwise as ParseCreateReply.
Result<GrantedSlice> ParseGetReply(int status, const std::string& body);

// The "id" of a slice in the agent's JSON, or "" when there is none.
std::string SliceIdOf(const std::string& body);

}  // namespace fgpu::slurm
