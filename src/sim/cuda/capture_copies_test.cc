// Sets and copies queued on a stream being captured become memset and memcpy nodes (as CUDA
// graphs captured by PyTorch and friends hold them): nothing is touched at capture, everything
// when the graph runs, in stream order.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/abi/cuda_api.h"
#include "sim/cuda/sim_test_env.h"

namespace fgpu::sim::testing {
namespace {

constexpr const char* kCaptureCopiesConfig = R"({
  "devices": [{"count": 1, "memory": "2GiB", "context_overhead": "100MiB"}]
})";

std::string RunCaptureCopiesSim(const std::function<std::string()>& body) {
  return RunWithConfig(kCaptureCopiesConfig, "capture-copies-test", body);
}

// The kinds of the graph's nodes in the order cuGraphGetNodes lists them.
std::vector<CUgraphNodeType> NodeKinds(CUgraph graph) {
  size_t count = 0;
  if (cuGraphGetNodes(graph, nullptr, &count) != CUDA_SUCCESS) return {};
  std::vector<CUgraphNode> nodes(count);
  if (cuGraphGetNodes(graph, nodes.data(), &count) != CUDA_SUCCESS) return {};
  std::vector<CUgraphNodeType> kinds;
  for (CUgraphNode node : nodes) {
    CUgraphNodeType type{};
    if (cuGraphNodeGetType(node, &type) != CUDA_SUCCESS) return {};
    kinds.push_back(type);
  }
  return kinds;
}

TEST(SimCaptureCopies, SetsAndCopiesBecomeNodesThatRunWithTheGraph) {
  EXPECT_EQ(RunCaptureCopiesSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUstream stream = nullptr;
    FGPU_REQUIRE_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    constexpr size_t kWords = 256;
    CUdeviceptr a = 0, b = 0;
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&a, kWords * 4), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&b, kWords * 4), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD32_v2(a, 1, kWords), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD32_v2(b, 1, kWords), CUDA_SUCCESS);
    std::vector<uint32_t> source(kWords, 9), out(kWords, 0), pitched_out(8, 0);

    FGPU_REQUIRE_CU(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD32Async(a, 7, kWords, stream), CUDA_SUCCESS);            // a = 7
    FGPU_REQUIRE_CU(cuMemcpyHtoDAsync_v2(b, source.data(), 16, stream), CUDA_SUCCESS);  // b[0..3] = 9
    FGPU_REQUIRE_CU(cuMemcpyDtoDAsync_v2(b + 16, a, 16, stream), CUDA_SUCCESS);        // b[4..7] = 7
    FGPU_REQUIRE_CU(cuMemsetD2D8Async(b + 32, 8, 0x05, 4, 2, stream), CUDA_SUCCESS);   // b[8], b[10] = 0x05050505
    FGPU_REQUIRE_CU(cuMemcpyDtoHAsync_v2(out.data(), b, kWords * 4, stream), CUDA_SUCCESS);
    CUDA_MEMCPY2D rows;
    std::memset(&rows, 0, sizeof(rows));
    rows.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    rows.srcDevice = a;
    rows.srcPitch = 16;
    rows.dstMemoryType = CU_MEMORYTYPE_HOST;
    rows.dstHost = pitched_out.data();
    rows.dstPitch = 16;
    rows.WidthInBytes = 8;
    rows.Height = 2;
    FGPU_REQUIRE_CU(cuMemcpy2DAsync_v2(&rows, stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD8Async(a, 0, 0, stream), CUDA_SUCCESS);  // empty: no node
    CUgraph graph = nullptr;
    FGPU_REQUIRE_CU(cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);

    // Nothing ran at capture.
    std::vector<uint32_t> before(kWords, 0);
    FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(before.data(), a, kWords * 4), CUDA_SUCCESS);
    FGPU_REQUIRE(before[0] == 1 && before[kWords - 1] == 1 && out[0] == 0);
    const std::vector<CUgraphNodeType> kinds = NodeKinds(graph);
    FGPU_REQUIRE(kinds == (std::vector<CUgraphNodeType>{CU_GRAPH_NODE_TYPE_MEMSET, CU_GRAPH_NODE_TYPE_MEMCPY,
                                                         CU_GRAPH_NODE_TYPE_MEMCPY, CU_GRAPH_NODE_TYPE_MEMSET,
                                                         CU_GRAPH_NODE_TYPE_MEMCPY, CU_GRAPH_NODE_TYPE_MEMCPY}));

    CUgraphExec exec = nullptr;
    FGPU_REQUIRE_CU(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphLaunch(exec, stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSynchronize(stream), CUDA_SUCCESS);
    FGPU_REQUIRE(out[0] == 9 && out[3] == 9 && out[4] == 7 && out[7] == 7);
    // Two rows of 4 bytes, 8 apart: words 8 and 10.
    FGPU_REQUIRE(out[8] == 0x05050505u && out[9] == 1 && out[10] == 0x05050505u && out[11] == 1);
    FGPU_REQUIRE(out[12] == 1 && out[kWords - 1] == 1);
    FGPU_REQUIRE(pitched_out[0] == 7 && pitched_out[1] == 7 && pitched_out[2] == 0 && pitched_out[4] == 7);

    // Launched again, it runs again: the host buffer is refilled from the device.
    std::fill(out.begin(), out.end(), 0u);
    FGPU_REQUIRE_CU(cuGraphLaunch(exec, stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSynchronize(stream), CUDA_SUCCESS);
    FGPU_REQUIRE(out[0] == 9 && out[4] == 7);

    FGPU_REQUIRE_CU(cuGraphExecDestroy(exec), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphDestroy(graph), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(a), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(b), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
    return std::string();
  }),
            "");
}

TEST(SimCaptureCopies, CopiesWithoutANodeKindStayUnsupportedUnderCapture) {
  EXPECT_EQ(RunCaptureCopiesSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUstream stream = nullptr;
    FGPU_REQUIRE_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUdeviceptr a = 0;
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&a, 64), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    CUcontext current = nullptr;
    FGPU_REQUIRE_CU(cuCtxGetCurrent(&current), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemcpyPeerAsync(a, current, a + 32, current, 16, stream), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUgraph graph = nullptr;
    cuStreamEndCapture(stream, &graph);  // the refusal may have invalidated the capture, as documented
    if (graph != nullptr) {
      FGPU_REQUIRE(NodeKinds(graph).empty());
      FGPU_REQUIRE_CU(cuGraphDestroy(graph), CUDA_SUCCESS);
    }
    FGPU_REQUIRE_CU(cuMemFree_v2(a), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
    return std::string();
  }),
            "");
}

}  // namespace
}  // namespace fgpu::sim::testing
