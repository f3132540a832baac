// CUDA graphs: creation, node insertion with real dependency edges (added explicitly, through
// cuGraphAddNode[_v2], or by stream capture), cloning, instantiation and launch on the shared
// timeline. The other node kinds live in api_graph_nodes.cc, edges and queries in
// api_graph_topology.cc, executable-graph updates in api_graph_exec.cc.
//
// Execution model: instantiation orders the nodes topologically (the earliest-created ready
// node first; a cycle fails with CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE), flattening child
// graphs in place. A launch replays that order on the stream as the equivalent stream calls
// (kernel launches, memsets, copies, host functions, event records and waits, semaphore signals
// and waits, memory operations), which is a serialisation the edges allow.
//
// Graph memory model (as the driver's graph memory pool): an executable graph's allocation
// nodes, child graphs included, are charged to their devices on its first launch (or upload)
// and stay resident until the executable graph is destroyed, or until cuDeviceGraphMemTrim
// when every allocation is freed inside the graph and its last launch has completed.
//
// The driver's rules for graphs with memory nodes, followed here (cuda.h 13.0):
// - a graph with allocation or free nodes cannot be cloned (cuGraphClone) nor embedded as a
//   cloned child (cuGraphAddChildGraphNode, CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE):
//   CUDA_ERROR_NOT_SUPPORTED; it can be moved into a parent (cuGraphAddNode with
//   CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE), after which it cannot be instantiated or destroyed on
//   its own, embedded again, or given more memory nodes;
// - no allocation or free node can be added to an embedded graph;
// - only one executable graph of a graph with memory nodes may exist at a time;
// - a free node must free an allocation of the graph, once.
// Where the driver documents only "an error", the simulator returns CUDA_ERROR_INVALID_VALUE.
#include "sim/cuda/api_graph.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/abi/cuda_api.h"
#include "sim/cuda/graph_internal.h"
#include "sim/cuda/launch.h"
#include "sim/cuda/runtime.h"
#include "sim/cuda/stream_gate.h"

using fgpu::sim::SharedDevices;
using fgpu::sim::cuda::Context;
using fgpu::sim::cuda::Graph;
using fgpu::sim::cuda::GraphExec;
using fgpu::sim::cuda::GraphNode;
using fgpu::sim::cuda::HandleRegistry;
using fgpu::sim::cuda::Kind;
using fgpu::sim::cuda::KernelLaunch;
using fgpu::sim::cuda::LookupGraph;
using fgpu::sim::cuda::LookupNode;
using fgpu::sim::cuda::NodeDeps;
using fgpu::sim::cuda::InsertNode;
using fgpu::sim::cuda::Ready;
using fgpu::sim::cuda::Runtime;
using fgpu::sim::cuda::Stream;

namespace fgpu::sim::cuda {

Graph::~Graph() {
  HandleRegistry::Get().Erase(this);
  for (const auto& node : nodes) {
    HandleRegistry::Get().Erase(node.get());
    delete node->child;  // embedded graphs are owned by their node
  }
  for (auto [base, length] : reserved_ranges) munmap(base, length);
  for (auto [object, count] : user_objects) ReleaseUserObject(object, count);
}

uint64_t NextNodeSerial() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

bool SameEdge(const CUgraphEdgeData& a, const CUgraphEdgeData& b) {
  return a.from_port == b.from_port && a.to_port == b.to_port && a.type == b.type;
}

CUresult LookupGraph(CUgraph handle, Graph** out) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  *out = HandleRegistry::Get().Lookup<Graph>(handle, Kind::kGraph);
  return *out != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult LookupNode(CUgraphNode handle, GraphNode** out) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  *out = HandleRegistry::Get().Lookup<GraphNode>(handle, Kind::kGraphNode);
  return *out != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult LookupExec(CUgraphExec handle, GraphExec** out) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  *out = HandleRegistry::Get().Lookup<GraphExec>(handle, Kind::kGraphExec);
  return *out != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CheckEdgeData(const CUgraphEdgeData* edges, size_t count) {
  if (edges == nullptr) return CUDA_SUCCESS;  // all default
  for (size_t i = 0; i < count; ++i) {
    const CUgraphEdgeData& edge = edges[i];
    for (unsigned char byte : edge.reserved) {
      if (byte != 0) return CUDA_ERROR_INVALID_VALUE;
    }
    if (edge.type > CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC || edge.from_port > CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    // Programmatic and port-specific edges order kernels more finely than the simulated
    // timeline can: only full dependencies are simulated.
    if (edge.from_port != 0 || edge.to_port != 0 || edge.type != 0) return CUDA_ERROR_NOT_SUPPORTED;
  }
  return CUDA_SUCCESS;
}

CUresult CheckNodeDeps(Graph& graph, const NodeDeps& deps) {
  if (deps.from_capture) return CUDA_SUCCESS;
  if (deps.count > 0 && deps.nodes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult rc = CheckEdgeData(deps.edges, deps.count); rc != CUDA_SUCCESS) return rc;
  std::lock_guard lock(graph.mu);
  for (size_t i = 0; i < deps.count; ++i) {
    auto* node = HandleRegistry::Get().Lookup<GraphNode>(deps.nodes[i], Kind::kGraphNode);
    if (node == nullptr || node->owner != &graph) return CUDA_ERROR_INVALID_VALUE;  // a node of another graph
    if (std::find(deps.nodes, deps.nodes + i, deps.nodes[i]) != deps.nodes + i) return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUgraphNode InsertNode(Graph& graph, std::unique_ptr<GraphNode> node, const NodeDeps& deps) {
  std::lock_guard lock(graph.mu);
  GraphNode* raw = node.get();
  raw->owner = &graph;
  raw->serial = NextNodeSerial();
  if (deps.from_capture) {
    raw->deps = graph.capture_deps;
    raw->dep_edges = graph.capture_edges;
    graph.capture_deps.assign(1, raw);
    graph.capture_edges.assign(1, CUgraphEdgeData{});
  } else {
    for (size_t i = 0; i < deps.count; ++i) {
      raw->deps.push_back(reinterpret_cast<GraphNode*>(deps.nodes[i]));
      raw->dep_edges.push_back(deps.edges != nullptr ? deps.edges[i] : CUgraphEdgeData{});
    }
  }
  HandleRegistry::Get().Insert(raw, Kind::kGraphNode);
  graph.nodes.push_back(std::move(node));
  return reinterpret_cast<CUgraphNode>(raw);
}

CUresult AddPreparedNode(CUgraphNode* out, CUgraph handle, const NodeDeps& deps, std::unique_ptr<GraphNode> node) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Graph* graph = nullptr;
  if (CUresult rc = LookupGraph(handle, &graph); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = CheckNodeDeps(*graph, deps); rc != CUDA_SUCCESS) return rc;
  *out = InsertNode(*graph, std::move(node), deps);
  return CUDA_SUCCESS;
}

void AppendCapturedNode(Graph& graph, std::unique_ptr<GraphNode> node) {
  InsertNode(graph, std::move(node), NodeDeps{.from_capture = true});
}

}  // namespace fgpu::sim::cuda

namespace {

struct GraphMemoryStats {
  uint64_t used = 0, used_high = 0, reserved = 0, reserved_high = 0;
};

class GraphMemory {
 public:
  static GraphMemory& Get() {
    static auto* memory = new GraphMemory;
    return *memory;
  }
  std::mutex mu;
  std::vector<GraphExec*> execs;                 // live executable graphs
  std::vector<GraphMemoryStats> stats{16};       // per device
};

// The common checks of every cuGraphAdd*Node: an output, a live graph, valid dependencies.
CUresult PrepareAdd(CUgraphNode* out, CUgraph handle, const NodeDeps& deps, Graph** graph) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult rc = LookupGraph(handle, graph); rc != CUDA_SUCCESS) return rc;
  return CheckNodeDeps(**graph, deps);
}

// Whether `graph` or a graph embedded in it has an allocation or free node.
bool ContainsMemoryNodes(Graph& graph) {
  std::lock_guard lock(graph.mu);
  for (const auto& node : graph.nodes) {
    if (node->type == GraphNode::Type::kMemAlloc || node->type == GraphNode::Type::kMemFree) return true;
    if (node->child != nullptr && ContainsMemoryNodes(*node->child)) return true;
  }
  return false;
}

// Whether `dptr` is allocated / freed by a node of `graph` or of a graph embedded in it.
void FindMemoryNodes(Graph& graph, CUdeviceptr dptr, bool* allocated, bool* freed) {
  std::lock_guard lock(graph.mu);
  for (const auto& node : graph.nodes) {
    if (node->dptr == dptr && node->type == GraphNode::Type::kMemAlloc) *allocated = true;
    if (node->dptr == dptr && node->type == GraphNode::Type::kMemFree) *freed = true;
    if (node->child != nullptr) FindMemoryNodes(*node->child, dptr, allocated, freed);
  }
}

// Deep copy of a graph without memory nodes (the caller checked): every node with its
// parameters and edges, child graphs cloned recursively, the user-object references. Every
// graph and node of the copy gets a handle; each copied node remembers its original.
std::unique_ptr<Graph> CloneTree(Graph& source) {
  auto copy = std::make_unique<Graph>();
  HandleRegistry::Get().Insert(copy.get(), Kind::kGraph);
  std::lock_guard lock(source.mu);
  std::unordered_map<const GraphNode*, GraphNode*> twins;
  for (const auto& node : source.nodes) {
    auto twin = std::make_unique<GraphNode>(*node);
    twin->serial = fgpu::sim::cuda::NextNodeSerial();
    twin->clone_of = node->serial;
    twin->owner = copy.get();
    if (node->child != nullptr) {
      twin->child = CloneTree(*node->child).release();
      twin->child->parent = copy.get();
    }
    twins[node.get()] = twin.get();
    HandleRegistry::Get().Insert(twin.get(), Kind::kGraphNode);
    copy->nodes.push_back(std::move(twin));
  }
  // An edge may point at a node added later (cuGraphAddDependencies): map them once all exist.
  for (const auto& twin : copy->nodes) {
    for (GraphNode*& dep : twin->deps) dep = twins.at(dep);
  }
  for (auto [object, count] : source.user_objects) {
    fgpu::sim::cuda::RetainUserObject(object, count);
    copy->user_objects.emplace_back(object, count);
  }
  return copy;
}

CUresult AddKernel(CUgraphNode* out, CUgraph handle, const NodeDeps& deps, CUfunction func, const unsigned grid[3],
                   const unsigned block[3], unsigned shared, void** params, void** extra) {
  Graph* graph = nullptr;
  if (CUresult rc = PrepareAdd(out, handle, deps, &graph); rc != CUDA_SUCCESS) return rc;
  auto node = std::make_unique<GraphNode>();
  node->type = GraphNode::Type::kKernel;
  if (CUresult rc = fgpu::sim::cuda::PrepareLaunch(func, grid, block, shared, params, extra, false, &node->kernel);
      rc != CUDA_SUCCESS) {
    return rc;
  }
  Context* ctx = nullptr;
  (void)Runtime::Get().CurrentContext(&ctx);  // PrepareLaunch checked there is one
  node->device = ctx->device;
  node->kernel_params = CUDA_KERNEL_NODE_PARAMS{func, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                                shared, params, extra, nullptr, reinterpret_cast<CUcontext>(ctx)};
  *out = InsertNode(*graph, std::move(node), deps);
  return CUDA_SUCCESS;
}

template <typename Params>
CUresult AddKernelFrom(CUgraphNode* out, CUgraph handle, const NodeDeps& deps, const Params& params, CUfunction func) {
  const unsigned grid[3] = {params.gridDimX, params.gridDimY, params.gridDimZ};
  const unsigned block[3] = {params.blockDimX, params.blockDimY, params.blockDimZ};
  return AddKernel(out, handle, deps, func, grid, block, params.sharedMemBytes, params.kernelParams, params.extra);
}

CUresult AddEmpty(CUgraphNode* out, CUgraph handle, const NodeDeps& deps) {
  auto node = std::make_unique<GraphNode>();
  node->type = GraphNode::Type::kEmpty;
  return fgpu::sim::cuda::AddPreparedNode(out, handle, deps, std::move(node));
}

// An allocation node in `graph`. The address is fixed at node creation, as the driver reserves
// the virtual range then; no memory is taken until an executable graph is launched.
CUresult AddMemAlloc(Graph& graph, const NodeDeps& deps, const CUmemPoolProps& props, const CUmemAccessDesc* access,
                     size_t access_count, uint64_t bytes, CUgraphNode* out, CUdeviceptr* dptr) {
  if (bytes == 0 || graph.parent != nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (props.allocType != CU_MEM_ALLOCATION_TYPE_PINNED || props.handleTypes != CU_MEM_HANDLE_TYPE_NONE) {
    return CUDA_ERROR_INVALID_VALUE;  // "handleTypes must be CU_MEM_HANDLE_TYPE_NONE. IPC is not supported."
  }
  // Host-located graph allocations are not simulated.
  if (props.location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
  const int device = props.location.id;
  if (Runtime::Get().CheckDevice(device) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  if (access_count > static_cast<size_t>(Runtime::Get().device_count()) || (access_count > 0 && access == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const uint64_t length = Runtime::Get().RoundToGranularity(device, bytes);
  void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  auto node = std::make_unique<GraphNode>();
  node->type = GraphNode::Type::kMemAlloc;
  node->device = device;
  node->bytes = bytes;
  node->dptr = reinterpret_cast<CUdeviceptr>(base);
  node->pool_props = props;
  node->access.assign(access, access + access_count);
  *dptr = node->dptr;
  {
    std::lock_guard lock(graph.mu);
    graph.reserved_ranges.emplace_back(base, length);
  }
  *out = InsertNode(graph, std::move(node), deps);
  return CUDA_SUCCESS;
}

CUresult AddMemFree(Graph& graph, const NodeDeps& deps, CUdeviceptr dptr, CUgraphNode* out) {
  if (graph.parent != nullptr) return CUDA_ERROR_INVALID_VALUE;
  bool allocated = false, freed = false;
  FindMemoryNodes(graph, dptr, &allocated, &freed);
  // Only graph allocations of this graph are simulated; each is freed at most once.
  if (!allocated || freed) return CUDA_ERROR_INVALID_VALUE;
  auto node = std::make_unique<GraphNode>();
  node->type = GraphNode::Type::kMemFree;
  node->dptr = dptr;
  *out = InsertNode(graph, std::move(node), deps);
  return CUDA_SUCCESS;
}

// A child graph node embedding a clone of `child` (CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE).
CUresult AddChildClone(Graph& graph, const NodeDeps& deps, CUgraph child_handle, CUgraphNode* out) {
  Graph* child = HandleRegistry::Get().Lookup<Graph>(child_handle, Kind::kGraph);
  if (child == nullptr || child == &graph) return CUDA_ERROR_INVALID_VALUE;
  if (ContainsMemoryNodes(*child)) return CUDA_ERROR_NOT_SUPPORTED;
  std::unique_ptr<Graph> copy = CloneTree(*child);
  copy->parent = &graph;
  auto node = std::make_unique<GraphNode>();
  node->type = GraphNode::Type::kChildGraph;
  node->child = copy.release();
  *out = InsertNode(graph, std::move(node), deps);
  return CUDA_SUCCESS;
}

// A child graph node that takes `child` itself (CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE).
CUresult AddChildMove(Graph& graph, const NodeDeps& deps, CUgraph child_handle, CUgraphNode* out) {
  Graph* child = HandleRegistry::Get().Lookup<Graph>(child_handle, Kind::kGraph);
  if (child == nullptr || child->parent != nullptr) return CUDA_ERROR_INVALID_VALUE;  // already embedded
  for (Graph* ancestor = &graph; ancestor != nullptr; ancestor = ancestor->parent) {
    if (ancestor == child) return CUDA_ERROR_INVALID_VALUE;  // a graph cannot contain itself
  }
  // Memory nodes cannot be added to an embedded graph, moved ones included.
  if (graph.parent != nullptr && ContainsMemoryNodes(*child)) return CUDA_ERROR_INVALID_VALUE;
  auto node = std::make_unique<GraphNode>();
  node->type = GraphNode::Type::kChildGraph;
  node->child = child;
  child->parent = &graph;
  child->moved = true;
  *out = InsertNode(graph, std::move(node), deps);
  return CUDA_SUCCESS;
}

// cuGraphAddNode[_v2]: every node kind but conditional nodes (CUDA_ERROR_NOT_SUPPORTED).
CUresult AddGeneric(CUgraphNode* out, CUgraph handle, const NodeDeps& deps, CUgraphNodeParams* params) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (params->reserved0[0] != 0 || params->reserved0[1] != 0 || params->reserved0[2] != 0 ||
      params->reserved2 != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  switch (params->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
      const CUDA_KERNEL_NODE_PARAMS_v3& k = params->kernel;
      return AddKernelFrom(out, handle, deps, k, k.func != nullptr ? k.func : reinterpret_cast<CUfunction>(k.kern));
    }
    case CU_GRAPH_NODE_TYPE_EMPTY:
      return AddEmpty(out, handle, deps);
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
    case CU_GRAPH_NODE_TYPE_GRAPH:
      break;
    default: {
      // The node kinds of api_graph_nodes.cc.
      auto node = std::make_unique<GraphNode>();
      if (CUresult rc = fgpu::sim::cuda::FillNodeFromParams(*params, node.get()); rc != CUDA_SUCCESS) return rc;
      return fgpu::sim::cuda::AddPreparedNode(out, handle, deps, std::move(node));
    }
  }
  Graph* graph = nullptr;
  if (CUresult rc = PrepareAdd(out, handle, deps, &graph); rc != CUDA_SUCCESS) return rc;
  switch (params->type) {
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: {
      CUDA_MEM_ALLOC_NODE_PARAMS_v2& a = params->alloc;
      return AddMemAlloc(*graph, deps, a.poolProps, a.accessDescs, a.accessDescCount, a.bytesize, out, &a.dptr);
    }
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      return AddMemFree(*graph, deps, params->free.dptr, out);
    case CU_GRAPH_NODE_TYPE_GRAPH: {
      int ownership = 0;  // a C caller may pass any int: read it as one, not as the enum
      std::memcpy(&ownership, &params->graph.ownership, sizeof ownership);
      if (ownership == CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE) return AddChildClone(*graph, deps, params->graph.graph, out);
      if (ownership == CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE) return AddChildMove(*graph, deps, params->graph.graph, out);
      return CUDA_ERROR_INVALID_VALUE;
    }
    default:
      break;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

void ChargeStats(int device, uint64_t bytes, bool add) {
  GraphMemory& memory = GraphMemory::Get();  // caller holds memory.mu
  GraphMemoryStats& s = memory.stats[static_cast<size_t>(device)];
  if (add) {
    s.used += bytes;
    s.reserved += bytes;
    s.used_high = std::max(s.used_high, s.used);
    s.reserved_high = std::max(s.reserved_high, s.reserved);
  } else {
    s.used -= std::min(s.used, bytes);
    s.reserved -= std::min(s.reserved, bytes);
  }
}

void ReleasePortion(GraphExec::Portion& portion) {  // caller holds GraphMemory::mu
  if (!portion.resident) return;
  Runtime::Get().Credit(portion.device, portion.bytes);
  ChargeStats(portion.device, portion.bytes, false);
  portion.resident = false;
}

// Makes the executable graph's allocation nodes resident (charged) on every device, all or
// nothing.
CUresult MakeResident(GraphExec& exec) {
  std::lock_guard lock(GraphMemory::Get().mu);
  std::vector<GraphExec::Portion*> charged;
  for (GraphExec::Portion& portion : exec.portions) {
    if (portion.resident) continue;
    if (!Runtime::Get().Charge(portion.device, portion.bytes)) {
      for (GraphExec::Portion* done : charged) ReleasePortion(*done);  // only what this call charged
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    portion.resident = true;
    ChargeStats(portion.device, portion.bytes, true);
    charged.push_back(&portion);
  }
  return CUDA_SUCCESS;
}

// A topological order of the graph's nodes, stable in creation order (Kahn's algorithm, the
// lowest-created ready node first). False if the edges form a cycle. Caller holds graph.mu.
bool TopologicalOrder(const Graph& graph, std::vector<const GraphNode*>* order) {
  const size_t n = graph.nodes.size();
  std::unordered_map<const GraphNode*, size_t> index;
  for (size_t i = 0; i < n; ++i) index[graph.nodes[i].get()] = i;
  std::vector<size_t> waiting(n, 0);
  std::vector<std::vector<size_t>> dependents(n);
  for (size_t i = 0; i < n; ++i) {
    for (const GraphNode* dep : graph.nodes[i]->deps) {
      ++waiting[i];
      dependents[index.at(dep)].push_back(i);
    }
  }
  std::set<size_t> ready;
  for (size_t i = 0; i < n; ++i) {
    if (waiting[i] == 0) ready.insert(i);
  }
  while (!ready.empty()) {
    const size_t next = *ready.begin();
    ready.erase(ready.begin());
    order->push_back(graph.nodes[next].get());
    for (size_t dependent : dependents[next]) {
      if (--waiting[dependent] == 0) ready.insert(dependent);
    }
  }
  return order->size() == n;
}

// What an executable graph takes from its graph: every node in a topological order, child graphs
// flattened in place, and the memory per device. Caller holds no graph lock.
struct Flattened {
  std::vector<fgpu::sim::cuda::ExecStep> steps;
  std::vector<GraphExec::ChildRange> child_ranges;
  std::vector<GraphExec::Portion> portions;
  std::vector<CUdeviceptr> allocated, freed;
  bool memory_nodes = false;
};

// False (with *error_node) if the graph or a graph embedded in it has a cycle.
bool Flatten(Graph& graph, uint64_t child_origin, Flattened* out, const GraphNode** error_node) {
  std::lock_guard lock(graph.mu);
  std::vector<const GraphNode*> order;
  if (!TopologicalOrder(graph, &order)) {
    *error_node = graph.nodes.empty() ? nullptr : graph.nodes.front().get();
    return false;
  }
  for (const GraphNode* node : order) {
    switch (node->type) {
      case GraphNode::Type::kMemAlloc: {
        out->memory_nodes = true;
        out->allocated.push_back(node->dptr);
        const uint64_t bytes = Runtime::Get().RoundToGranularity(node->device, node->bytes);
        auto portion = std::find_if(out->portions.begin(), out->portions.end(),
                                    [&](const GraphExec::Portion& p) { return p.device == node->device; });
        if (portion == out->portions.end()) {
          out->portions.push_back({node->device, bytes, false});
        } else {
          portion->bytes += bytes;
        }
        break;
      }
      case GraphNode::Type::kMemFree:
        out->memory_nodes = true;
        out->freed.push_back(node->dptr);
        break;
      case GraphNode::Type::kChildGraph: {
        const size_t begin = out->steps.size();
        if (!Flatten(*node->child, node->serial, out, error_node)) return false;
        out->child_ranges.push_back({node->serial, begin, out->steps.size()});
        continue;  // the child's nodes stand for it
      }
      default:
        break;
    }
    fgpu::sim::cuda::ExecStep step{*node, true, child_origin, node};
    step.node.deps.clear();
    step.node.dep_edges.clear();
    step.node.child = nullptr;
    out->steps.push_back(std::move(step));
  }
  return true;
}

// The shape of the top-level graph an executable graph is compared with by cuGraphExecUpdate.
void DescribeTop(Graph& graph, GraphExec* exec) {
  std::lock_guard lock(graph.mu);
  for (const auto& node : graph.nodes) {
    exec->top_nodes.push_back(node->serial);
    exec->top_types.push_back(node->type);
    for (const GraphNode* dep : node->deps) exec->top_edges.emplace_back(dep->serial, node->serial);
  }
}

// An executable graph's user objects are released once its last launch has ended (the driver
// keeps them while the graph's work may still use them).
void ReleaseExecUserObjects(std::vector<std::pair<fgpu::sim::cuda::UserObject*, unsigned>> objects, uint64_t end_ns) {
  if (objects.empty()) return;
  auto release = [objects = std::move(objects)] {
    for (auto [object, count] : objects) fgpu::sim::cuda::ReleaseUserObject(object, count);
  };
  if (end_ns <= SharedDevices::NowNs()) {
    release();
    return;
  }
  std::thread([release = std::move(release), end_ns] {
    Runtime::SleepUntil(end_ns);
    release();
  }).detach();
}

CUresult Instantiate(CUgraphExec* out, CUgraph handle, unsigned long long flags, CUgraphNode* error_node_out,
                     CUgraphInstantiateResult* result_out) {
  if (result_out != nullptr) *result_out = CUDA_GRAPH_INSTANTIATE_ERROR;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Graph* graph = nullptr;
  if (CUresult rc = LookupGraph(handle, &graph); rc != CUDA_SUCCESS) return rc;
  if (graph->moved) return CUDA_ERROR_INVALID_VALUE;  // owned by its parent now
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  Flattened flat;
  const GraphNode* error_node = nullptr;
  if (!Flatten(*graph, 0, &flat, &error_node)) {
    // A cycle: "invalid structure", as the driver reports it.
    if (error_node_out != nullptr) *error_node_out = reinterpret_cast<CUgraphNode>(const_cast<GraphNode*>(error_node));
    if (result_out != nullptr) *result_out = CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE;
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto exec = std::make_unique<GraphExec>();
  exec->ctx = ctx;
  exec->flags = flags;
  exec->steps = std::move(flat.steps);
  exec->child_ranges = std::move(flat.child_ranges);
  exec->portions = std::move(flat.portions);
  exec->frees_all_allocations = std::all_of(flat.allocated.begin(), flat.allocated.end(), [&](CUdeviceptr dptr) {
    return std::find(flat.freed.begin(), flat.freed.end(), dptr) != flat.freed.end();
  });
  DescribeTop(*graph, exec.get());
  {
    std::lock_guard lock(graph->mu);
    if (flat.memory_nodes) {
      if (graph->memory_exec != nullptr) return CUDA_ERROR_INVALID_VALUE;  // one executable graph at a time
      graph->memory_exec = exec.get();
      exec->source = graph;
    }
    // The executable graph holds the graph's user objects for as long as it lives.
    for (auto [object, count] : graph->user_objects) {
      fgpu::sim::cuda::RetainUserObject(object, count);
      exec->user_objects.emplace_back(object, count);
    }
  }
  HandleRegistry::Get().Insert(exec.get(), Kind::kGraphExec);
  std::lock_guard lock(GraphMemory::Get().mu);
  GraphMemory::Get().execs.push_back(exec.get());
  if (result_out != nullptr) *result_out = CUDA_GRAPH_INSTANTIATE_SUCCESS;
  *out = reinterpret_cast<CUgraphExec>(exec.release());
  return CUDA_SUCCESS;
}

// A launch replays the executable graph's nodes on the stream, in their topological order, as
// the stream calls they stand for (a serialisation the graph's edges allow).
CUresult Launch(CUgraphExec handle, CUstream stream_handle, bool per_thread, bool upload_only) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  auto* exec = HandleRegistry::Get().Lookup<GraphExec>(handle, Kind::kGraphExec);
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = nullptr;
  if (CUresult rc = Runtime::Get().ResolveStream(stream_handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  if (stream->capture.load() != nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (CUresult rc = MakeResident(*exec); rc != CUDA_SUCCESS) return rc;
  if (upload_only) return CUDA_SUCCESS;
  CUresult result = CUDA_SUCCESS;
  for (const fgpu::sim::cuda::ExecStep& step : exec->steps) {
    if (!step.enabled) continue;  // a disabled node acts as an empty node
    const CUresult rc = fgpu::sim::cuda::RunGraphStep(step.node, stream_handle, per_thread);
    if (result == CUDA_SUCCESS) result = rc;  // the first failure; the rest of the graph still runs
  }
  fgpu::sim::cuda::RunOrHold(*stream, [stream, exec] {
    if (HandleRegistry::Get().Is(exec, Kind::kGraphExec)) {
      exec->last_launch_end_ns.store(Runtime::Get().ReadyTime(*stream));
    }
  });
  return result;
}

}  // namespace

namespace fgpu::sim::cuda {

bool FlattenGraph(Graph& graph, std::vector<ExecStep>* steps, bool* memory_nodes) {
  Flattened flat;
  const GraphNode* error_node = nullptr;
  if (!Flatten(graph, 0, &flat, &error_node)) return false;
  *steps = std::move(flat.steps);
  *memory_nodes = flat.memory_nodes;
  return true;
}

CUresult CaptureMemAlloc(Graph& graph, const CUmemPoolProps& pool_props, uint64_t bytes, CUdeviceptr* dptr) {
  CUgraphNode node = nullptr;
  return AddMemAlloc(graph, NodeDeps{.from_capture = true}, pool_props, nullptr, 0, bytes, &node, dptr);
}

CUresult CaptureMemFree(Graph& graph, CUdeviceptr dptr) {
  CUgraphNode node = nullptr;
  return AddMemFree(graph, NodeDeps{.from_capture = true}, dptr, &node);
}

}  // namespace fgpu::sim::cuda

extern "C" {

CUresult cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (phGraph == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  auto graph = std::make_unique<Graph>();
  HandleRegistry::Get().Insert(graph.get(), Kind::kGraph);
  *phGraph = reinterpret_cast<CUgraph>(graph.release());
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph hGraph) {
  Graph* graph = nullptr;
  if (CUresult rc = LookupGraph(hGraph, &graph); rc != CUDA_SUCCESS) return rc;
  if (graph->parent != nullptr) return CUDA_ERROR_INVALID_VALUE;  // owned by its child graph node
  {
    std::lock_guard lock(graph->mu);
    if (graph->capturing) return CUDA_ERROR_INVALID_VALUE;  // a stream still captures into it
  }
  delete graph;  // its executable graphs keep what they took from it
  return CUDA_SUCCESS;
}

CUresult cuGraphClone(CUgraph* phGraphClone, CUgraph originalGraph) {
  if (phGraphClone == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Graph* graph = nullptr;
  if (CUresult rc = LookupGraph(originalGraph, &graph); rc != CUDA_SUCCESS) return rc;
  if (ContainsMemoryNodes(*graph)) return CUDA_ERROR_NOT_SUPPORTED;
  *phGraphClone = reinterpret_cast<CUgraph>(CloneTree(*graph).release());
  return CUDA_SUCCESS;
}

CUresult cuGraphAddKernelNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                 size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUfunction func = nodeParams->func != nullptr ? nodeParams->func : reinterpret_cast<CUfunction>(nodeParams->kern);
  return AddKernelFrom(phGraphNode, hGraph, NodeDeps{dependencies, nullptr, numDependencies}, *nodeParams, func);
}

CUresult cuGraphAddKernelNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                              size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return AddKernelFrom(phGraphNode, hGraph, NodeDeps{dependencies, nullptr, numDependencies}, *nodeParams,
                       nodeParams->func);
}

CUresult cuGraphAddEmptyNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                             size_t numDependencies) {
  return AddEmpty(phGraphNode, hGraph, NodeDeps{dependencies, nullptr, numDependencies});
}

CUresult cuGraphAddMemAllocNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS* nodeParams) {
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Graph* graph = nullptr;
  const NodeDeps deps{dependencies, nullptr, numDependencies};
  if (CUresult rc = PrepareAdd(phGraphNode, hGraph, deps, &graph); rc != CUDA_SUCCESS) {
    return rc;
  }
  return AddMemAlloc(*graph, deps, nodeParams->poolProps, nodeParams->accessDescs, nodeParams->accessDescCount,
                     nodeParams->bytesize, phGraphNode, &nodeParams->dptr);
}

CUresult cuGraphAddMemFreeNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                               size_t numDependencies, CUdeviceptr dptr) {
  Graph* graph = nullptr;
  const NodeDeps deps{dependencies, nullptr, numDependencies};
  if (CUresult rc = PrepareAdd(phGraphNode, hGraph, deps, &graph); rc != CUDA_SUCCESS) {
    return rc;
  }
  return AddMemFree(*graph, deps, dptr, phGraphNode);
}

CUresult cuGraphAddChildGraphNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                  size_t numDependencies, CUgraph childGraph) {
  Graph* graph = nullptr;
  const NodeDeps deps{dependencies, nullptr, numDependencies};
  if (CUresult rc = PrepareAdd(phGraphNode, hGraph, deps, &graph); rc != CUDA_SUCCESS) {
    return rc;
  }
  return AddChildClone(*graph, deps, childGraph, phGraphNode);
}

CUresult cuGraphAddNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                        size_t numDependencies, CUgraphNodeParams* nodeParams) {
  return AddGeneric(phGraphNode, hGraph, NodeDeps{dependencies, nullptr, numDependencies}, nodeParams);
}

CUresult cuGraphAddNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                           const CUgraphEdgeData* dependencyData, size_t numDependencies,
                           CUgraphNodeParams* nodeParams) {
  return AddGeneric(phGraphNode, hGraph, NodeDeps{dependencies, dependencyData, numDependencies}, nodeParams);
}

CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) {
  GraphNode* node = nullptr;
  if (CUresult rc = LookupNode(hNode, &node); rc != CUDA_SUCCESS) return rc;
  if (type == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (node->type) {
    case GraphNode::Type::kKernel: *type = CU_GRAPH_NODE_TYPE_KERNEL; break;
    case GraphNode::Type::kMemAlloc: *type = CU_GRAPH_NODE_TYPE_MEM_ALLOC; break;
    case GraphNode::Type::kMemFree: *type = CU_GRAPH_NODE_TYPE_MEM_FREE; break;
    case GraphNode::Type::kEmpty: *type = CU_GRAPH_NODE_TYPE_EMPTY; break;
    case GraphNode::Type::kChildGraph: *type = CU_GRAPH_NODE_TYPE_GRAPH; break;
    case GraphNode::Type::kMemset: *type = CU_GRAPH_NODE_TYPE_MEMSET; break;
    case GraphNode::Type::kMemcpy: *type = CU_GRAPH_NODE_TYPE_MEMCPY; break;
    case GraphNode::Type::kHost: *type = CU_GRAPH_NODE_TYPE_HOST; break;
    case GraphNode::Type::kEventRecord: *type = CU_GRAPH_NODE_TYPE_EVENT_RECORD; break;
    case GraphNode::Type::kEventWait: *type = CU_GRAPH_NODE_TYPE_WAIT_EVENT; break;
    case GraphNode::Type::kExtSemSignal: *type = CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL; break;
    case GraphNode::Type::kExtSemWait: *type = CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT; break;
    case GraphNode::Type::kBatchMemOp: *type = CU_GRAPH_NODE_TYPE_BATCH_MEM_OP; break;
  }
  return CUDA_SUCCESS;
}

CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS* params_out) {
  GraphNode* node = nullptr;
  if (CUresult rc = LookupNode(hNode, &node); rc != CUDA_SUCCESS) return rc;
  if (params_out == nullptr || node->type != GraphNode::Type::kMemAlloc) return CUDA_ERROR_INVALID_VALUE;
  std::memset(params_out, 0, sizeof(*params_out));
  params_out->poolProps = node->pool_props;
  params_out->accessDescs = node->access.empty() ? nullptr : node->access.data();  // valid while the node lives
  params_out->accessDescCount = node->access.size();
  params_out->bytesize = node->bytes;
  params_out->dptr = node->dptr;
  return CUDA_SUCCESS;
}

CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr* dptr_out) {
  GraphNode* node = nullptr;
  if (CUresult rc = LookupNode(hNode, &node); rc != CUDA_SUCCESS) return rc;
  if (dptr_out == nullptr || node->type != GraphNode::Type::kMemFree) return CUDA_ERROR_INVALID_VALUE;
  *dptr_out = node->dptr;
  return CUDA_SUCCESS;
}

CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph* phGraph) {
  GraphNode* node = nullptr;
  if (CUresult rc = LookupNode(hNode, &node); rc != CUDA_SUCCESS) return rc;
  if (phGraph == nullptr || node->type != GraphNode::Type::kChildGraph) return CUDA_ERROR_INVALID_VALUE;
  *phGraph = reinterpret_cast<CUgraph>(node->child);  // not a copy: owned by the node
  return CUDA_SUCCESS;
}

CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  if (numNodes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Graph* graph = nullptr;
  if (CUresult rc = LookupGraph(hGraph, &graph); rc != CUDA_SUCCESS) return rc;
  std::lock_guard lock(graph->mu);
  if (nodes != nullptr) {
    const size_t n = std::min(*numNodes, graph->nodes.size());
    for (size_t i = 0; i < n; ++i) nodes[i] = reinterpret_cast<CUgraphNode>(graph->nodes[i].get());
  }
  *numNodes = graph->nodes.size();
  return CUDA_SUCCESS;
}

CUresult cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode, char* logBuffer,
                            size_t bufferSize) {
  if (phErrorNode != nullptr) *phErrorNode = nullptr;
  if (logBuffer != nullptr && bufferSize > 0) logBuffer[0] = '\0';
  return Instantiate(phGraphExec, hGraph, 0, phErrorNode, nullptr);
}
CUresult cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode, char* logBuffer,
                               size_t bufferSize) {
  return cuGraphInstantiate(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}
CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph, unsigned long long flags) {
  constexpr unsigned long long kKnown = 0xF;  // auto-free, upload, device launch, use node priority
  if ((flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
  return Instantiate(phGraphExec, hGraph, flags, nullptr, nullptr);
}
CUresult cuGraphInstantiateWithParams(CUgraphExec* phGraphExec, CUgraph hGraph,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {
  if (instantiateParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  instantiateParams->hErrNode_out = nullptr;
  CUresult rc = Instantiate(phGraphExec, hGraph, instantiateParams->flags, &instantiateParams->hErrNode_out,
                            &instantiateParams->result_out);
  if (rc == CUDA_SUCCESS && (instantiateParams->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) != 0) {
    rc = Launch(*phGraphExec, instantiateParams->hUploadStream, false, /*upload_only=*/true);
  }
  return rc;
}
CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec* phGraphExec, CUgraph hGraph,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {
  return cuGraphInstantiateWithParams(phGraphExec, hGraph, instantiateParams);
}

CUresult cuGraphLaunch(CUgraphExec hGraph, CUstream hStream) { return Launch(hGraph, hStream, false, false); }
CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  return Launch(hGraphExec, hStream, true, false);
}
CUresult cuGraphUpload(CUgraphExec hGraph, CUstream hStream) { return Launch(hGraph, hStream, false, true); }
CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  return Launch(hGraphExec, hStream, true, true);
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  auto* exec = HandleRegistry::Get().Lookup<GraphExec>(hGraphExec, Kind::kGraphExec);
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  HandleRegistry::Get().Erase(exec);
  // Its graph may be instantiated again. (A graph destroyed meanwhile left the registry; a new
  // graph at the same address never names this exec.)
  if (exec->source != nullptr && HandleRegistry::Get().Is(exec->source, Kind::kGraph)) {
    std::lock_guard lock(exec->source->mu);
    if (exec->source->memory_exec == exec) exec->source->memory_exec = nullptr;
  }
  {
    std::lock_guard lock(GraphMemory::Get().mu);
    for (GraphExec::Portion& portion : exec->portions) ReleasePortion(portion);
    std::erase(GraphMemory::Get().execs, exec);
  }
  ReleaseExecUserObjects(std::move(exec->user_objects), exec->last_launch_end_ns.load());
  delete exec;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGraphMemTrim(CUdevice device) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = Runtime::Get().CheckDevice(device); rc != CUDA_SUCCESS) return rc;
  const uint64_t now = SharedDevices::NowNs();
  std::lock_guard lock(GraphMemory::Get().mu);
  for (GraphExec* exec : GraphMemory::Get().execs) {
    if (!exec->frees_all_allocations || exec->last_launch_end_ns.load() > now) continue;
    for (GraphExec::Portion& portion : exec->portions) {
      if (portion.device == device) ReleasePortion(portion);
    }
  }
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void* value) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = Runtime::Get().CheckDevice(device); rc != CUDA_SUCCESS) return rc;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(GraphMemory::Get().mu);
  const GraphMemoryStats& s = GraphMemory::Get().stats[static_cast<size_t>(device)];
  auto* out = static_cast<cuuint64_t*>(value);
  switch (attr) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT: *out = s.used; return CUDA_SUCCESS;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH: *out = s.used_high; return CUDA_SUCCESS;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT: *out = s.reserved; return CUDA_SUCCESS;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH: *out = s.reserved_high; return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void* value) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = Runtime::Get().CheckDevice(device); rc != CUDA_SUCCESS) return rc;
  if (value == nullptr || *static_cast<cuuint64_t*>(value) != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(GraphMemory::Get().mu);
  GraphMemoryStats& s = GraphMemory::Get().stats[static_cast<size_t>(device)];
  if (attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH) {
    s.used_high = s.used;
  } else if (attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) {
    s.reserved_high = s.reserved;
  } else {
    return CUDA_ERROR_INVALID_VALUE;  // only the high-water marks can be reset
  }
  return CUDA_SUCCESS;
}

}  // extern "C"
