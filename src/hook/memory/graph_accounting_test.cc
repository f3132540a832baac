#include "hook/memory/graph_accounting.h"

#include <gtest/gtest.h>

#include "hook/memory/memory_test_support.h"
#include "slice/slice.h"

namespace fgpu::hook {
namespace {

using testing::FakeDriver;
using testing::TestSlice;

// What the fake driver reports as reserved for graphs, per device; absent: the query fails.
std::map<CUdevice, uint64_t>* g_reported = nullptr;

CUresult FakeGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void* value) {
  if (attr != CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT || g_reported->count(device) == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *static_cast<cuuint64_t*>(value) = (*g_reported)[device];
  return CUDA_SUCCESS;
}

// The fake driver's graphs: what the hook's walk reads through GraphCalls.
struct FakeNode {
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  CUmemLocationType location = CU_MEM_LOCATION_TYPE_DEVICE;
  CUdevice device = 0;
  uint64_t bytes = 0;
  CUdeviceptr dptr = 0;
  CUgraph child = nullptr;
  bool broken = false;  // the driver refuses to describe it
};
struct FakeGraphs {
  std::map<CUgraph, std::vector<uintptr_t>> graphs;  // graph -> node handles
  std::map<uintptr_t, FakeNode> nodes;
  uintptr_t next_node = 1000;
  int walks = 0;  // cuGraphGetNodes calls with a null array (one per graph walked)
};
FakeGraphs* g_fake = nullptr;

const FakeNode* FindNode(CUgraphNode node) {
  auto it = g_fake->nodes.find(reinterpret_cast<uintptr_t>(node));
  return it == g_fake->nodes.end() ? nullptr : &it->second;
}

CUresult FakeGetNodes(CUgraph graph, CUgraphNode* nodes, size_t* count) {
  auto it = g_fake->graphs.find(graph);
  if (it == g_fake->graphs.end() || count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (nodes == nullptr) ++g_fake->walks;
  for (size_t i = 0; nodes != nullptr && i < std::min(*count, it->second.size()); ++i) {
    nodes[i] = reinterpret_cast<CUgraphNode>(it->second[i]);
  }
  *count = it->second.size();
  return CUDA_SUCCESS;
}

CUresult FakeNodeGetType(CUgraphNode node, CUgraphNodeType* type) {
  const FakeNode* fake = FindNode(node);
  if (fake == nullptr || fake->broken) return CUDA_ERROR_INVALID_VALUE;
  *type = fake->type;
  return CUDA_SUCCESS;
}

CUresult FakeAllocParams(CUgraphNode node, CUDA_MEM_ALLOC_NODE_PARAMS* params) {
  const FakeNode* fake = FindNode(node);
  if (fake == nullptr || fake->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC) return CUDA_ERROR_INVALID_VALUE;
  *params = {};
  params->poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  params->poolProps.location.type = fake->location;
  params->poolProps.location.id = fake->device;
  params->bytesize = fake->bytes;
  params->dptr = fake->dptr;
  return CUDA_SUCCESS;
}

CUresult FakeFreeParams(CUgraphNode node, CUdeviceptr* dptr) {
  const FakeNode* fake = FindNode(node);
  if (fake == nullptr || fake->type != CU_GRAPH_NODE_TYPE_MEM_FREE) return CUDA_ERROR_INVALID_VALUE;
  *dptr = fake->dptr;
  return CUDA_SUCCESS;
}

CUresult FakeChildGraph(CUgraphNode node, CUgraph* graph) {
  const FakeNode* fake = FindNode(node);
  if (fake == nullptr || fake->type != CU_GRAPH_NODE_TYPE_GRAPH) return CUDA_ERROR_INVALID_VALUE;
  *graph = fake->child;
  return CUDA_SUCCESS;
}

CUgraph Graph(uintptr_t n) { return reinterpret_cast<CUgraph>(n); }
CUgraphExec Exec(uintptr_t n) { return reinterpret_cast<CUgraphExec>(n); }

GraphCalls FakeGraphCalls() {
  GraphCalls calls;
  calls.get_nodes = &FakeGetNodes;
  calls.node_get_type = &FakeNodeGetType;
  calls.mem_alloc_node_get_params = &FakeAllocParams;
  calls.mem_free_node_get_params = &FakeFreeParams;
  calls.child_graph_node_get_graph = &FakeChildGraph;
  calls.graph_mem_attribute = &FakeGraphMemAttribute;
  return calls;
}

// Fake devices 0 and 1 in the slice (caps 100 MiB and 40 MiB), fake device 2 outside it.
class GraphAccountingTest : public ::testing::Test {
 protected:
  GraphAccountingTest()
      : slice_({0, 1}, {100 * kMiB, 40 * kMiB}),
        calls_(fake_.Calls()),
        devices_(DeviceMapSources{slice_.ledger(), calls_.device_get_uuid, calls_.allocation_granularity,
                                  calls_.nvml_device_get_uuid}),
        table_(10),
        memory_(slice_.ledger(), &devices_, &table_, &calls_),
        graph_calls_(FakeGraphCalls()),
        graphs_(&memory_, &graph_calls_) {
    fake_.device_count = 3;
    g_reported = &reported_;
    g_fake = &fake_graphs_;
  }
  ~GraphAccountingTest() override {
    g_reported = nullptr;
    g_fake = nullptr;
  }

  uint64_t Used(int slice_device = 0) const { return slice_.ledger()->Used(slice_device); }

  // Nodes of fake graph `graph` (created on first use).
  FakeNode& AddNode(uintptr_t graph, FakeNode node) {
    const uintptr_t handle = fake_graphs_.next_node++;
    fake_graphs_.graphs[Graph(graph)].push_back(handle);
    return fake_graphs_.nodes[handle] = node;
  }
  FakeNode& AddAlloc(uintptr_t graph, uint64_t bytes, CUdeviceptr dptr, CUdevice device = 0) {
    FakeNode node;
    node.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
    node.device = device;
    node.bytes = bytes;
    node.dptr = dptr;
    return AddNode(graph, node);
  }
  void AddFree(uintptr_t graph, CUdeviceptr dptr) {
    FakeNode node;
    node.type = CU_GRAPH_NODE_TYPE_MEM_FREE;
    node.dptr = dptr;
    AddNode(graph, node);
  }
  FakeNode& AddKernel(uintptr_t graph) {
    FakeNode node;
    node.type = CU_GRAPH_NODE_TYPE_KERNEL;
    return AddNode(graph, node);
  }
  void AddChild(uintptr_t graph, uintptr_t child) {
    FakeNode node;
    node.type = CU_GRAPH_NODE_TYPE_GRAPH;
    node.child = Graph(child);
    fake_graphs_.graphs[Graph(child)];  // exists, possibly empty
    AddNode(graph, node);
  }

  // A graph with one allocation node of `bytes` on `device` (at `dptr`), freed inside if `freed`.
  void AddGraph(uintptr_t graph, uint64_t bytes, CUdeviceptr dptr, bool freed, CUdevice device = 0) {
    AddAlloc(graph, bytes, dptr, device);
    if (freed) AddFree(graph, dptr);
  }
  CUresult Instantiate(uintptr_t graph, uintptr_t exec, bool uploads = false, CUresult rc = CUDA_SUCCESS,
                       bool* called = nullptr) {
    return graphs_.Instantiate(Graph(graph), uploads, [&](CUgraphExec* out) {
      if (called != nullptr) *called = true;
      if (rc == CUDA_SUCCESS) *out = Exec(exec);
      return rc;
    });
  }
  CUresult Launch(uintptr_t exec, CUresult rc = CUDA_SUCCESS, bool* called = nullptr) {
    return graphs_.Launch(Exec(exec), [&] {
      if (called != nullptr) *called = true;
      return rc;
    });
  }
  CUresult Destroy(uintptr_t exec, CUresult rc = CUDA_SUCCESS) {
    return graphs_.ExecDestroy(Exec(exec), [&] { return rc; });
  }
  CUresult Trim(CUdevice device, CUresult rc = CUDA_SUCCESS) {
    return graphs_.Trim(device, [&] { return rc; });
  }

  FakeDriver fake_;
  TestSlice slice_;
  RealCalls calls_;
  DeviceMap devices_;
  PointerTable table_;
  MemoryAccounting memory_;
  FakeGraphs fake_graphs_;
  GraphCalls graph_calls_;
  GraphAccounting graphs_;
  std::map<CUdevice, uint64_t> reported_;
};

TEST_F(GraphAccountingTest, ChargedOnFirstLaunchRoundedPerNode) {
  AddAlloc(1, 3 * kMiB, 0x1000);
  AddAlloc(1, 1 * kMiB, 0x2000);
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u) << "instantiation reserves nothing";
  ASSERT_EQ(Launch(100), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 6 * kMiB) << "each node rounded up to the 2 MiB granularity";
  ASSERT_EQ(Launch(100), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 6 * kMiB) << "a relaunch of a resident exec charges nothing more";
  EXPECT_EQ(graphs_.ResidentBytes(0), 6 * kMiB);
}

TEST_F(GraphAccountingTest, UploadChargesLikeALaunch) {
  AddGraph(1, 10 * kMiB, 0x1000, true);
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  ASSERT_EQ(graphs_.Launch(Exec(100), [] { return CUDA_SUCCESS; }), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 10 * kMiB);
}

TEST_F(GraphAccountingTest, OverTheCapTheDriverIsNotCalled) {
  AddGraph(1, 60 * kMiB, 0x1000, true);
  AddGraph(2, 60 * kMiB, 0x2000, true);
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  ASSERT_EQ(Instantiate(2, 200), CUDA_SUCCESS);
  ASSERT_EQ(Launch(100), CUDA_SUCCESS);
  bool called = false;
  EXPECT_EQ(Launch(200, CUDA_SUCCESS, &called), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_FALSE(called);
  EXPECT_EQ(Used(), 60 * kMiB);
  EXPECT_EQ(slice_.counters(), (slice::LedgerCounters{1, 0, 0, 0, 0}));
  ASSERT_EQ(Destroy(100), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
  EXPECT_EQ(Launch(200), CUDA_SUCCESS) << "room again after the first exec is destroyed";
  EXPECT_EQ(Used(), 60 * kMiB);
}

TEST_F(GraphAccountingTest, DriverErrorOnFirstLaunchRollsBack) {
  AddGraph(1, 10 * kMiB, 0x1000, true);
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  EXPECT_EQ(Launch(100, CUDA_ERROR_INVALID_HANDLE), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(Used(), 0u);
  EXPECT_EQ(Launch(100, CUDA_ERROR_OUT_OF_MEMORY), CUDA_ERROR_OUT_OF_MEMORY) << "the driver's own OOM";
  EXPECT_EQ(Used(), 0u);
  ASSERT_EQ(Launch(100), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 10 * kMiB) << "not resident after failures: the next success charges";
}

TEST_F(GraphAccountingTest, FailedDestroyKeepsTheCharge) {
  AddGraph(1, 10 * kMiB, 0x1000, true);
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  ASSERT_EQ(Launch(100), CUDA_SUCCESS);
  EXPECT_EQ(Destroy(100, CUDA_ERROR_INVALID_VALUE), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(Used(), 10 * kMiB);
  EXPECT_EQ(Destroy(100), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
  EXPECT_EQ(Destroy(100, CUDA_ERROR_INVALID_VALUE), CUDA_ERROR_INVALID_VALUE) << "forwarded, nothing to credit";
  EXPECT_EQ(Used(), 0u);
}

TEST_F(GraphAccountingTest, NeverLaunchedDestroyCreditsNothing) {
  AddGraph(1, 10 * kMiB, 0x1000, true);
  AddGraph(2, 10 * kMiB, 0x2000, true);
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  ASSERT_EQ(Instantiate(2, 200), CUDA_SUCCESS);
  ASSERT_EQ(Launch(200), CUDA_SUCCESS);
  ASSERT_EQ(Destroy(100), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 10 * kMiB);
}

TEST_F(GraphAccountingTest, GraphsWithoutAllocationsAndUnknownExecsAreForwardedUntouched) {
  AddKernel(7);
  bool called = false;
  EXPECT_EQ(Instantiate(7, 700, false, CUDA_SUCCESS, &called), CUDA_SUCCESS);
  EXPECT_TRUE(called);
  called = false;
  EXPECT_EQ(Launch(700, CUDA_ERROR_INVALID_VALUE, &called), CUDA_ERROR_INVALID_VALUE);
  EXPECT_TRUE(called);
  EXPECT_EQ(Launch(700), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
  AddFree(8, 0x5000);  // a graph that only frees: nothing to charge
  called = false;
  EXPECT_EQ(Instantiate(8, 800, true, CUDA_SUCCESS, &called), CUDA_SUCCESS);
  EXPECT_TRUE(called);
  EXPECT_EQ(Used(), 0u);
}

TEST_F(GraphAccountingTest, InstantiateFailureLeavesNoExec) {
  AddGraph(1, 10 * kMiB, 0x1000, true);
  EXPECT_EQ(Instantiate(1, 100, false, CUDA_ERROR_INVALID_VALUE), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(Launch(100), CUDA_SUCCESS) << "unknown exec: forwarded";
  EXPECT_EQ(Used(), 0u);
}

TEST_F(GraphAccountingTest, UploadAtInstantiationReservesFirst) {
  AddGraph(1, 60 * kMiB, 0x1000, true);
  AddGraph(2, 60 * kMiB, 0x2000, true);
  ASSERT_EQ(Instantiate(1, 100, /*uploads=*/true), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 60 * kMiB);
  bool called = false;
  EXPECT_EQ(Instantiate(2, 200, true, CUDA_SUCCESS, &called), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_FALSE(called);
  EXPECT_EQ(Instantiate(2, 200, true, CUDA_ERROR_INVALID_VALUE), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(Destroy(100), CUDA_SUCCESS);
  EXPECT_EQ(Instantiate(2, 200, true, CUDA_ERROR_INVALID_VALUE), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(Used(), 0u) << "a failed instantiation rolls its upload back";
  ASSERT_EQ(Instantiate(2, 200, true), CUDA_SUCCESS);
  ASSERT_EQ(Launch(200), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 60 * kMiB) << "uploaded at instantiation: the launch charges nothing more";
}

TEST_F(GraphAccountingTest, DeviceOutsideTheSliceIsRefused) {
  AddGraph(1, 2 * kMiB, 0x1000, true, /*device=*/2);
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  bool called = false;
  EXPECT_EQ(Launch(100, CUDA_SUCCESS, &called), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_FALSE(called);
}

TEST_F(GraphAccountingTest, DevicesAreChargedAllOrNothing) {
  AddAlloc(1, 20 * kMiB, 0x1000, 0);
  AddAlloc(1, 50 * kMiB, 0x2000, 1);  // over device 1's 40 MiB
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  bool called = false;
  EXPECT_EQ(Launch(100, CUDA_SUCCESS, &called), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_FALSE(called);
  EXPECT_EQ(Used(0), 0u) << "device 0's part rolled back";
  EXPECT_EQ(Used(1), 0u);
  AddAlloc(2, 20 * kMiB, 0x3000, 0);
  AddAlloc(2, 30 * kMiB, 0x4000, 1);
  ASSERT_EQ(Instantiate(2, 200), CUDA_SUCCESS);
  ASSERT_EQ(Launch(200), CUDA_SUCCESS);
  EXPECT_EQ(Used(0), 20 * kMiB);
  EXPECT_EQ(Used(1), 30 * kMiB);
  ASSERT_EQ(Destroy(200), CUDA_SUCCESS);
  EXPECT_EQ(Used(0), 0u);
  EXPECT_EQ(Used(1), 0u);
}

TEST_F(GraphAccountingTest, TrimReleasesWhatTheDriverGaveBack) {
  AddGraph(1, 10 * kMiB, 0x1000, /*freed=*/true);
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  ASSERT_EQ(Launch(100), CUDA_SUCCESS);
  reported_[0] = 10 * kMiB;  // the launch has not completed: the driver kept it
  ASSERT_EQ(Trim(0), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 10 * kMiB);
  reported_[0] = 0;
  ASSERT_EQ(Trim(0), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
  ASSERT_EQ(Launch(100), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 10 * kMiB) << "trimmed: the next launch maps (and charges) it again";
  ASSERT_EQ(Destroy(100), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u) << "credited once";
}

TEST_F(GraphAccountingTest, TrimKeepsExecsThatDoNotFreeEverything) {
  AddGraph(1, 10 * kMiB, 0x1000, /*freed=*/false);
  AddAlloc(2, 4 * kMiB, 0x2000);
  AddAlloc(2, 4 * kMiB, 0x3000);
  AddFree(2, 0x2000);  // one of two freed inside
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  ASSERT_EQ(Instantiate(2, 200), CUDA_SUCCESS);
  ASSERT_EQ(Launch(100), CUDA_SUCCESS);
  ASSERT_EQ(Launch(200), CUDA_SUCCESS);
  reported_[0] = 0;  // even if the driver claims otherwise
  ASSERT_EQ(Trim(0), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 18 * kMiB);
}

TEST_F(GraphAccountingTest, TrimReleasesNothingWhenTheDriverCannotSayOrFails) {
  AddGraph(1, 10 * kMiB, 0x1000, true);
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  ASSERT_EQ(Launch(100), CUDA_SUCCESS);
  ASSERT_EQ(Trim(0), CUDA_SUCCESS) << "no attribute for device 0";
  EXPECT_EQ(Used(), 10 * kMiB);
  reported_[0] = 0;
  EXPECT_EQ(Trim(0, CUDA_ERROR_INVALID_DEVICE), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(Used(), 10 * kMiB);
  ASSERT_EQ(Trim(1), CUDA_SUCCESS) << "another device";
  EXPECT_EQ(Used(), 10 * kMiB);
}

TEST_F(GraphAccountingTest, TrimReleasesOldestLaunchesFirstDownToTheDriversNumber) {
  AddGraph(1, 10 * kMiB, 0x1000, true);
  AddGraph(2, 10 * kMiB, 0x2000, true);
  AddGraph(3, 10 * kMiB, 0x3000, true);
  for (uintptr_t g : {1, 2, 3}) ASSERT_EQ(Instantiate(g, g * 100), CUDA_SUCCESS);
  ASSERT_EQ(Launch(200), CUDA_SUCCESS);
  ASSERT_EQ(Launch(100), CUDA_SUCCESS);
  ASSERT_EQ(Launch(300), CUDA_SUCCESS);
  reported_[0] = 10 * kMiB;  // one launch still running
  ASSERT_EQ(Trim(0), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 10 * kMiB);
  bool called = false;
  ASSERT_EQ(Launch(300, CUDA_SUCCESS, &called), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 10 * kMiB) << "the newest launch is the one kept resident";
  ASSERT_EQ(Launch(200), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 20 * kMiB) << "an older one was trimmed and is charged again";
}

TEST_F(GraphAccountingTest, TheExecKeepsWhatItsGraphHadAtInstantiation) {
  AddGraph(1, 10 * kMiB, 0x1000, true);
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  AddAlloc(1, 20 * kMiB, 0x2000);  // the graph changes afterwards (or is destroyed)
  ASSERT_EQ(Launch(100), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 10 * kMiB) << "the exec is a snapshot";
  ASSERT_EQ(Instantiate(1, 101), CUDA_SUCCESS);
  ASSERT_EQ(Launch(101), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 10 * kMiB + 30 * kMiB) << "a new exec measures the graph as it is now";
}

TEST_F(GraphAccountingTest, ChildGraphAllocationsAreMeasured) {
  // 1 -> child 2 -> child 3 (allocates 10 MiB); 2 allocates 6 MiB on device 1; 1 frees both.
  AddKernel(1);
  AddChild(1, 2);
  AddChild(2, 3);
  AddAlloc(3, 10 * kMiB, 0x1000, 0);
  AddAlloc(2, 5 * kMiB, 0x2000, 1);
  AddFree(1, 0x1000);
  AddFree(1, 0x2000);
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  EXPECT_EQ(fake_graphs_.walks, 3) << "every child graph is walked";
  ASSERT_EQ(Launch(100), CUDA_SUCCESS);
  EXPECT_EQ(Used(0), 10 * kMiB);
  EXPECT_EQ(Used(1), 6 * kMiB) << "rounded up to the granularity on the child's device";
  reported_[0] = 0;
  ASSERT_EQ(Trim(0), CUDA_SUCCESS);
  EXPECT_EQ(Used(0), 0u) << "frees inside the parent count: the exec frees everything it allocates";
  ASSERT_EQ(Destroy(100), CUDA_SUCCESS);
  EXPECT_EQ(Used(1), 0u);
}

TEST_F(GraphAccountingTest, ChildGraphsWithoutAllocationsStayUntracked) {
  AddKernel(1);
  AddChild(1, 2);
  AddKernel(2);
  AddChild(2, 3);  // empty
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  bool called = false;
  ASSERT_EQ(Launch(100, CUDA_SUCCESS, &called), CUDA_SUCCESS);
  EXPECT_TRUE(called);
  EXPECT_EQ(Used(), 0u);
  EXPECT_EQ(graphs_.ResidentBytes(0), 0u);
}

TEST_F(GraphAccountingTest, HostAllocationNodesAreNotCharged) {
  AddAlloc(1, 10 * kMiB, 0x1000).location = CU_MEM_LOCATION_TYPE_HOST;
  AddAlloc(1, 4 * kMiB, 0x2000).location = CU_MEM_LOCATION_TYPE_HOST_NUMA;
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  ASSERT_EQ(Launch(100), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
  AddAlloc(2, 4 * kMiB, 0x3000).location = CU_MEM_LOCATION_TYPE_HOST;
  AddAlloc(2, 4 * kMiB, 0x4000);
  AddFree(2, 0x4000);
  ASSERT_EQ(Instantiate(2, 200), CUDA_SUCCESS);
  ASSERT_EQ(Launch(200), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 4 * kMiB) << "only the device node";
  reported_[0] = 0;
  ASSERT_EQ(Trim(0), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u) << "a host allocation left unfreed does not keep device memory";
}

TEST_F(GraphAccountingTest, AGraphTheDriverCannotDescribeFailsClosed) {
  AddGraph(1, 10 * kMiB, 0x1000, true);
  AddKernel(1).broken = true;  // cuGraphNodeGetType fails on it
  bool called = false;
  EXPECT_EQ(Instantiate(1, 101, /*uploads=*/true, CUDA_SUCCESS, &called), CUDA_ERROR_OUT_OF_MEMORY)
      << "an upload would take unknown bytes";
  EXPECT_FALSE(called);
  ASSERT_EQ(Instantiate(1, 100, false, CUDA_SUCCESS, &called), CUDA_SUCCESS) << "forwarded: the driver decides";
  EXPECT_TRUE(called);
  called = false;
  EXPECT_EQ(Launch(100, CUDA_SUCCESS, &called), CUDA_ERROR_OUT_OF_MEMORY) << "bytes unknown: refused";
  EXPECT_FALSE(called);
  EXPECT_EQ(Used(), 0u);
  EXPECT_EQ(slice_.counters(), (slice::LedgerCounters{0, 2, 0, 0, 0})) << "the upload and the launch, fail closed";
  EXPECT_EQ(Destroy(100), CUDA_SUCCESS);
  EXPECT_EQ(Launch(100), CUDA_SUCCESS) << "forgotten once destroyed (a reused handle is forwarded)";
  // An unknown graph handle: the driver refuses the instantiation too.
  EXPECT_EQ(Instantiate(99, 990, false, CUDA_ERROR_INVALID_VALUE), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(Launch(990), CUDA_SUCCESS) << "no exec was made";
}

TEST_F(GraphAccountingTest, AMissingGetterFailsClosedOnlyWhenNeeded) {
  graph_calls_.mem_alloc_node_get_params = nullptr;  // a driver without graph memory nodes
  AddKernel(1);
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  EXPECT_EQ(Launch(100), CUDA_SUCCESS) << "kernel-only graphs need no allocation getter";
  AddGraph(2, 10 * kMiB, 0x1000, true);
  ASSERT_EQ(Instantiate(2, 200), CUDA_SUCCESS);
  bool called = false;
  EXPECT_EQ(Launch(200, CUDA_SUCCESS, &called), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_FALSE(called);
}

}  // namespace
}  // namespace fgpu::hook
