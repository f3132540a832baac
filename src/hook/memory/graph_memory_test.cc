// Process level: graph memory nodes under LD_PRELOAD=libfgpu.so on the simulated GPU (8 GiB,
// 100 MiB per context) with a 1 GiB slice. fgpu_hook_graph_helper builds 600 MiB graphs and
// prints each step's result and the ledger's usage (testdata/graph_memory_helper.cc): with
// cuGraphAddMemAllocNode through the whole lifecycle, and with the other ways the driver makes
// allocation nodes (cuGraphAddNode[_v2], moved child graphs, stream capture, clones).
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>

#include "core/abi/cuda_types.h"
#include "core/units.h"
#include "hook/interpose/process_test_support.h"

namespace fgpu::hook::testing {
namespace {

constexpr uint64_t kGraphBytes = 600 * kMiB;

struct StepResult {
  int rc = -1;
  uint64_t used = 0;
};

std::map<std::string, StepResult> ParseSteps(const std::string& out) {
  std::map<std::string, StepResult> steps;
  for (const std::string& line : Lines(out)) {
    std::istringstream in(line);
    std::string name;
    StepResult step;
    if (in >> name >> step.rc >> step.used) steps[name] = step;
  }
  return steps;
}

class GraphMemoryTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_THREAD__)
    // A ThreadSanitizer runtime must start before anything else in the process, which a
    // preloaded library cannot arrange: the helper would crash before the hook ran.
    GTEST_SKIP() << "LD_PRELOAD of a ThreadSanitizer-instrumented libfgpu.so is not supported";
#endif
  }
};

TEST_P(GraphMemoryTest, ChargedOnFirstLaunchCreditedByExecDestroyAndTrim) {
  HookEnvironment env;
  const std::string slice_dir = env.CreateSlice(uint64_t{1} << 30);
  const ProcessResult result = env.Run({FGPU_HOOK_GRAPH_HELPER_PATH, "--lookup", GetParam(), "600"},
                                       {Preload(), "FGPU_SLICE=" + slice_dir});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  std::map<std::string, StepResult> steps = ParseSteps(result.out);
  ASSERT_EQ(steps.count("destroy_context"), 1u) << result.out << result.err;
  const uint64_t base = steps["context"].used;
  EXPECT_GT(base, 0u) << "the context's overhead is charged";
  EXPECT_LE(base + kGraphBytes, 1024 * kMiB) << "one graph fits beside the context";

  EXPECT_EQ(steps["instantiate_a"].rc, CUDA_SUCCESS);
  EXPECT_EQ(steps["instantiate_a"].used, base) << "instantiation charges nothing";
  EXPECT_EQ(steps["launch_a"].rc, CUDA_SUCCESS);
  EXPECT_EQ(steps["launch_a"].used, base + kGraphBytes) << "the first launch charges the allocation node";
  EXPECT_EQ(steps["relaunch_a"].rc, CUDA_SUCCESS);
  EXPECT_EQ(steps["relaunch_a"].used, base + kGraphBytes) << "resident: relaunching charges nothing more";

  EXPECT_EQ(steps["instantiate_b"].rc, CUDA_SUCCESS);
  EXPECT_EQ(steps["launch_b"].rc, CUDA_ERROR_OUT_OF_MEMORY) << "600 MiB more does not fit in the 1 GiB slice";
  EXPECT_EQ(steps["launch_b"].used, base + kGraphBytes);
  EXPECT_EQ(steps["upload_b"].rc, CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(steps["instantiate_upload_b"].rc, CUDA_ERROR_OUT_OF_MEMORY) << "instantiation with upload";
  EXPECT_EQ(steps["instantiate_upload_b"].used, base + kGraphBytes);

  EXPECT_EQ(steps["destroy_a"].rc, CUDA_SUCCESS);
  EXPECT_EQ(steps["destroy_a"].used, base) << "exec destroy releases";
  EXPECT_EQ(steps["launch_b_ptsz"].rc, CUDA_SUCCESS);
  EXPECT_EQ(steps["launch_b_ptsz"].used, base + kGraphBytes);
  EXPECT_EQ(steps["trim"].rc, CUDA_SUCCESS);
  EXPECT_EQ(steps["trim"].used, base) << "trim releases a completed graph that frees what it allocates";
  EXPECT_EQ(steps["driver_reserved_bytes"].used, 0u) << "and the driver agrees";
  EXPECT_EQ(steps["relaunch_b"].rc, CUDA_SUCCESS);
  EXPECT_EQ(steps["relaunch_b"].used, base + kGraphBytes) << "trimmed memory is charged again on relaunch";
  EXPECT_EQ(steps["destroy_b"].used, base);

  EXPECT_EQ(steps["upload_c"].rc, CUDA_SUCCESS);
  EXPECT_EQ(steps["upload_c"].used, base + kGraphBytes) << "upload charges like a launch";
  EXPECT_EQ(steps["trim_c"].rc, CUDA_SUCCESS);
  EXPECT_EQ(steps["trim_c"].used, base + kGraphBytes) << "a graph that keeps its allocation is not trimmed";
  EXPECT_EQ(steps["destroy_graph_c"].used, base + kGraphBytes) << "the exec outlives its graph";
  EXPECT_EQ(steps["destroy_c"].rc, CUDA_SUCCESS);
  EXPECT_EQ(steps["destroy_c"].used, base);
  EXPECT_EQ(steps["destroy_context"].used, 0u);
}

TEST_P(GraphMemoryTest, WithoutTheHookNothingIsCharged) {
  HookEnvironment env;
  const std::string slice_dir = env.CreateSlice(uint64_t{1} << 30);
  const ProcessResult result =
      env.Run({FGPU_HOOK_GRAPH_HELPER_PATH, "--lookup", GetParam(), "600"}, {"FGPU_SLICE=" + slice_dir});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  std::map<std::string, StepResult> steps = ParseSteps(result.out);
  EXPECT_EQ(steps["launch_b"].rc, CUDA_SUCCESS) << "the 8 GiB device has room: only the slice refuses";
  EXPECT_EQ(steps["launch_a"].used, 0u);
}

INSTANTIATE_TEST_SUITE_P(Lookups, GraphMemoryTest, ::testing::Values("direct", "procaddress"));

// (how the allocation nodes are made, lookup)
class GraphMemoryViaTest : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "LD_PRELOAD of a ThreadSanitizer-instrumented libfgpu.so is not supported";
#endif
  }
};

TEST_P(GraphMemoryViaTest, EveryWayToMakeAnAllocationNodeIsChargedOnFirstLaunch) {
  const auto& [via, lookup] = GetParam();
  HookEnvironment env;
  const std::string slice_dir = env.CreateSlice(uint64_t{1} << 30);
  const ProcessResult result =
      env.Run({FGPU_HOOK_GRAPH_HELPER_PATH, "--lookup", lookup, "--via", via, "600"},
              {Preload(), "FGPU_SLICE=" + slice_dir});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  std::map<std::string, StepResult> steps = ParseSteps(result.out);
  ASSERT_EQ(steps.count("destroy_context"), 1u) << result.out << result.err;
  const uint64_t base = steps["context"].used;
  EXPECT_GT(base, 0u);

  EXPECT_EQ(steps["build_a"].rc, CUDA_SUCCESS) << result.out;
  EXPECT_EQ(steps["build_a"].used, base) << "making the graph charges nothing";
  EXPECT_EQ(steps["instantiate_a"].rc, CUDA_SUCCESS);
  EXPECT_EQ(steps["instantiate_a"].used, base) << "instantiation charges nothing";
  EXPECT_EQ(steps["launch_a"].rc, CUDA_SUCCESS);
  EXPECT_EQ(steps["launch_a"].used, base + kGraphBytes) << "the first launch charges the allocation node";
  EXPECT_EQ(steps["relaunch_a"].used, base + kGraphBytes);

  EXPECT_EQ(steps["build_b"].rc, CUDA_SUCCESS) << "made while A is resident: " << result.out;
  EXPECT_EQ(steps["build_b"].used, base + kGraphBytes);
  EXPECT_EQ(steps["instantiate_b"].rc, CUDA_SUCCESS);
  EXPECT_EQ(steps["launch_b"].rc, CUDA_ERROR_OUT_OF_MEMORY) << "600 MiB more does not fit in the 1 GiB slice";
  EXPECT_EQ(steps["launch_b"].used, base + kGraphBytes);
  EXPECT_EQ(steps["driver_reserved_after_refusal"].used, kGraphBytes) << "the driver was not called for B";
  EXPECT_EQ(steps["upload_b"].rc, CUDA_ERROR_OUT_OF_MEMORY);

  EXPECT_EQ(steps["destroy_a"].rc, CUDA_SUCCESS);
  EXPECT_EQ(steps["destroy_a"].used, base) << "exec destroy credits";
  EXPECT_EQ(steps["launch_b_after_destroy"].rc, CUDA_SUCCESS);
  EXPECT_EQ(steps["launch_b_after_destroy"].used, base + kGraphBytes);
  EXPECT_EQ(steps["destroy_b"].used, base);
  EXPECT_EQ(steps["driver_reserved_at_end"].used, 0u);
  EXPECT_EQ(steps["destroy_context"].used, 0u);

  if (via == "capture") {
    // Capturing allocates nothing: the stream-ordered path neither charges nor refuses it, even
    // with A resident and no room left for 600 MiB more; the pool does not grow.
    EXPECT_EQ(steps["a_alloc"].rc, CUDA_SUCCESS);
    EXPECT_EQ(steps["a_alloc"].used, base) << "capture charges nothing";
    EXPECT_EQ(steps["a_free"].rc, CUDA_SUCCESS);
    EXPECT_EQ(steps["a_free"].used, base);
    EXPECT_EQ(steps["a_pool_reserved"].used, 0u);
    EXPECT_EQ(steps["b_alloc"].rc, CUDA_SUCCESS) << "not refused by the stream-ordered path";
    EXPECT_EQ(steps["b_alloc"].used, base + kGraphBytes);
    EXPECT_EQ(steps["b_free"].used, base + kGraphBytes);
    EXPECT_EQ(steps["b_pool_reserved"].used, 0u);
  }
  if (via == "clone") {
    EXPECT_EQ(steps["a_clone_memory_graph"].rc, CUDA_ERROR_NOT_SUPPORTED) << "the driver's answer, forwarded";
    EXPECT_EQ(steps["a_clone_memory_graph"].used, base);
  }
}

INSTANTIATE_TEST_SUITE_P(Ways, GraphMemoryViaTest,
                         ::testing::Combine(::testing::Values("addnode", "child", "capture", "clone"),
                                            ::testing::Values("direct", "procaddress")),
                         [](const ::testing::TestParamInfo<GraphMemoryViaTest::ParamType>& way) {
                           return std::get<0>(way.param) + "_" + std::get<1>(way.param);
                         });

}  // namespace
}  // namespace fgpu::hook::testing
