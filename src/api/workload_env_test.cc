// The workload environment: one slice env, and the launcher's merge of it into a task's.
#include "api/workload_env.h"

#include <gtest/gtest.h>

#include <map>

namespace fgpu::api {
namespace {

EnvLookup From(std::map<std::string, std::string> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    const auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

TEST(WorkloadEnvTest, ASliceNamesItsInterposerDirectoryAndGpu) {
  const WorkloadSetup setup{"/opt/fgpu/lib/fgpu/libfgpu.so", {{"FGPU_SIM_SEGMENT", "/fgpu-node1"}}};
  EXPECT_EQ(SliceEnv(setup, "/state/slices/s1", "GPU-b"),
            (Env{{"FGPU_SIM_SEGMENT", "/fgpu-node1"},
                 {"LD_PRELOAD", "/opt/fgpu/lib/fgpu/libfgpu.so"},
                 {"FGPU_SLICE", "/state/slices/s1"},
                 {"CUDA_VISIBLE_DEVICES", "GPU-b"}}));
  EXPECT_EQ(SliceEnv({}, "/d", "GPU-a"), (Env{{"FGPU_SLICE", "/d"}, {"CUDA_VISIBLE_DEVICES", "GPU-a"}}))
      << "no interposer known: the launcher finds its own";
}

TEST(WorkloadEnvTest, PathListsArePrependedOnceAndTheRestIsSet) {
  const Env slice = {{"LD_PRELOAD", "/opt/fgpu/libfgpu.so"},
                     {"LD_LIBRARY_PATH", "/opt/fgpu/sim"},
                     {"FGPU_SLICE", "/s/1"},
                     {"CUDA_VISIBLE_DEVICES", "GPU-a"}};
  const Env merged = MergeEnv(slice, From({{"LD_PRELOAD", "/usr/lib/libother.so:/opt/fgpu/libfgpu.so"},
                                           {"LD_LIBRARY_PATH", "::/usr/lib::"},
                                           {"CUDA_VISIBLE_DEVICES", "0,1"}}));
  EXPECT_EQ(merged, (Env{{"LD_PRELOAD", "/opt/fgpu/libfgpu.so:/usr/lib/libother.so"},
                         {"LD_LIBRARY_PATH", "/opt/fgpu/sim:/usr/lib"},
                         {"FGPU_SLICE", "/s/1"},
                         {"CUDA_VISIBLE_DEVICES", "GPU-a"}}));
  EXPECT_EQ(MergeEnv(slice, From({})), slice) << "nothing set: the slice's values as they are";
  EXPECT_EQ(PrependPaths("a:b", "b:c:a"), "a:b:c");
}

}  // namespace
}  // namespace fgpu::api
