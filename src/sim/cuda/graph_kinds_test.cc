// Tests of graph edges and topology, the node kinds beyond kernels and memory nodes (memset,
// memcpy, host, events, external semaphores, memory operations), executable-graph updates, user
// objects, stream capture info and dependencies, and stream attributes.
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "core/abi/cuda_api.h"
#include "sim/cuda/child_process.h"
#include "sim/cuda/sim_test_env.h"

namespace fgpu::sim::testing {
namespace {

constexpr const char* kKindsConfig = R"({
  "devices": [{"count": 1, "memory": "4GiB", "sm_count": 16, "context_overhead": "100MiB"}],
  "default_kernel_wave_us": 10
})";

constexpr const char* kKindsPtx =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry tick()\n{\n ret;\n}\n";

std::string RunKindsSim(const std::function<std::string()>& body) { return RunWithConfig(kKindsConfig, "kinds-test", body); }

CUfunction GkKernel() {
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  if (cuModuleLoadData(&module, kKindsPtx) != CUDA_SUCCESS) return nullptr;
  return cuModuleGetFunction(&function, module, "tick") == CUDA_SUCCESS ? function : nullptr;
}

CUDA_KERNEL_NODE_PARAMS GkKernelParams(CUfunction f, unsigned grid = 1) {
  CUDA_KERNEL_NODE_PARAMS k;
  std::memset(&k, 0, sizeof(k));
  k.func = f;
  k.gridDimX = grid;
  k.gridDimY = k.gridDimZ = 1;
  k.blockDimX = k.blockDimY = k.blockDimZ = 1;
  return k;
}

// Host nodes append their tag here, so a test can see the order they ran in.
std::mutex g_order_mu;
std::vector<int> g_order;
void GkRecord(void* tag) {
  std::lock_guard lock(g_order_mu);
  g_order.push_back(static_cast<int>(reinterpret_cast<intptr_t>(tag)));
}
CUDA_HOST_NODE_PARAMS GkHost(int tag) { return {GkRecord, reinterpret_cast<void*>(static_cast<intptr_t>(tag))}; }

CUgraphNode GkAddHost(CUgraph graph, int tag, const std::vector<CUgraphNode>& deps = {}) {
  CUgraphNode node = nullptr;
  const CUDA_HOST_NODE_PARAMS params = GkHost(tag);
  return cuGraphAddHostNode(&node, graph, deps.data(), deps.size(), &params) == CUDA_SUCCESS ? node : nullptr;
}

CUDA_MEMSET_NODE_PARAMS GkMemset(CUdeviceptr dst, unsigned value, size_t words) {
  return CUDA_MEMSET_NODE_PARAMS{dst, 0, value, 4, words, 1};
}

CUDA_MEMCPY3D GkCopyDtoH(void* dst, CUdeviceptr src, size_t bytes) {
  CUDA_MEMCPY3D copy;
  std::memset(&copy, 0, sizeof(copy));
  copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.srcDevice = src;
  copy.dstMemoryType = CU_MEMORYTYPE_HOST;
  copy.dstHost = dst;
  copy.WidthInBytes = bytes;
  copy.Height = 1;
  copy.Depth = 1;
  return copy;
}

TEST(SimGraphEdges, EdgesQueriesAndTopologicalLaunchOrder) {
  EXPECT_EQ(RunKindsSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUgraph graph = nullptr;
    FGPU_REQUIRE_CU(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
    // Created 1, 2, 3 but ordered 3 -> 2 -> 1 by edges added afterwards.
    CUgraphNode one = GkAddHost(graph, 1), two = GkAddHost(graph, 2), three = GkAddHost(graph, 3);
    FGPU_REQUIRE(one != nullptr && two != nullptr && three != nullptr);
    const CUgraphNode from[2] = {three, two};
    const CUgraphNode to[2] = {two, one};
    FGPU_REQUIRE_CU(cuGraphAddDependencies(graph, from, to, 2), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphAddDependencies(graph, from, to, 1), CUDA_ERROR_INVALID_VALUE);  // exists already
    FGPU_REQUIRE_CU(cuGraphAddDependencies(graph, &one, &one, 1), CUDA_ERROR_INVALID_VALUE);  // self edge

    size_t count = 0;
    FGPU_REQUIRE_CU(cuGraphGetEdges(graph, nullptr, nullptr, &count), CUDA_SUCCESS);
    FGPU_REQUIRE(count == 2);
    CUgraphNode f[3] = {}, t[3] = {};
    CUgraphEdgeData data[3];
    std::memset(data, 0xff, sizeof(data));
    count = 3;
    FGPU_REQUIRE_CU(cuGraphGetEdges_v2(graph, f, t, data, &count), CUDA_SUCCESS);
    FGPU_REQUIRE(count == 2 && f[2] == nullptr && t[2] == nullptr);
    FGPU_REQUIRE(data[0].type == 0 && data[1].from_port == 0);
    FGPU_REQUIRE((f[0] == two && t[0] == one) || (f[0] == three && t[0] == two));

    CUgraphNode roots[3] = {};
    count = 3;
    FGPU_REQUIRE_CU(cuGraphGetRootNodes(graph, roots, &count), CUDA_SUCCESS);
    FGPU_REQUIRE(count == 1 && roots[0] == three);
    CUgraphNode deps[2] = {};
    count = 2;
    FGPU_REQUIRE_CU(cuGraphNodeGetDependencies(one, deps, &count), CUDA_SUCCESS);
    FGPU_REQUIRE(count == 1 && deps[0] == two);
    count = 2;
    FGPU_REQUIRE_CU(cuGraphNodeGetDependentNodes_v2(three, deps, data, &count), CUDA_SUCCESS);
    FGPU_REQUIRE(count == 1 && deps[0] == two);

    g_order.clear();
    CUgraphExec exec = nullptr;
    FGPU_REQUIRE_CU(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE(g_order == (std::vector<int>{3, 2, 1}));

    // A cycle is refused when instantiated, as invalid structure.
    FGPU_REQUIRE_CU(cuGraphAddDependencies(graph, &one, &three, 1), CUDA_SUCCESS);
    CUgraphExec cyclic = nullptr;
    CUDA_GRAPH_INSTANTIATE_PARAMS params{};
    FGPU_REQUIRE_CU(cuGraphInstantiateWithParams(&cyclic, graph, &params), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE(params.result_out == CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE);
    // Removing an edge that is not there fails; removing the cycle's edge works.
    FGPU_REQUIRE_CU(cuGraphRemoveDependencies(graph, &one, &two, 1), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuGraphRemoveDependencies(graph, &one, &three, 1), CUDA_SUCCESS);

    // Destroying the middle node takes its edges with it.
    FGPU_REQUIRE_CU(cuGraphDestroyNode(two), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphGetEdges(graph, nullptr, nullptr, &count), CUDA_SUCCESS);
    FGPU_REQUIRE(count == 0);
    FGPU_REQUIRE_CU(cuGraphNodeGetDependencies(two, nullptr, &count), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuGraphGetRootNodes(graph, nullptr, &count), CUDA_SUCCESS);
    FGPU_REQUIRE(count == 2);

    // Programmatic edges are refused as not simulated; a node of another graph is no dependency.
    CUgraph other = nullptr;
    FGPU_REQUIRE_CU(cuGraphCreate(&other, 0), CUDA_SUCCESS);
    CUgraphNode stranger = GkAddHost(other, 9);
    FGPU_REQUIRE_CU(cuGraphAddDependencies(graph, &stranger, &one, 1), CUDA_ERROR_INVALID_VALUE);
    CUgraphEdgeData programmatic{};
    programmatic.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
    FGPU_REQUIRE_CU(cuGraphAddDependencies_v2(graph, &three, &one, &programmatic, 1), CUDA_ERROR_NOT_SUPPORTED);
    FGPU_REQUIRE_CU(cuGraphGetEdges(graph, nullptr, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuGraphExecDestroy(exec), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphDestroy(other), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphDestroy(graph), CUDA_SUCCESS);
    return std::string();
  }),
            "");
}

TEST(SimGraphKinds, MemsetMemcpyHostAndEventNodesRunOnLaunch) {
  EXPECT_EQ(RunKindsSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUdeviceptr buffer = 0;
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&buffer, 4096), CUDA_SUCCESS);
    uint32_t host[16] = {};
    CUevent done = nullptr;
    FGPU_REQUIRE_CU(cuEventCreate(&done, 0), CUDA_SUCCESS);

    CUgraph graph = nullptr;
    FGPU_REQUIRE_CU(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
    CUgraphNode set = nullptr, copy = nullptr, record = nullptr;
    const CUDA_MEMSET_NODE_PARAMS memset_params = GkMemset(buffer, 0xC0FFEE, 16);
    FGPU_REQUIRE_CU(cuGraphAddMemsetNode(&set, graph, nullptr, 0, &memset_params, ctx.get()), CUDA_SUCCESS);
    const CUDA_MEMCPY3D copy_params = GkCopyDtoH(host, buffer, sizeof(host));
    FGPU_REQUIRE_CU(cuGraphAddMemcpyNode(&copy, graph, &set, 1, &copy_params, ctx.get()), CUDA_SUCCESS);
    CUgraphNode host_node = GkAddHost(graph, 7, {copy});
    FGPU_REQUIRE(host_node != nullptr);
    FGPU_REQUIRE_CU(cuGraphAddEventRecordNode(&record, graph, &host_node, 1, done), CUDA_SUCCESS);

    // Parameters round-trip.
    CUDA_MEMSET_NODE_PARAMS memset_out{};
    FGPU_REQUIRE_CU(cuGraphMemsetNodeGetParams(set, &memset_out), CUDA_SUCCESS);
    FGPU_REQUIRE(memset_out.dst == buffer && memset_out.value == 0xC0FFEE && memset_out.width == 16);
    CUDA_MEMCPY3D copy_out{};
    FGPU_REQUIRE_CU(cuGraphMemcpyNodeGetParams(copy, &copy_out), CUDA_SUCCESS);
    FGPU_REQUIRE(copy_out.dstHost == host && copy_out.WidthInBytes == sizeof(host));
    CUDA_HOST_NODE_PARAMS host_out{};
    FGPU_REQUIRE_CU(cuGraphHostNodeGetParams(host_node, &host_out), CUDA_SUCCESS);
    FGPU_REQUIRE(host_out.fn == GkRecord);
    CUevent event_out = nullptr;
    FGPU_REQUIRE_CU(cuGraphEventRecordNodeGetEvent(record, &event_out), CUDA_SUCCESS);
    FGPU_REQUIRE(event_out == done);
    FGPU_REQUIRE_CU(cuGraphEventWaitNodeGetEvent(record, &event_out), CUDA_ERROR_INVALID_VALUE);  // wrong kind
    CUgraphNodeType type{};
    FGPU_REQUIRE_CU(cuGraphNodeGetType(copy, &type), CUDA_SUCCESS);
    FGPU_REQUIRE(type == CU_GRAPH_NODE_TYPE_MEMCPY);

    // Refusals: a bad element size, memory the driver does not know, a NULL host function.
    CUgraphNode bad = nullptr;
    CUDA_MEMSET_NODE_PARAMS odd = memset_params;
    odd.elementSize = 3;
    FGPU_REQUIRE_CU(cuGraphAddMemsetNode(&bad, graph, nullptr, 0, &odd, ctx.get()), CUDA_ERROR_INVALID_VALUE);
    odd = memset_params;
    odd.dst = 0x1000;
    FGPU_REQUIRE_CU(cuGraphAddMemsetNode(&bad, graph, nullptr, 0, &odd, ctx.get()), CUDA_ERROR_INVALID_VALUE);
    const CUDA_HOST_NODE_PARAMS no_fn{nullptr, nullptr};
    FGPU_REQUIRE_CU(cuGraphAddHostNode(&bad, graph, nullptr, 0, &no_fn), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuGraphAddEventWaitNode(&bad, graph, nullptr, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
    CUDA_MEMCPY3D from_array = copy_params;
    from_array.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    from_array.srcArray = reinterpret_cast<CUarray>(0x1234);  // no array
    FGPU_REQUIRE_CU(cuGraphAddMemcpyNode(&bad, graph, nullptr, 0, &from_array, ctx.get()), CUDA_ERROR_INVALID_VALUE);

    g_order.clear();
    CUgraphExec exec = nullptr;
    FGPU_REQUIRE_CU(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
    for (uint32_t word : host) FGPU_REQUIRE(word == 0xC0FFEE);
    FGPU_REQUIRE(g_order == std::vector<int>{7});
    FGPU_REQUIRE_CU(cuEventQuery(done), CUDA_SUCCESS);  // recorded by the graph

    // New node parameters show in a new executable graph.
    const CUDA_MEMSET_NODE_PARAMS zero = GkMemset(buffer, 0, 16);
    FGPU_REQUIRE_CU(cuGraphMemsetNodeSetParams(set, &zero), CUDA_SUCCESS);
    CUgraphExec again = nullptr;
    FGPU_REQUIRE_CU(cuGraphInstantiateWithFlags(&again, graph, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphLaunch(again, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
    for (uint32_t word : host) FGPU_REQUIRE(word == 0);

    FGPU_REQUIRE_CU(cuGraphExecDestroy(exec), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphExecDestroy(again), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphDestroy(graph), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuEventDestroy_v2(done), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(buffer), CUDA_SUCCESS);
    return std::string();
  }),
            "");
}

TEST(SimGraphKinds, SemaphoreMemOpAndGenericNodes) {
  EXPECT_EQ(RunKindsSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUdeviceptr word = 0;
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&word, 4096), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD32_v2(word, 0, 1), CUDA_SUCCESS);
    CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC desc{};
    desc.type = CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD;
    desc.handle.fd = eventfd(0, EFD_CLOEXEC);
    CUexternalSemaphore semaphore = nullptr;
    FGPU_REQUIRE_CU(cuImportExternalSemaphore(&semaphore, &desc), CUDA_SUCCESS);

    CUgraph graph = nullptr;
    FGPU_REQUIRE_CU(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
    // signal -> wait (consumes the signal) -> write the word -> host node.
    CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS signal{};
    CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS wait{};
    const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS signal_params{&semaphore, &signal, 1};
    const CUDA_EXT_SEM_WAIT_NODE_PARAMS wait_params{&semaphore, &wait, 1};
    CUgraphNode signal_node = nullptr, wait_node = nullptr, write_node = nullptr;
    FGPU_REQUIRE_CU(cuGraphAddExternalSemaphoresSignalNode(&signal_node, graph, nullptr, 0, &signal_params),
                    CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphAddExternalSemaphoresWaitNode(&wait_node, graph, &signal_node, 1, &wait_params),
                    CUDA_SUCCESS);
    CUstreamBatchMemOpParams op;
    std::memset(&op, 0, sizeof(op));
    op.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    op.writeValue.address = word;
    op.writeValue.value = 42;
    const CUDA_BATCH_MEM_OP_NODE_PARAMS memop_params{ctx.get(), 1, &op, 0};
    FGPU_REQUIRE_CU(cuGraphAddBatchMemOpNode(&write_node, graph, &wait_node, 1, &memop_params), CUDA_SUCCESS);
    CUgraphNode host_node = GkAddHost(graph, 5, {write_node});
    FGPU_REQUIRE(host_node != nullptr);

    CUDA_EXT_SEM_WAIT_NODE_PARAMS wait_out{};
    FGPU_REQUIRE_CU(cuGraphExternalSemaphoresWaitNodeGetParams(wait_node, &wait_out), CUDA_SUCCESS);
    FGPU_REQUIRE(wait_out.numExtSems == 1 && wait_out.extSemArray[0] == semaphore);
    CUDA_BATCH_MEM_OP_NODE_PARAMS memop_out{};
    FGPU_REQUIRE_CU(cuGraphBatchMemOpNodeGetParams(write_node, &memop_out), CUDA_SUCCESS);
    FGPU_REQUIRE(memop_out.count == 1 && memop_out.paramArray[0].writeValue.value == 42);
    const auto bogus = reinterpret_cast<CUexternalSemaphore>(&desc);
    const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS bogus_params{const_cast<CUexternalSemaphore*>(&bogus), &signal, 1};
    CUgraphNode bad = nullptr;
    FGPU_REQUIRE_CU(cuGraphAddExternalSemaphoresSignalNode(&bad, graph, nullptr, 0, &bogus_params),
                    CUDA_ERROR_INVALID_HANDLE);

    g_order.clear();
    CUgraphExec exec = nullptr;
    FGPU_REQUIRE_CU(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
    uint32_t seen = 0;
    FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(&seen, word, sizeof seen), CUDA_SUCCESS);
    FGPU_REQUIRE(seen == 42);
    FGPU_REQUIRE(g_order == std::vector<int>{5});

    // cuGraphAddNode and cuGraphNodeSetParams take the same kinds.
    CUgraphNodeParams generic;
    std::memset(&generic, 0, sizeof(generic));
    generic.type = CU_GRAPH_NODE_TYPE_MEMSET;
    generic.memset = CUDA_MEMSET_NODE_PARAMS_v2{word, 0, 7, 4, 1, 1, ctx.get()};
    CUgraphNode generic_node = nullptr;
    FGPU_REQUIRE_CU(cuGraphAddNode(&generic_node, graph, &host_node, 1, &generic), CUDA_SUCCESS);
    generic.memset.value = 8;
    FGPU_REQUIRE_CU(cuGraphNodeSetParams(generic_node, &generic), CUDA_SUCCESS);
    CUDA_MEMSET_NODE_PARAMS memset_out{};
    FGPU_REQUIRE_CU(cuGraphMemsetNodeGetParams(generic_node, &memset_out), CUDA_SUCCESS);
    FGPU_REQUIRE(memset_out.value == 8);
    generic.type = CU_GRAPH_NODE_TYPE_HOST;
    generic.host = CUDA_HOST_NODE_PARAMS_v2{GkRecord, nullptr};
    FGPU_REQUIRE_CU(cuGraphNodeSetParams(generic_node, &generic), CUDA_ERROR_INVALID_VALUE);  // keeps its kind
    CUgraphConditionalHandle handle = 0;
    FGPU_REQUIRE_CU(cuGraphConditionalHandleCreate(&handle, graph, ctx.get(), 1, CU_GRAPH_COND_ASSIGN_DEFAULT),
                    CUDA_SUCCESS);
    FGPU_REQUIRE(handle != 0);
    FGPU_REQUIRE_CU(cuGraphConditionalHandleCreate(&handle, graph, ctx.get(), 1, 2), CUDA_ERROR_INVALID_VALUE);

    FGPU_REQUIRE_CU(cuGraphExecDestroy(exec), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphDestroy(graph), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuDestroyExternalSemaphore(semaphore), CUDA_SUCCESS);
    return std::string();
  }),
            "");
}

TEST(SimGraphKinds, KernelNodeParametersAndAttributes) {
  EXPECT_EQ(RunKindsSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUfunction kernel = GkKernel();
    FGPU_REQUIRE(kernel != nullptr);
    CUgraph graph = nullptr;
    FGPU_REQUIRE_CU(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
    CUgraphNode a = nullptr, b = nullptr;
    const CUDA_KERNEL_NODE_PARAMS params = GkKernelParams(kernel, 4);
    FGPU_REQUIRE_CU(cuGraphAddKernelNode_v2(&a, graph, nullptr, 0, &params), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphAddKernelNode_v2(&b, graph, &a, 1, &params), CUDA_SUCCESS);
    CUDA_KERNEL_NODE_PARAMS out;
    std::memset(&out, 0xff, sizeof(out));
    FGPU_REQUIRE_CU(cuGraphKernelNodeGetParams_v2(a, &out), CUDA_SUCCESS);
    FGPU_REQUIRE(out.func == kernel && out.gridDimX == 4 && out.blockDimX == 1 && out.ctx == ctx.get());
    CUDA_KERNEL_NODE_PARAMS bigger = GkKernelParams(kernel, 64);
    FGPU_REQUIRE_CU(cuGraphKernelNodeSetParams_v2(a, &bigger), CUDA_SUCCESS);
    CUDA_KERNEL_NODE_PARAMS_v1 out_v1{};
    FGPU_REQUIRE_CU(cuGraphKernelNodeGetParams(a, &out_v1), CUDA_SUCCESS);
    FGPU_REQUIRE(out_v1.gridDimX == 64);
    bigger.blockDimX = 4096;  // more threads than a block has
    FGPU_REQUIRE_CU(cuGraphKernelNodeSetParams_v2(a, &bigger), CUDA_ERROR_INVALID_VALUE);

    CUkernelNodeAttrValue value;
    std::memset(&value, 0, sizeof(value));
    value.priority = 3;
    FGPU_REQUIRE_CU(cuGraphKernelNodeSetAttribute(a, CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, &value), CUDA_SUCCESS);
    value.accessPolicyWindow.base_ptr = reinterpret_cast<void*>(0x1000);
    value.accessPolicyWindow.num_bytes = 4096;
    value.accessPolicyWindow.hitRatio = 0.5f;
    value.accessPolicyWindow.hitProp = CU_ACCESS_PROPERTY_PERSISTING;
    FGPU_REQUIRE_CU(cuGraphKernelNodeSetAttribute(a, CU_KERNEL_NODE_ATTRIBUTE_ACCESS_POLICY_WINDOW, &value),
                    CUDA_SUCCESS);
    value.accessPolicyWindow.hitRatio = 2.0f;
    FGPU_REQUIRE_CU(cuGraphKernelNodeSetAttribute(a, CU_KERNEL_NODE_ATTRIBUTE_ACCESS_POLICY_WINDOW, &value),
                    CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuGraphKernelNodeCopyAttributes(b, a), CUDA_SUCCESS);
    CUkernelNodeAttrValue read{};
    FGPU_REQUIRE_CU(cuGraphKernelNodeGetAttribute(b, CU_KERNEL_NODE_ATTRIBUTE_PRIORITY, &read), CUDA_SUCCESS);
    FGPU_REQUIRE(read.priority == 3);
    FGPU_REQUIRE_CU(cuGraphKernelNodeGetAttribute(b, CU_KERNEL_NODE_ATTRIBUTE_ACCESS_POLICY_WINDOW, &read),
                    CUDA_SUCCESS);
    FGPU_REQUIRE(read.accessPolicyWindow.num_bytes == 4096 && read.accessPolicyWindow.hitRatio == 0.5f);
    FGPU_REQUIRE_CU(cuGraphKernelNodeGetAttribute(b, CU_LAUNCH_ATTRIBUTE_IGNORE, &read), CUDA_ERROR_INVALID_VALUE);
    CUgraphNode empty = nullptr;
    FGPU_REQUIRE_CU(cuGraphAddEmptyNode(&empty, graph, nullptr, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphKernelNodeGetParams_v2(empty, &out), CUDA_ERROR_INVALID_VALUE);  // not a kernel node
    FGPU_REQUIRE_CU(cuGraphDestroy(graph), CUDA_SUCCESS);
    return std::string();
  }),
            "");
}

TEST(SimGraphExec, SetParamsEnableDisableAndUpdate) {
  EXPECT_EQ(RunKindsSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUdeviceptr buffer = 0;
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&buffer, 4096), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD32_v2(buffer, 0, 1), CUDA_SUCCESS);
    auto word = [&] {
      uint32_t value = 0;
      return cuMemcpyDtoH_v2(&value, buffer, sizeof value) == CUDA_SUCCESS ? value : ~0u;
    };
    auto build = [&](unsigned value, CUgraph* out, CUgraphNode* set) {
      if (cuGraphCreate(out, 0) != CUDA_SUCCESS) return false;
      const CUDA_MEMSET_NODE_PARAMS p = GkMemset(buffer, value, 1);
      CUgraphNode host = GkAddHost(*out, static_cast<int>(value));
      return host != nullptr && cuGraphAddMemsetNode(set, *out, &host, 1, &p, ctx.get()) == CUDA_SUCCESS;
    };
    CUgraph graph = nullptr;
    CUgraphNode set = nullptr;
    FGPU_REQUIRE(build(1, &graph, &set));
    CUgraphExec exec = nullptr;
    FGPU_REQUIRE_CU(cuGraphInstantiateWithFlags(&exec, graph, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH),
                    CUDA_SUCCESS);
    cuuint64_t flags = 0;
    FGPU_REQUIRE_CU(cuGraphExecGetFlags(exec, &flags), CUDA_SUCCESS);
    FGPU_REQUIRE(flags == CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);

    // In place: the executable graph changes, its graph does not.
    const CUDA_MEMSET_NODE_PARAMS two = GkMemset(buffer, 2, 1);
    FGPU_REQUIRE_CU(cuGraphExecMemsetNodeSetParams(exec, set, &two, ctx.get()), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE(word() == 2);
    CUDA_MEMSET_NODE_PARAMS in_graph{};
    FGPU_REQUIRE_CU(cuGraphMemsetNodeGetParams(set, &in_graph), CUDA_SUCCESS);
    FGPU_REQUIRE(in_graph.value == 1);
    CUDA_MEMSET_NODE_PARAMS two_d = GkMemset(buffer, 2, 1);
    two_d.height = 2;
    two_d.pitch = 64;
    FGPU_REQUIRE_CU(cuGraphExecMemsetNodeSetParams(exec, set, &two_d, ctx.get()), CUDA_ERROR_INVALID_VALUE);

    // Disabled, the memset does nothing.
    FGPU_REQUIRE_CU(cuMemsetD32_v2(buffer, 9, 1), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphNodeSetEnabled(exec, set, 0), CUDA_SUCCESS);
    unsigned enabled = 1;
    FGPU_REQUIRE_CU(cuGraphNodeGetEnabled(exec, set, &enabled), CUDA_SUCCESS);
    FGPU_REQUIRE(enabled == 0);
    FGPU_REQUIRE_CU(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE(word() == 9);
    FGPU_REQUIRE_CU(cuGraphNodeSetEnabled(exec, set, 1), CUDA_SUCCESS);
    CUgraphNode host = nullptr;
    size_t count = 1;
    FGPU_REQUIRE_CU(cuGraphGetRootNodes(graph, &host, &count), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphNodeSetEnabled(exec, host, 0), CUDA_ERROR_INVALID_VALUE);  // host nodes cannot be

    // A whole-graph update from a graph of the same shape.
    CUgraph same = nullptr;
    CUgraphNode same_set = nullptr;
    FGPU_REQUIRE(build(5, &same, &same_set));
    CUgraphExecUpdateResultInfo info{};
    FGPU_REQUIRE_CU(cuGraphExecUpdate_v2(exec, same, &info), CUDA_SUCCESS);
    FGPU_REQUIRE(info.result == CU_GRAPH_EXEC_UPDATE_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE(word() == 5);
    // The original graph's node handles still name the executable graph's nodes.
    FGPU_REQUIRE_CU(cuGraphExecMemsetNodeSetParams(exec, set, &two, ctx.get()), CUDA_SUCCESS);

    // Another shape is refused with the reason.
    CUgraph other = nullptr;
    FGPU_REQUIRE_CU(cuGraphCreate(&other, 0), CUDA_SUCCESS);
    FGPU_REQUIRE(GkAddHost(other, 1) != nullptr);
    FGPU_REQUIRE_CU(cuGraphExecUpdate_v2(exec, other, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    FGPU_REQUIRE(info.result == CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED && info.errorNode == nullptr);
    CUgraphNode second_host = GkAddHost(other, 2);
    FGPU_REQUIRE(second_host != nullptr);  // two host nodes: same count, another kind
    CUgraphNode error_node = nullptr;
    CUgraphExecUpdateResult result{};
    FGPU_REQUIRE_CU(cuGraphExecUpdate(exec, other, &error_node, &result), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    FGPU_REQUIRE(result == CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED && error_node == second_host);

    FGPU_REQUIRE_CU(cuGraphExecDestroy(exec), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphExecGetFlags(exec, &flags), CUDA_ERROR_INVALID_VALUE);
    for (CUgraph g : {graph, same, other}) FGPU_REQUIRE_CU(cuGraphDestroy(g), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(buffer), CUDA_SUCCESS);
    return std::string();
  }),
            "");
}

TEST(SimGraphClone, FindInCloneAndDotPrint) {
  EXPECT_EQ(RunKindsSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUgraph graph = nullptr;
    FGPU_REQUIRE_CU(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
    CUgraphNode first = GkAddHost(graph, 1);
    CUgraphNode second = GkAddHost(graph, 2, {first});
    FGPU_REQUIRE(first != nullptr && second != nullptr);
    CUgraph clone = nullptr;
    FGPU_REQUIRE_CU(cuGraphClone(&clone, graph), CUDA_SUCCESS);
    CUgraphNode twin = nullptr;
    FGPU_REQUIRE_CU(cuGraphNodeFindInClone(&twin, second, clone), CUDA_SUCCESS);
    FGPU_REQUIRE(twin != nullptr && twin != second);
    CUgraphNode twin_deps[1] = {};
    size_t count = 1;
    FGPU_REQUIRE_CU(cuGraphNodeGetDependencies(twin, twin_deps, &count), CUDA_SUCCESS);
    CUgraphNode first_twin = nullptr;
    FGPU_REQUIRE_CU(cuGraphNodeFindInClone(&first_twin, first, clone), CUDA_SUCCESS);
    FGPU_REQUIRE(count == 1 && twin_deps[0] == first_twin);  // the clone's edges join the clone's nodes
    FGPU_REQUIRE_CU(cuGraphNodeFindInClone(&twin, second, graph), CUDA_ERROR_INVALID_VALUE);

    const std::string path = "/tmp/fgpu-dot-" + std::to_string(getpid()) + ".dot";
    FGPU_REQUIRE_CU(cuGraphDebugDotPrint(graph, path.c_str(), CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE), CUDA_SUCCESS);
    std::stringstream text;
    text << std::ifstream(path).rdbuf();
    unlink(path.c_str());
    const std::string dot = text.str();
    FGPU_REQUIRE(dot.rfind("digraph", 0) == 0);
    FGPU_REQUIRE(dot.find("HOST") != std::string::npos && dot.find("->") != std::string::npos);
    FGPU_REQUIRE_CU(cuGraphDebugDotPrint(graph, "/nonexistent-dir/x.dot", 0), CUDA_ERROR_OPERATING_SYSTEM);
    FGPU_REQUIRE_CU(cuGraphDebugDotPrint(graph, nullptr, 0), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuGraphDestroy(clone), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphDestroy(graph), CUDA_SUCCESS);
    return std::string();
  }),
            "");
}

TEST(SimGraphKinds, MemcpyNodesCopyThroughArraysWithCopy3D) {
  EXPECT_EQ(RunKindsSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUarray array = nullptr;
    const CUDA_ARRAY_DESCRIPTOR desc{16, 4, CU_AD_FORMAT_UNSIGNED_INT32, 1};  // 64-byte rows, 4 rows
    FGPU_REQUIRE_CU(cuArrayCreate_v2(&array, &desc), CUDA_SUCCESS);
    std::vector<uint32_t> in(64), out(64, 0);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint32_t>(i * 3 + 1);
    CUDA_MEMCPY3D to_array;
    std::memset(&to_array, 0, sizeof(to_array));
    to_array.srcMemoryType = CU_MEMORYTYPE_HOST;
    to_array.srcHost = in.data();
    to_array.srcPitch = 64;
    to_array.srcHeight = 4;
    to_array.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    to_array.dstArray = array;
    to_array.WidthInBytes = 64;
    to_array.Height = 4;
    to_array.Depth = 1;
    CUDA_MEMCPY3D from_array;
    std::memset(&from_array, 0, sizeof(from_array));
    from_array.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    from_array.srcArray = array;
    from_array.dstMemoryType = CU_MEMORYTYPE_HOST;
    from_array.dstHost = out.data();
    from_array.dstPitch = 64;
    from_array.dstHeight = 4;
    from_array.WidthInBytes = 64;
    from_array.Height = 4;
    from_array.Depth = 1;
    CUgraph graph = nullptr;
    FGPU_REQUIRE_CU(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
    CUgraphNode first = nullptr, second = nullptr;
    FGPU_REQUIRE_CU(cuGraphAddMemcpyNode(&first, graph, nullptr, 0, &to_array, ctx.get()), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphAddMemcpyNode(&second, graph, &first, 1, &from_array, ctx.get()), CUDA_SUCCESS);
    CUgraphExec exec = nullptr;
    FGPU_REQUIRE_CU(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE(out == in);

    // A copy that runs past the array fails when the graph runs (its bounds are the copy's).
    from_array.Height = 5;
    FGPU_REQUIRE_CU(cuGraphExecMemcpyNodeSetParams(exec, second, &from_array, ctx.get()), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphLaunch(exec, nullptr), CUDA_ERROR_INVALID_VALUE);
    // The memory types of an executable graph's copy cannot change.
    CUDA_MEMCPY3D host_to_host = to_array;
    host_to_host.dstMemoryType = CU_MEMORYTYPE_HOST;
    host_to_host.dstHost = out.data();
    host_to_host.dstPitch = 64;
    FGPU_REQUIRE_CU(cuGraphExecMemcpyNodeSetParams(exec, first, &host_to_host, ctx.get()), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuGraphExecDestroy(exec), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphDestroy(graph), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuArrayDestroy(array), CUDA_SUCCESS);
    return std::string();
  }),
            "");
}

std::atomic<int> g_destroyed{0};
void GkDestroy(void* counter) { static_cast<std::atomic<int>*>(counter)->fetch_add(1); }

TEST(SimUserObjects, ReferenceCountsAcrossGraphsAndExecutableGraphs) {
  EXPECT_EQ(RunKindsSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUuserObject object = nullptr;
    FGPU_REQUIRE_CU(cuUserObjectCreate(&object, &g_destroyed, GkDestroy, 1, 0), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuUserObjectCreate(&object, &g_destroyed, GkDestroy, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC),
                    CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuUserObjectRetain(object, 2), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuUserObjectRelease(object, 2), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuUserObjectRelease(object, 5), CUDA_ERROR_INVALID_VALUE);  // more than it has

    CUgraph graph = nullptr;
    FGPU_REQUIRE_CU(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
    // The graph takes the caller's reference.
    FGPU_REQUIRE_CU(cuGraphRetainUserObject(graph, object, 1, CU_GRAPH_USER_OBJECT_MOVE), CUDA_SUCCESS);
    FGPU_REQUIRE(GkAddHost(graph, 1) != nullptr);
    CUgraphExec exec = nullptr;
    FGPU_REQUIRE_CU(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
    CUgraph clone = nullptr;
    FGPU_REQUIRE_CU(cuGraphClone(&clone, graph), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphDestroy(graph), CUDA_SUCCESS);
    FGPU_REQUIRE(g_destroyed.load() == 0);  // the executable graph and the clone hold it
    FGPU_REQUIRE_CU(cuGraphReleaseUserObject(clone, object, 2), CUDA_ERROR_INVALID_VALUE);  // holds one
    FGPU_REQUIRE_CU(cuGraphReleaseUserObject(clone, object, 1), CUDA_SUCCESS);
    FGPU_REQUIRE(g_destroyed.load() == 0);
    FGPU_REQUIRE_CU(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphExecDestroy(exec), CUDA_SUCCESS);
    for (int i = 0; i < 1000 && g_destroyed.load() == 0; ++i) usleep(1000);
    FGPU_REQUIRE(g_destroyed.load() == 1);
    FGPU_REQUIRE_CU(cuUserObjectRetain(object, 1), CUDA_ERROR_INVALID_VALUE);  // gone
    FGPU_REQUIRE_CU(cuGraphDestroy(clone), CUDA_SUCCESS);
    return std::string();
  }),
            "");
}

TEST(SimStreamCapture, InfoDependenciesAndCaptureIntoAGraph) {
  EXPECT_EQ(RunKindsSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUfunction kernel = GkKernel();
    FGPU_REQUIRE(kernel != nullptr);
    CUstream stream = nullptr;
    FGPU_REQUIRE_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUstreamCaptureStatus status{};
    cuuint64_t id = 0;
    FGPU_REQUIRE_CU(cuStreamGetCaptureInfo(stream, &status, &id), CUDA_SUCCESS);
    FGPU_REQUIRE(status == CU_STREAM_CAPTURE_STATUS_NONE);

    FGPU_REQUIRE_CU(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr), CUDA_SUCCESS);
    const CUDA_HOST_NODE_PARAMS host = GkHost(4);
    FGPU_REQUIRE_CU(cuLaunchHostFunc(stream, host.fn, host.userData), CUDA_SUCCESS);  // a host node
    CUgraph capturing = nullptr;
    const CUgraphNode* deps = nullptr;
    const CUgraphEdgeData* edges = nullptr;
    size_t count = 0;
    FGPU_REQUIRE_CU(cuStreamGetCaptureInfo_v3(stream, &status, &id, &capturing, &deps, &edges, &count), CUDA_SUCCESS);
    FGPU_REQUIRE(status == CU_STREAM_CAPTURE_STATUS_ACTIVE && id != 0 && capturing != nullptr && count == 1);
    CUgraphNodeType type{};
    FGPU_REQUIRE_CU(cuGraphNodeGetType(deps[0], &type), CUDA_SUCCESS);
    FGPU_REQUIRE(type == CU_GRAPH_NODE_TYPE_HOST && edges[0].type == 0);
    const CUgraphNode host_node = deps[0];
    // External event records and waits become event nodes; a plain record is not captured.
    CUevent marker = nullptr;
    FGPU_REQUIRE_CU(cuEventCreate(&marker, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuEventRecord(marker, stream), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    FGPU_REQUIRE_CU(cuEventRecordWithFlags(marker, stream, CU_EVENT_RECORD_EXTERNAL), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamWaitEvent(stream, marker, 1), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamGetCaptureInfo_v2(stream, &status, &id, nullptr, &deps, &count), CUDA_SUCCESS);
    FGPU_REQUIRE(count == 1);
    FGPU_REQUIRE_CU(cuGraphNodeGetType(deps[0], &type), CUDA_SUCCESS);
    FGPU_REQUIRE(type == CU_GRAPH_NODE_TYPE_WAIT_EVENT);
    // The next node forgets its predecessor: a second root.
    FGPU_REQUIRE_CU(cuStreamUpdateCaptureDependencies_v2(stream, nullptr, nullptr, 0, CU_STREAM_SET_CAPTURE_DEPENDENCIES),
                    CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr), CUDA_SUCCESS);
    CUgraphNode add[1] = {host_node};
    FGPU_REQUIRE_CU(cuStreamUpdateCaptureDependencies(stream, add, 1, CU_STREAM_ADD_CAPTURE_DEPENDENCIES), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamGetCaptureInfo_v2(stream, &status, &id, nullptr, &deps, &count), CUDA_SUCCESS);
    FGPU_REQUIRE(count == 2);
    FGPU_REQUIRE_CU(cuStreamUpdateCaptureDependencies(stream, add, 1, 7), CUDA_ERROR_INVALID_VALUE);
    CUgraph graph = nullptr;
    FGPU_REQUIRE_CU(cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
    FGPU_REQUIRE(graph == capturing);
    FGPU_REQUIRE_CU(cuStreamUpdateCaptureDependencies(stream, add, 1, 0), CUDA_ERROR_ILLEGAL_STATE);
    size_t roots = 0;
    FGPU_REQUIRE_CU(cuGraphGetRootNodes(graph, nullptr, &roots), CUDA_SUCCESS);
    FGPU_REQUIRE(roots == 2);

    // Capture into that graph, after its host node.
    FGPU_REQUIRE_CU(cuStreamBeginCaptureToGraph(stream, graph, &host_node, nullptr, 1, CU_STREAM_CAPTURE_MODE_RELAXED),
                    CUDA_SUCCESS);
    CUstream second = nullptr;
    FGPU_REQUIRE_CU(cuStreamCreate(&second, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamBeginCaptureToGraph(second, graph, nullptr, nullptr, 0, CU_STREAM_CAPTURE_MODE_RELAXED),
                    CUDA_ERROR_ILLEGAL_STATE);  // already captured into
    FGPU_REQUIRE_CU(cuGraphDestroy(graph), CUDA_ERROR_INVALID_VALUE);  // not while captured into
    FGPU_REQUIRE_CU(cuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr), CUDA_SUCCESS);
    CUgraph same = nullptr;
    FGPU_REQUIRE_CU(cuStreamEndCapture(stream, &same), CUDA_SUCCESS);
    FGPU_REQUIRE(same == graph);
    size_t dependents = 0;
    FGPU_REQUIRE_CU(cuGraphNodeGetDependentNodes(host_node, nullptr, &dependents), CUDA_SUCCESS);
    FGPU_REQUIRE(dependents == 2);  // the event record node and the kernel captured into the graph
    g_order.clear();
    CUgraphExec exec = nullptr;
    FGPU_REQUIRE_CU(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphLaunch(exec, stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSynchronize(stream), CUDA_SUCCESS);
    FGPU_REQUIRE(g_order == std::vector<int>{4});
    FGPU_REQUIRE_CU(cuEventQuery(marker), CUDA_SUCCESS);  // recorded by the graph's record node

    // The thread's capture mode is exchanged.
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    FGPU_REQUIRE_CU(cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
    FGPU_REQUIRE(mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
    FGPU_REQUIRE_CU(cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
    FGPU_REQUIRE(mode == CU_STREAM_CAPTURE_MODE_RELAXED);
    FGPU_REQUIRE_CU(cuThreadExchangeStreamCaptureMode(nullptr), CUDA_ERROR_INVALID_VALUE);

    FGPU_REQUIRE_CU(cuGraphExecDestroy(exec), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphDestroy(graph), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuEventDestroy_v2(marker), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(second), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
    return std::string();
  }),
            "");
}

TEST(SimStreamAttributes, StoredReadBackAndCopied) {
  EXPECT_EQ(RunKindsSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUstream a = nullptr, b = nullptr;
    FGPU_REQUIRE_CU(cuStreamCreate(&a, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamCreate(&b, 0), CUDA_SUCCESS);
    CUstreamAttrValue value;
    std::memset(&value, 0, sizeof(value));
    value.syncPolicy = CU_SYNC_POLICY_SPIN;
    FGPU_REQUIRE_CU(cuStreamSetAttribute(a, CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY, &value), CUDA_SUCCESS);
    value.priority = -3;
    FGPU_REQUIRE_CU(cuStreamSetAttribute(a, CU_STREAM_ATTRIBUTE_PRIORITY, &value), CUDA_SUCCESS);
    value.memSyncDomain = CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE;
    FGPU_REQUIRE_CU(cuStreamSetAttribute(a, CU_STREAM_ATTRIBUTE_MEM_SYNC_DOMAIN, &value), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSetAttribute(a, CU_LAUNCH_ATTRIBUTE_COOPERATIVE, &value), CUDA_ERROR_INVALID_VALUE);
    int priority = 0;
    FGPU_REQUIRE_CU(cuStreamGetPriority(a, &priority), CUDA_SUCCESS);
    FGPU_REQUIRE(priority == -3);

    FGPU_REQUIRE_CU(cuStreamCopyAttributes(b, a), CUDA_SUCCESS);
    CUstreamAttrValue read{};
    FGPU_REQUIRE_CU(cuStreamGetAttribute(b, CU_STREAM_ATTRIBUTE_SYNCHRONIZATION_POLICY, &read), CUDA_SUCCESS);
    FGPU_REQUIRE(read.syncPolicy == CU_SYNC_POLICY_SPIN);
    FGPU_REQUIRE_CU(cuStreamGetAttribute(b, CU_STREAM_ATTRIBUTE_PRIORITY, &read), CUDA_SUCCESS);
    FGPU_REQUIRE(read.priority == -3);
    FGPU_REQUIRE_CU(cuStreamGetAttribute(b, CU_STREAM_ATTRIBUTE_MEM_SYNC_DOMAIN, &read), CUDA_SUCCESS);
    FGPU_REQUIRE(read.memSyncDomain == CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE);
    FGPU_REQUIRE_CU(cuStreamGetAttribute_ptsz(nullptr, CU_STREAM_ATTRIBUTE_PRIORITY, &read), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamGetAttribute(a, CU_STREAM_ATTRIBUTE_PRIORITY, nullptr), CUDA_ERROR_INVALID_VALUE);

    CUcontext owner = nullptr;
    CUgreenCtx green = reinterpret_cast<CUgreenCtx>(0x1);
    FGPU_REQUIRE_CU(cuStreamGetCtx_v2(a, &owner, &green), CUDA_SUCCESS);
    FGPU_REQUIRE(owner == ctx.get() && green == nullptr);
    FGPU_REQUIRE_CU(cuStreamGetCtx_v2(a, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(a), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(b), CUDA_SUCCESS);
    return std::string();
  }),
            "");
}

}  // namespace
}  // namespace fgpu::sim::testing
