// Tests of the simulated driver's graph nodes: node types and parameter getters, cuGraphAddNode,
// empty and child graph nodes, cloning, the driver's rules for graphs with memory nodes, and
// stream capture of the stream-ordered allocator, whose allocation nodes take device memory on
// an executable graph's first launch like those of cuGraphAddMemAllocNode.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/abi/cuda_api.h"
#include "sim/cuda/child_process.h"
#include "sim/cuda/sim_test_env.h"

namespace fgpu::sim::testing {
namespace {

constexpr const char* kGraphConfig = R"({
  "devices": [{"count": 2, "memory": "8GiB", "sm_count": 16, "context_overhead": "500MiB"}],
  "kernels": {"k100us": {"wave_us": 100}},
  "default_kernel_wave_us": 10
})";

constexpr const char* kGraphPtx =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry k100us()\n{\n ret;\n}\n";

std::string RunGraphSim(const std::function<std::string()>& body) { return RunWithConfig(kGraphConfig, "graph-test", body); }

CUfunction LoadKernel() {
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  if (cuModuleLoadData(&module, kGraphPtx) != CUDA_SUCCESS) return nullptr;
  return cuModuleGetFunction(&function, module, "k100us") == CUDA_SUCCESS ? function : nullptr;
}

CUDA_MEM_ALLOC_NODE_PARAMS AllocParams(uint64_t bytes, int device = 0) {
  CUDA_MEM_ALLOC_NODE_PARAMS params;
  std::memset(&params, 0, sizeof(params));
  params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  params.poolProps.location.id = device;
  params.bytesize = bytes;
  return params;
}

CUgraphNodeParams NodeParams(CUgraphNodeType type) {
  CUgraphNodeParams params;
  std::memset(&params, 0, sizeof(params));
  params.type = type;
  return params;
}

std::vector<CUgraphNode> Nodes(CUgraph graph) {
  size_t count = 0;
  if (cuGraphGetNodes(graph, nullptr, &count) != CUDA_SUCCESS) return {};
  std::vector<CUgraphNode> nodes(count);
  if (count != 0 && cuGraphGetNodes(graph, nodes.data(), &count) != CUDA_SUCCESS) return {};
  return nodes;
}

std::vector<CUgraphNodeType> Types(CUgraph graph) {
  std::vector<CUgraphNodeType> types;
  for (CUgraphNode node : Nodes(graph)) {
    CUgraphNodeType type{};
    if (cuGraphNodeGetType(node, &type) != CUDA_SUCCESS) return {};
    types.push_back(type);
  }
  return types;
}

uint64_t GraphReserved(int device = 0) {
  cuuint64_t reserved = ~0ull;
  return cuDeviceGetGraphMemAttribute(device, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved) == CUDA_SUCCESS
             ? reserved
             : ~0ull;
}

TEST(SimGraphNodes, TypesAndParametersRoundTrip) {
  EXPECT_EQ(RunGraphSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUfunction kernel = LoadKernel();
    FGPU_REQUIRE(kernel != nullptr);
    CUgraph graph = nullptr;
    FGPU_REQUIRE_CU(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
    CUgraphNode empty = nullptr, kern = nullptr, alloc = nullptr, release = nullptr;
    FGPU_REQUIRE_CU(cuGraphAddEmptyNode(&empty, graph, nullptr, 0), CUDA_SUCCESS);
    CUDA_KERNEL_NODE_PARAMS k;
    std::memset(&k, 0, sizeof(k));
    k.func = kernel;
    k.gridDimX = k.gridDimY = k.gridDimZ = 1;
    k.blockDimX = k.blockDimY = k.blockDimZ = 1;
    FGPU_REQUIRE_CU(cuGraphAddKernelNode_v2(&kern, graph, &empty, 1, &k), CUDA_SUCCESS);
    const CUmemAccessDesc access[2] = {{{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE},
                                       {{CU_MEM_LOCATION_TYPE_DEVICE, 1}, CU_MEM_ACCESS_FLAGS_PROT_READ}};
    CUDA_MEM_ALLOC_NODE_PARAMS params = AllocParams(3 * kMiB + 5, 1);
    params.accessDescs = access;
    params.accessDescCount = 2;
    FGPU_REQUIRE_CU(cuGraphAddMemAllocNode(&alloc, graph, &kern, 1, &params), CUDA_SUCCESS);
    FGPU_REQUIRE(params.dptr != 0);
    FGPU_REQUIRE_CU(cuGraphAddMemFreeNode(&release, graph, &alloc, 1, params.dptr), CUDA_SUCCESS);

    FGPU_REQUIRE(Nodes(graph) == (std::vector<CUgraphNode>{empty, kern, alloc, release}));
    FGPU_REQUIRE(Types(graph) == (std::vector<CUgraphNodeType>{CU_GRAPH_NODE_TYPE_EMPTY, CU_GRAPH_NODE_TYPE_KERNEL,
                                                              CU_GRAPH_NODE_TYPE_MEM_ALLOC,
                                                              CU_GRAPH_NODE_TYPE_MEM_FREE}));
    CUDA_MEM_ALLOC_NODE_PARAMS out;
    std::memset(&out, 0xff, sizeof(out));
    FGPU_REQUIRE_CU(cuGraphMemAllocNodeGetParams(alloc, &out), CUDA_SUCCESS);
    FGPU_REQUIRE(out.bytesize == 3 * kMiB + 5 && out.dptr == params.dptr);
    FGPU_REQUIRE(out.poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE && out.poolProps.location.id == 1);
    FGPU_REQUIRE(out.poolProps.allocType == CU_MEM_ALLOCATION_TYPE_PINNED);
    FGPU_REQUIRE(out.accessDescCount == 2 && out.accessDescs != nullptr && out.accessDescs != access);
    FGPU_REQUIRE(out.accessDescs[1].location.id == 1 && out.accessDescs[1].flags == CU_MEM_ACCESS_FLAGS_PROT_READ);
    CUdeviceptr freed = 0;
    FGPU_REQUIRE_CU(cuGraphMemFreeNodeGetParams(release, &freed), CUDA_SUCCESS);
    FGPU_REQUIRE(freed == params.dptr);

    // Wrong node kinds, null outputs, stale handles.
    FGPU_REQUIRE_CU(cuGraphMemAllocNodeGetParams(kern, &out), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuGraphMemFreeNodeGetParams(alloc, &freed), CUDA_ERROR_INVALID_VALUE);
    CUgraph child = nullptr;
    FGPU_REQUIRE_CU(cuGraphChildGraphNodeGetGraph(empty, &child), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuGraphMemAllocNodeGetParams(alloc, nullptr), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuGraphNodeGetType(alloc, nullptr), CUDA_ERROR_INVALID_VALUE);
    CUgraphNodeType type{};
    FGPU_REQUIRE_CU(cuGraphNodeGetType(reinterpret_cast<CUgraphNode>(0x40), &type), CUDA_ERROR_INVALID_VALUE);

    // The driver's checks on memory nodes.
    CUgraphNode node = nullptr;
    // Freed twice in the same graph; an address no allocation node returned.
    FGPU_REQUIRE_CU(cuGraphAddMemFreeNode(&node, graph, nullptr, 0, params.dptr), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuGraphAddMemFreeNode(&node, graph, nullptr, 0, params.dptr + 4096), CUDA_ERROR_INVALID_VALUE);
    CUDA_MEM_ALLOC_NODE_PARAMS bad = AllocParams(kMiB);
    bad.poolProps.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;  // IPC is not supported
    FGPU_REQUIRE_CU(cuGraphAddMemAllocNode(&node, graph, nullptr, 0, &bad), CUDA_ERROR_INVALID_VALUE);
    bad = AllocParams(0);
    FGPU_REQUIRE_CU(cuGraphAddMemAllocNode(&node, graph, nullptr, 0, &bad), CUDA_ERROR_INVALID_VALUE);
    bad = AllocParams(kMiB, 7);
    FGPU_REQUIRE_CU(cuGraphAddMemAllocNode(&node, graph, nullptr, 0, &bad), CUDA_ERROR_INVALID_VALUE);

    FGPU_REQUIRE_CU(cuGraphDestroy(graph), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphNodeGetType(alloc, &type), CUDA_ERROR_INVALID_VALUE);  // nodes die with their graph
    return std::string();
  }), "");
}

TEST(SimGraphNodes, AddNodeBuildsEveryKindAndItsMemoryIsTakenOnFirstLaunch) {
  EXPECT_EQ(RunGraphSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUfunction kernel = LoadKernel();
    FGPU_REQUIRE(kernel != nullptr);
    CUgraph graph = nullptr;
    FGPU_REQUIRE_CU(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
    CUgraphNode empty = nullptr, alloc = nullptr, kern = nullptr, release = nullptr;
    CUgraphNodeParams p = NodeParams(CU_GRAPH_NODE_TYPE_EMPTY);
    FGPU_REQUIRE_CU(cuGraphAddNode(&empty, graph, nullptr, 0, &p), CUDA_SUCCESS);
    p = NodeParams(CU_GRAPH_NODE_TYPE_MEM_ALLOC);
    p.alloc.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.alloc.poolProps.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    p.alloc.bytesize = 600 * kMiB;
    FGPU_REQUIRE_CU(cuGraphAddNode(&alloc, graph, &empty, 1, &p), CUDA_SUCCESS);
    const CUdeviceptr dptr = p.alloc.dptr;
    FGPU_REQUIRE(dptr != 0);
    p = NodeParams(CU_GRAPH_NODE_TYPE_KERNEL);
    p.kernel.func = kernel;
    p.kernel.gridDimX = p.kernel.gridDimY = p.kernel.gridDimZ = 1;
    p.kernel.blockDimX = p.kernel.blockDimY = p.kernel.blockDimZ = 1;
    const CUgraphEdgeData edge{};  // the default: a full dependency
    FGPU_REQUIRE_CU(cuGraphAddNode_v2(&kern, graph, &alloc, &edge, 1, &p), CUDA_SUCCESS);
    p = NodeParams(CU_GRAPH_NODE_TYPE_MEM_FREE);
    p.free.dptr = dptr;
    FGPU_REQUIRE_CU(cuGraphAddNode_v2(&release, graph, &kern, nullptr, 1, &p), CUDA_SUCCESS);
    FGPU_REQUIRE(Types(graph) == (std::vector<CUgraphNodeType>{CU_GRAPH_NODE_TYPE_EMPTY, CU_GRAPH_NODE_TYPE_MEM_ALLOC,
                                                              CU_GRAPH_NODE_TYPE_KERNEL,
                                                              CU_GRAPH_NODE_TYPE_MEM_FREE}));
    CUDA_MEM_ALLOC_NODE_PARAMS out{};
    FGPU_REQUIRE_CU(cuGraphMemAllocNodeGetParams(alloc, &out), CUDA_SUCCESS);
    FGPU_REQUIRE(out.bytesize == 600 * kMiB && out.dptr == dptr);

    // What the simulator refuses, as the driver would.
    CUgraphNode node = nullptr;
    p = NodeParams(CU_GRAPH_NODE_TYPE_EMPTY);
    p.reserved0[1] = 1;
    FGPU_REQUIRE_CU(cuGraphAddNode(&node, graph, nullptr, 0, &p), CUDA_ERROR_INVALID_VALUE);
    p = NodeParams(CU_GRAPH_NODE_TYPE_EMPTY);
    p.reserved2 = 1;
    FGPU_REQUIRE_CU(cuGraphAddNode(&node, graph, nullptr, 0, &p), CUDA_ERROR_INVALID_VALUE);
    p = NodeParams(static_cast<CUgraphNodeType>(15));  // no such node type
    FGPU_REQUIRE_CU(cuGraphAddNode(&node, graph, nullptr, 0, &p), CUDA_ERROR_INVALID_VALUE);
    p = NodeParams(CU_GRAPH_NODE_TYPE_MEMCPY);  // a copy of nothing
    FGPU_REQUIRE_CU(cuGraphAddNode(&node, graph, nullptr, 0, &p), CUDA_ERROR_INVALID_VALUE);
    p = NodeParams(CU_GRAPH_NODE_TYPE_CONDITIONAL);  // the driver node type the simulator has not
    FGPU_REQUIRE_CU(cuGraphAddNode(&node, graph, nullptr, 0, &p), CUDA_ERROR_NOT_SUPPORTED);
    p = NodeParams(CU_GRAPH_NODE_TYPE_EMPTY);
    CUgraphEdgeData programmatic{};
    programmatic.type = 1;
    FGPU_REQUIRE_CU(cuGraphAddNode_v2(&node, graph, &kern, &programmatic, 1, &p), CUDA_ERROR_NOT_SUPPORTED);
    CUgraphEdgeData dirty{};
    dirty.reserved[4] = 1;
    FGPU_REQUIRE_CU(cuGraphAddNode_v2(&node, graph, &kern, &dirty, 1, &p), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuGraphAddNode(&node, graph, nullptr, 0, nullptr), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuGraphAddNode(nullptr, graph, nullptr, 0, &p), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuGraphAddNode(&node, reinterpret_cast<CUgraph>(0x40), nullptr, 0, &p), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE(Nodes(graph).size() == 4);

    // The memory: nothing at instantiation, 600 MiB from the first launch, given back by trim.
    const uint64_t start = FreeBytes();
    CUgraphExec exec = nullptr;
    FGPU_REQUIRE_CU(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
    FGPU_REQUIRE(FreeBytes() == start);
    FGPU_REQUIRE_CU(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE(start - FreeBytes() == 600 * kMiB && GraphReserved() == 600 * kMiB);
    FGPU_REQUIRE_CU(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE(start - FreeBytes() == 600 * kMiB);
    FGPU_REQUIRE_CU(cuCtxSynchronize(), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuDeviceGraphMemTrim(0), CUDA_SUCCESS);
    FGPU_REQUIRE(FreeBytes() == start && GraphReserved() == 0);
    FGPU_REQUIRE_CU(cuGraphExecDestroy(exec), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphDestroy(graph), CUDA_SUCCESS);
    return std::string();
  }), "");
}

TEST(SimGraphNodes, CloneCopiesKernelsAndChildGraphsButNotMemoryNodes) {
  EXPECT_EQ(RunGraphSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUfunction kernel = LoadKernel();
    FGPU_REQUIRE(kernel != nullptr);
    CUDA_KERNEL_NODE_PARAMS k;
    std::memset(&k, 0, sizeof(k));
    k.func = kernel;
    k.gridDimX = k.gridDimY = k.gridDimZ = 1;
    k.blockDimX = k.blockDimY = k.blockDimZ = 1;
    CUgraph inner = nullptr, graph = nullptr;
    CUgraphNode node = nullptr, child_node = nullptr;
    FGPU_REQUIRE_CU(cuGraphCreate(&inner, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphAddKernelNode_v2(&node, inner, nullptr, 0, &k), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphCreate(&graph, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphAddKernelNode_v2(&node, graph, nullptr, 0, &k), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphAddChildGraphNode(&child_node, graph, &node, 1, inner), CUDA_SUCCESS);
    CUgraph embedded = nullptr;
    FGPU_REQUIRE_CU(cuGraphChildGraphNodeGetGraph(child_node, &embedded), CUDA_SUCCESS);
    FGPU_REQUIRE(embedded != nullptr && embedded != inner);  // cloned into the node
    FGPU_REQUIRE(Types(embedded) == std::vector<CUgraphNodeType>{CU_GRAPH_NODE_TYPE_KERNEL});

    CUgraph clone = nullptr;
    FGPU_REQUIRE_CU(cuGraphClone(&clone, graph), CUDA_SUCCESS);
    FGPU_REQUIRE(clone != graph);
    FGPU_REQUIRE(Types(clone) == (std::vector<CUgraphNodeType>{CU_GRAPH_NODE_TYPE_KERNEL, CU_GRAPH_NODE_TYPE_GRAPH}));
    std::vector<CUgraphNode> cloned = Nodes(clone);
    FGPU_REQUIRE(cloned.size() == 2 && cloned[1] != child_node);
    CUgraph cloned_child = nullptr;
    FGPU_REQUIRE_CU(cuGraphChildGraphNodeGetGraph(cloned[1], &cloned_child), CUDA_SUCCESS);
    FGPU_REQUIRE(cloned_child != embedded && Types(cloned_child) == Types(embedded));
    FGPU_REQUIRE_CU(cuGraphAddEmptyNode(&node, graph, nullptr, 0), CUDA_SUCCESS);
    FGPU_REQUIRE(Nodes(clone).size() == 2);  // independent of the original
    CUgraphExec exec = nullptr;
    FGPU_REQUIRE_CU(cuGraphInstantiateWithFlags(&exec, clone, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphLaunch(exec, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphExecDestroy(exec), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphDestroy(clone), CUDA_SUCCESS);
    size_t count = 0;
    FGPU_REQUIRE_CU(cuGraphGetNodes(cloned_child, nullptr, &count), CUDA_ERROR_INVALID_VALUE);  // died with it

    // "Cloning is not supported for graphs which contain memory allocation nodes, memory free
    // nodes": directly, or in a child graph moved into it.
    CUgraph memory = nullptr;
    FGPU_REQUIRE_CU(cuGraphCreate(&memory, 0), CUDA_SUCCESS);
    CUDA_MEM_ALLOC_NODE_PARAMS params = AllocParams(kMiB);
    FGPU_REQUIRE_CU(cuGraphAddMemAllocNode(&node, memory, nullptr, 0, &params), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphClone(&clone, memory), CUDA_ERROR_NOT_SUPPORTED);
    CUgraphNodeParams p = NodeParams(CU_GRAPH_NODE_TYPE_GRAPH);
    p.graph.graph = memory;
    p.graph.ownership = CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE;
    FGPU_REQUIRE_CU(cuGraphAddNode(&node, graph, nullptr, 0, &p), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphClone(&clone, graph), CUDA_ERROR_NOT_SUPPORTED);
    FGPU_REQUIRE_CU(cuGraphClone(nullptr, inner), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuGraphDestroy(graph), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphDestroy(inner), CUDA_SUCCESS);
    return std::string();
  }), "");
}

TEST(SimGraphNodes, ChildGraphsWithMemoryNodesFollowTheDriversRules) {
  EXPECT_EQ(RunGraphSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    // A child graph allocating 600 MiB on device 0 and 64 MiB on device 1.
    CUgraph child = nullptr;
    FGPU_REQUIRE_CU(cuGraphCreate(&child, 0), CUDA_SUCCESS);
    CUgraphNode a0 = nullptr, a1 = nullptr, node = nullptr;
    CUDA_MEM_ALLOC_NODE_PARAMS p0 = AllocParams(600 * kMiB, 0), p1 = AllocParams(64 * kMiB, 1);
    FGPU_REQUIRE_CU(cuGraphAddMemAllocNode(&a0, child, nullptr, 0, &p0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphAddMemAllocNode(&a1, child, nullptr, 0, &p1), CUDA_SUCCESS);

    CUgraph parent = nullptr, other = nullptr;
    FGPU_REQUIRE_CU(cuGraphCreate(&parent, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphCreate(&other, 0), CUDA_SUCCESS);
    // Cloned into a node: refused.
    FGPU_REQUIRE_CU(cuGraphAddChildGraphNode(&node, parent, nullptr, 0, child), CUDA_ERROR_NOT_SUPPORTED);
    CUgraphNodeParams p = NodeParams(CU_GRAPH_NODE_TYPE_GRAPH);
    p.graph.graph = child;
    FGPU_REQUIRE_CU(cuGraphAddNode(&node, parent, nullptr, 0, &p), CUDA_ERROR_NOT_SUPPORTED);  // CLONE
    const int unknown_ownership = 7;
    std::memcpy(&p.graph.ownership, &unknown_ownership, sizeof(unknown_ownership));
    FGPU_REQUIRE_CU(cuGraphAddNode(&node, parent, nullptr, 0, &p), CUDA_ERROR_INVALID_VALUE);
    // Moved into the parent: allowed.
    p.graph.ownership = CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE;
    p.graph.graph = parent;
    FGPU_REQUIRE_CU(cuGraphAddNode(&node, parent, nullptr, 0, &p), CUDA_ERROR_INVALID_VALUE);  // itself
    p.graph.graph = child;
    CUgraphNode child_node = nullptr;
    FGPU_REQUIRE_CU(cuGraphAddNode(&child_node, parent, nullptr, 0, &p), CUDA_SUCCESS);
    CUgraph owned = nullptr;
    FGPU_REQUIRE_CU(cuGraphChildGraphNodeGetGraph(child_node, &owned), CUDA_SUCCESS);
    FGPU_REQUIRE(owned == child);  // moved, not copied
    // A moved graph: not instantiated, destroyed, embedded again or given memory nodes on its own.
    CUgraphExec exec = nullptr;
    FGPU_REQUIRE_CU(cuGraphInstantiateWithFlags(&exec, child, 0), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuGraphDestroy(child), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuGraphAddNode(&node, other, nullptr, 0, &p), CUDA_ERROR_INVALID_VALUE);
    CUDA_MEM_ALLOC_NODE_PARAMS more = AllocParams(kMiB);
    FGPU_REQUIRE_CU(cuGraphAddMemAllocNode(&node, child, nullptr, 0, &more), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuGraphAddMemFreeNode(&node, child, nullptr, 0, p0.dptr), CUDA_ERROR_INVALID_VALUE);
    // The parent frees what its child allocates on device 0; device 1's allocation stays.
    CUgraphNode release = nullptr;
    FGPU_REQUIRE_CU(cuGraphAddMemFreeNode(&release, parent, &child_node, 1, p0.dptr), CUDA_SUCCESS);
    FGPU_REQUIRE(Types(parent) == (std::vector<CUgraphNodeType>{CU_GRAPH_NODE_TYPE_GRAPH, CU_GRAPH_NODE_TYPE_MEM_FREE}));

    const uint64_t start = FreeBytes();
    FGPU_REQUIRE_CU(cuGraphInstantiateWithFlags(&exec, parent, 0), CUDA_SUCCESS);
    CUgraphExec second = nullptr;
    // One executable graph at a time for a graph with memory nodes.
    FGPU_REQUIRE_CU(cuGraphInstantiateWithFlags(&second, parent, 0), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE(FreeBytes() == start);
    FGPU_REQUIRE_CU(cuGraphUpload(exec, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE(start - FreeBytes() == 600 * kMiB);
    FGPU_REQUIRE(GraphReserved(0) == 600 * kMiB && GraphReserved(1) == 64 * kMiB);
    FGPU_REQUIRE_CU(cuCtxSynchronize(), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuDeviceGraphMemTrim(0), CUDA_SUCCESS);
    FGPU_REQUIRE(GraphReserved(0) == 600 * kMiB);  // device 1's allocation is never freed: nothing trimmed
    FGPU_REQUIRE_CU(cuGraphExecDestroy(exec), CUDA_SUCCESS);
    FGPU_REQUIRE(FreeBytes() == start && GraphReserved(0) == 0 && GraphReserved(1) == 0);
    FGPU_REQUIRE_CU(cuGraphInstantiateWithFlags(&second, parent, 0), CUDA_SUCCESS);  // the first is gone
    FGPU_REQUIRE_CU(cuGraphDestroy(parent), CUDA_SUCCESS);
    size_t count = 0;
    FGPU_REQUIRE_CU(cuGraphGetNodes(child, nullptr, &count), CUDA_ERROR_INVALID_VALUE);  // died with its parent
    FGPU_REQUIRE_CU(cuGraphLaunch(second, nullptr), CUDA_SUCCESS);  // the exec outlives its graph
    FGPU_REQUIRE(start - FreeBytes() == 600 * kMiB);
    FGPU_REQUIRE_CU(cuGraphExecDestroy(second), CUDA_SUCCESS);
    FGPU_REQUIRE(FreeBytes() == start);

    // A cloned child graph is embedded too: no memory nodes can be added to it, nor can it be
    // destroyed on its own; nor can a graph with memory nodes be moved into it.
    CUgraph plain = nullptr;
    FGPU_REQUIRE_CU(cuGraphCreate(&plain, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphAddEmptyNode(&node, plain, nullptr, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphAddChildGraphNode(&child_node, other, nullptr, 0, plain), CUDA_SUCCESS);
    CUgraph embedded = nullptr;
    FGPU_REQUIRE_CU(cuGraphChildGraphNodeGetGraph(child_node, &embedded), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphAddMemAllocNode(&node, embedded, nullptr, 0, &more), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuGraphDestroy(embedded), CUDA_ERROR_INVALID_VALUE);
    CUgraph memory = nullptr;
    FGPU_REQUIRE_CU(cuGraphCreate(&memory, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphAddMemAllocNode(&node, memory, nullptr, 0, &more), CUDA_SUCCESS);
    p.graph.graph = memory;
    FGPU_REQUIRE_CU(cuGraphAddNode(&node, embedded, nullptr, 0, &p), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuGraphDestroy(other), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphDestroy(plain), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphDestroy(memory), CUDA_SUCCESS);
    return std::string();
  }), "");
}

TEST(SimGraphCapture, StreamOrderedAllocationsBecomeMemoryNodesTakenOnFirstLaunch) {
  EXPECT_EQ(RunGraphSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUfunction kernel = LoadKernel();
    FGPU_REQUIRE(kernel != nullptr);
    CUmemoryPool pool = nullptr;
    FGPU_REQUIRE_CU(cuDeviceGetMemPool(&pool, 0), CUDA_SUCCESS);
    CUmemPoolProps props{};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location = {CU_MEM_LOCATION_TYPE_DEVICE, 1};
    CUmemoryPool pool1 = nullptr;
    FGPU_REQUIRE_CU(cuMemPoolCreate(&pool1, &props), CUDA_SUCCESS);
    CUstream stream = nullptr;
    FGPU_REQUIRE_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    const uint64_t start = FreeBytes();

    FGPU_REQUIRE_CU(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    CUdeviceptr a = 0, b = 0;
    FGPU_REQUIRE_CU(cuMemAllocAsync(&a, 600 * kMiB, stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuLaunchKernel(kernel, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemAllocFromPoolAsync_ptsz(&b, 10 * kMiB, pool1, stream), CUDA_SUCCESS);
    FGPU_REQUIRE(a != 0 && b != 0 && a != b);
    FGPU_REQUIRE_CU(cuMemFreeAsync(a, stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFreeAsync(a, stream), CUDA_ERROR_INVALID_VALUE);  // freed twice
    FGPU_REQUIRE_CU(cuMemFreeAsync(a + 4096, stream), CUDA_ERROR_INVALID_VALUE);  // not a graph allocation
    // Nothing allocated at capture: not from the device, not from the pools.
    FGPU_REQUIRE(FreeBytes() == start);
    cuuint64_t reserved = 1, used = 1;
    FGPU_REQUIRE_CU(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used), CUDA_SUCCESS);
    FGPU_REQUIRE(reserved == 0 && used == 0);
    CUgraph graph = nullptr;
    FGPU_REQUIRE_CU(cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);

    FGPU_REQUIRE(Types(graph) == (std::vector<CUgraphNodeType>{CU_GRAPH_NODE_TYPE_MEM_ALLOC, CU_GRAPH_NODE_TYPE_KERNEL,
                                                              CU_GRAPH_NODE_TYPE_MEM_ALLOC,
                                                              CU_GRAPH_NODE_TYPE_MEM_FREE}));
    std::vector<CUgraphNode> nodes = Nodes(graph);
    CUDA_MEM_ALLOC_NODE_PARAMS out{};
    FGPU_REQUIRE_CU(cuGraphMemAllocNodeGetParams(nodes[0], &out), CUDA_SUCCESS);
    FGPU_REQUIRE(out.bytesize == 600 * kMiB && out.dptr == a);
    FGPU_REQUIRE(out.poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE && out.poolProps.location.id == 0);
    FGPU_REQUIRE_CU(cuGraphMemAllocNodeGetParams(nodes[2], &out), CUDA_SUCCESS);
    FGPU_REQUIRE(out.bytesize == 10 * kMiB && out.dptr == b);
    FGPU_REQUIRE(out.poolProps.location.id == 1);  // the pool's properties make the node's
    CUdeviceptr freed = 0;
    FGPU_REQUIRE_CU(cuGraphMemFreeNodeGetParams(nodes[3], &freed), CUDA_SUCCESS);
    FGPU_REQUIRE(freed == a);

    CUgraphExec exec = nullptr;
    FGPU_REQUIRE_CU(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
    FGPU_REQUIRE(FreeBytes() == start);
    FGPU_REQUIRE_CU(cuGraphLaunch(exec, stream), CUDA_SUCCESS);
    FGPU_REQUIRE(start - FreeBytes() == 600 * kMiB);
    FGPU_REQUIRE(GraphReserved(0) == 600 * kMiB && GraphReserved(1) == 10 * kMiB);
    FGPU_REQUIRE_CU(cuGraphLaunch(exec, stream), CUDA_SUCCESS);
    FGPU_REQUIRE(start - FreeBytes() == 600 * kMiB);
    FGPU_REQUIRE_CU(cuStreamSynchronize(stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuDeviceGraphMemTrim(0), CUDA_SUCCESS);
    FGPU_REQUIRE(start - FreeBytes() == 600 * kMiB);  // b is never freed inside: nothing trimmed
    FGPU_REQUIRE_CU(cuGraphExecDestroy(exec), CUDA_SUCCESS);
    FGPU_REQUIRE(FreeBytes() == start && GraphReserved(0) == 0 && GraphReserved(1) == 0);
    FGPU_REQUIRE_CU(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved), CUDA_SUCCESS);
    FGPU_REQUIRE(reserved == 0);

    // Outside capture the allocator allocates from the pool again.
    FGPU_REQUIRE_CU(cuMemAllocAsync(&a, 4 * kMiB, stream), CUDA_SUCCESS);
    FGPU_REQUIRE(start - FreeBytes() == 4 * kMiB);
    FGPU_REQUIRE_CU(cuMemFreeAsync(a, stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphDestroy(graph), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
    return std::string();
  }), "");
}

}  // namespace
}  // namespace fgpu::sim::testing
