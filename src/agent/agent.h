// RunAgent: `fgpu agent` — discovers the GPUs, restores the state, serves the API until SIGINT
// or SIGTERM (docs/agent.md).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace fgpu::agent {

struct AgentOptions {
  std::string state_dir;  // agent.db, slices/, agent.sock
  std::string listen;     // "127.0.0.1:PORT" (port 0: any); empty: Unix socket only
  std::string socket;     // empty: <state_dir>/agent.sock
  double account_interval_s = 60;  // how often usage records are closed (chargeback)
  std::string policy = "FGD+";  // placement policy (src/sched)
  std::string config;  // JSON file (config.h): stop_loss, access, usage_retention_days, log_level
  // debug, info, warn or error (log.h); empty: the configuration's log_level, else info.
  std::string log_level;
  // A 0600 file holding the token that makes a TCP client an admin; empty: TCP is read-only.
  std::string token_file;
  // What each slice's "env" names besides FGPU_SLICE and CUDA_VISIBLE_DEVICES (api.h
  // WorkloadEnvironment): the interposer, and the simulator's variables when simulated.
  std::string workload_preload;
  std::vector<std::pair<std::string, std::string>> workload_env;
};

// Returns the process exit code: 0 after a clean stop, 1 when it could not start (the reason
// on stderr).
int RunAgent(const AgentOptions& options);

}  // namespace fgpu::agent
