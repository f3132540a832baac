#include "slurm/task_env.h"

#include <gtest/gtest.h>

#include <map>

namespace fgpu::slurm {
namespace {

EnvLookup From(std::map<std::string, std::string> env) {
  return [env](const std::string& name) -> std::optional<std::string> {
    const auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

const EnvList kAgentEnv = {{"FGPU_SLICE", "/var/lib/fgpu/slices/s1"},
                           {"CUDA_VISIBLE_DEVICES", "GPU-abc"},
                           {"LD_PRELOAD", "/opt/fgpu/lib/fgpu/libfgpu.so"},
                           {"LD_LIBRARY_PATH", "/opt/fgpu/lib/fgpu/sim"}};

TEST(TaskEnv, OnAnEmptyTaskEverythingIsSetAsGiven) {
  EXPECT_EQ(MergeTaskEnv(kAgentEnv, From({})), kAgentEnv);
}

TEST(TaskEnv, PathListsGetTheAgentsEntriesFirstOthersAreReplaced) {
  const EnvList merged = MergeTaskEnv(kAgentEnv, From({{"CUDA_VISIBLE_DEVICES", "0"},
                                                       {"LD_PRELOAD", "/usr/lib/libtcmalloc.so"},
                                                       {"LD_LIBRARY_PATH", "/usr/local/cuda/lib64:/opt/x"}}));
  EXPECT_EQ(merged, (EnvList{{"FGPU_SLICE", "/var/lib/fgpu/slices/s1"},
                             {"CUDA_VISIBLE_DEVICES", "GPU-abc"},
                             {"LD_PRELOAD", "/opt/fgpu/lib/fgpu/libfgpu.so:/usr/lib/libtcmalloc.so"},
                             {"LD_LIBRARY_PATH", "/opt/fgpu/lib/fgpu/sim:/usr/local/cuda/lib64:/opt/x"}}));
}

TEST(TaskEnv, AStepFromABatchScriptDoesNotRepeatEntries) {
  // The batch step's variables are inherited by the steps its script starts.
  const EnvList merged = MergeTaskEnv(
      kAgentEnv, From({{"LD_PRELOAD", "/opt/fgpu/lib/fgpu/libfgpu.so"},
                       {"LD_LIBRARY_PATH", "/opt/x:/opt/fgpu/lib/fgpu/sim::"}}));
  EXPECT_EQ(merged[2].second, "/opt/fgpu/lib/fgpu/libfgpu.so");
  EXPECT_EQ(merged[3].second, "/opt/fgpu/lib/fgpu/sim:/opt/x");
  EXPECT_EQ(MergeTaskEnv({{"LD_PRELOAD", "/a.so"}}, From({{"LD_PRELOAD", ""}}))[0].second, "/a.so");
}

}  // namespace
}  // namespace fgpu::slurm
