// Graph topology: dependency edges with their data (add, remove, list), a node's dependencies
// and dependents, root nodes, node destruction, finding a node in a clone, and the DOT dump.
//
// Edges are stored on the dependent node (GraphNode::deps / dep_edges, in the order added), so
// every listing walks the graph's nodes in creation order and each node's edges in that order.
// Cycles may be formed with cuGraphAddDependencies, as in the driver; instantiation refuses them.
#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>

#include "core/abi/cuda_api.h"
#include "sim/cuda/graph_internal.h"
#include "sim/cuda/runtime.h"

namespace {

using fgpu::sim::cuda::Graph;
using fgpu::sim::cuda::GraphNode;
using fgpu::sim::cuda::HandleRegistry;
using fgpu::sim::cuda::Kind;

bool IsDefaultEdge(const CUgraphEdgeData& edge) { return edge.from_port == 0 && edge.to_port == 0 && edge.type == 0; }

CUgraphNode AsHandle(const GraphNode* node) { return reinterpret_cast<CUgraphNode>(const_cast<GraphNode*>(node)); }

// The position of an edge of `to` from `from` (with that data, when given), or -1.
long FindEdge(const GraphNode& to, const GraphNode* from, const CUgraphEdgeData* data) {
  for (size_t i = 0; i < to.deps.size(); ++i) {
    if (to.deps[i] == from && (data == nullptr || fgpu::sim::cuda::SameEdge(to.dep_edges[i], *data))) {
      return static_cast<long>(i);
    }
  }
  return -1;
}

// Both ends of each edge: live nodes of `graph`, distinct. Caller holds graph.mu.
CUresult ResolveEnds(Graph& graph, const CUgraphNode* from, const CUgraphNode* to, size_t count,
                     std::vector<std::pair<GraphNode*, GraphNode*>>* ends) {
  if (count > 0 && (from == nullptr || to == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    auto* a = HandleRegistry::Get().Lookup<GraphNode>(from[i], Kind::kGraphNode);
    auto* b = HandleRegistry::Get().Lookup<GraphNode>(to[i], Kind::kGraphNode);
    if (a == nullptr || b == nullptr || a->owner != &graph || b->owner != &graph || a == b) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    ends->emplace_back(a, b);
  }
  return CUDA_SUCCESS;
}

CUresult AddEdges(CUgraph handle, const CUgraphNode* from, const CUgraphNode* to, const CUgraphEdgeData* data,
                  size_t count) {
  Graph* graph = nullptr;
  if (CUresult rc = fgpu::sim::cuda::LookupGraph(handle, &graph); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = fgpu::sim::cuda::CheckEdgeData(data, count); rc != CUDA_SUCCESS) return rc;
  std::lock_guard lock(graph->mu);
  std::vector<std::pair<GraphNode*, GraphNode*>> ends;
  if (CUresult rc = ResolveEnds(*graph, from, to, count, &ends); rc != CUDA_SUCCESS) return rc;
  for (size_t i = 0; i < count; ++i) {
    // An existing dependency, or the same one twice in this call.
    if (FindEdge(*ends[i].second, ends[i].first, nullptr) >= 0) return CUDA_ERROR_INVALID_VALUE;
    for (size_t j = 0; j < i; ++j) {
      if (ends[j] == ends[i]) return CUDA_ERROR_INVALID_VALUE;
    }
  }
  for (size_t i = 0; i < count; ++i) {
    ends[i].second->deps.push_back(ends[i].first);
    ends[i].second->dep_edges.push_back(data != nullptr ? data[i] : CUgraphEdgeData{});
  }
  return CUDA_SUCCESS;
}

CUresult RemoveEdges(CUgraph handle, const CUgraphNode* from, const CUgraphNode* to, const CUgraphEdgeData* data,
                     size_t count) {
  Graph* graph = nullptr;
  if (CUresult rc = fgpu::sim::cuda::LookupGraph(handle, &graph); rc != CUDA_SUCCESS) return rc;
  std::lock_guard lock(graph->mu);
  std::vector<std::pair<GraphNode*, GraphNode*>> ends;
  if (CUresult rc = ResolveEnds(*graph, from, to, count, &ends); rc != CUDA_SUCCESS) return rc;
  // Without edge data only a default edge matches.
  const CUgraphEdgeData default_edge{};
  for (size_t i = 0; i < count; ++i) {
    if (FindEdge(*ends[i].second, ends[i].first, data != nullptr ? &data[i] : &default_edge) < 0) {
      return CUDA_ERROR_INVALID_VALUE;  // no such dependency
    }
  }
  for (size_t i = 0; i < count; ++i) {
    GraphNode& dependent = *ends[i].second;
    const long at = FindEdge(dependent, ends[i].first, data != nullptr ? &data[i] : &default_edge);
    if (at < 0) continue;  // listed twice
    dependent.deps.erase(dependent.deps.begin() + at);
    dependent.dep_edges.erase(dependent.dep_edges.begin() + at);
  }
  return CUDA_SUCCESS;
}

struct EdgeList {
  std::vector<const GraphNode*> from, to;
  std::vector<CUgraphEdgeData> data;
};

// Writes a list of edges the way the driver's queries do: a count only when both node arrays
// are NULL, otherwise up to *count entries (NULL-padded) and the number written. Without an
// edge-data array every edge must be a default one (CUDA_ERROR_LOSSY_QUERY).
CUresult ReportEdges(const EdgeList& list, CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* data, size_t* count,
                     bool has_from_side, bool has_to_side) {
  const size_t n = list.data.size();
  const bool want_nodes = (has_from_side ? from != nullptr : true) && (has_to_side ? to != nullptr : true);
  const bool any_array = (has_from_side && from != nullptr) || (has_to_side && to != nullptr);
  if (!any_array) {
    if (data != nullptr) return CUDA_ERROR_INVALID_VALUE;
    *count = n;
    return CUDA_SUCCESS;
  }
  if (!want_nodes) return CUDA_ERROR_INVALID_VALUE;  // one node array without the other
  const size_t written = std::min(*count, n);
  if (data == nullptr) {
    for (size_t i = 0; i < written; ++i) {
      if (!IsDefaultEdge(list.data[i])) return CUDA_ERROR_LOSSY_QUERY;
    }
  }
  for (size_t i = 0; i < *count; ++i) {
    const bool real = i < written;
    if (has_from_side) from[i] = real ? AsHandle(list.from[i]) : nullptr;
    if (has_to_side) to[i] = real ? AsHandle(list.to[i]) : nullptr;
    if (data != nullptr) data[i] = real ? list.data[i] : CUgraphEdgeData{};
  }
  *count = written;
  return CUDA_SUCCESS;
}

CUresult GetEdges(CUgraph handle, CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* data, size_t* count) {
  Graph* graph = nullptr;
  if (CUresult rc = fgpu::sim::cuda::LookupGraph(handle, &graph); rc != CUDA_SUCCESS) return rc;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(graph->mu);
  EdgeList list;
  for (const auto& node : graph->nodes) {
    for (size_t i = 0; i < node->deps.size(); ++i) {
      list.from.push_back(node->deps[i]);
      list.to.push_back(node.get());
      list.data.push_back(node->dep_edges[i]);
    }
  }
  return ReportEdges(list, from, to, data, count, true, true);
}

CUresult GetDependencies(CUgraphNode handle, CUgraphNode* deps, CUgraphEdgeData* data, size_t* count) {
  GraphNode* node = nullptr;
  if (CUresult rc = fgpu::sim::cuda::LookupNode(handle, &node); rc != CUDA_SUCCESS) return rc;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(node->owner->mu);
  EdgeList list;
  list.from.assign(node->deps.begin(), node->deps.end());
  list.to.assign(node->deps.size(), node);
  list.data = node->dep_edges;
  return ReportEdges(list, deps, nullptr, data, count, true, false);
}

CUresult GetDependents(CUgraphNode handle, CUgraphNode* dependents, CUgraphEdgeData* data, size_t* count) {
  GraphNode* node = nullptr;
  if (CUresult rc = fgpu::sim::cuda::LookupNode(handle, &node); rc != CUDA_SUCCESS) return rc;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(node->owner->mu);
  EdgeList list;
  for (const auto& other : node->owner->nodes) {
    for (size_t i = 0; i < other->deps.size(); ++i) {
      if (other->deps[i] != node) continue;
      list.from.push_back(other.get());  // reported in the `from` slot: the dependents array
      list.to.push_back(node);
      list.data.push_back(other->dep_edges[i]);
    }
  }
  return ReportEdges(list, dependents, nullptr, data, count, true, false);
}

const char* NodeKindName(GraphNode::Type type) {
  switch (type) {
    case GraphNode::Type::kKernel: return "KERNEL";
    case GraphNode::Type::kMemAlloc: return "MEM_ALLOC";
    case GraphNode::Type::kMemFree: return "MEM_FREE";
    case GraphNode::Type::kEmpty: return "EMPTY";
    case GraphNode::Type::kChildGraph: return "GRAPH";
    case GraphNode::Type::kMemset: return "MEMSET";
    case GraphNode::Type::kMemcpy: return "MEMCPY";
    case GraphNode::Type::kHost: return "HOST";
    case GraphNode::Type::kEventRecord: return "EVENT_RECORD";
    case GraphNode::Type::kEventWait: return "WAIT_EVENT";
    case GraphNode::Type::kExtSemSignal: return "EXT_SEMAS_SIGNAL";
    case GraphNode::Type::kExtSemWait: return "EXT_SEMAS_WAIT";
    case GraphNode::Type::kBatchMemOp: return "BATCH_MEM_OP";
  }
  return "UNKNOWN";
}

// The parameters a verbose DOT label shows.
std::string NodeDetails(const GraphNode& node) {
  char text[256] = "";
  switch (node.type) {
    case GraphNode::Type::kKernel:
      std::snprintf(text, sizeof text, "\\n%s<<<(%u,%u,%u),(%u,%u,%u),%u>>>",
                    node.kernel.function != nullptr ? node.kernel.function->name.c_str() : "?", node.kernel.grid[0],
                    node.kernel.grid[1], node.kernel.grid[2], node.kernel.block[0], node.kernel.block[1],
                    node.kernel.block[2], node.kernel.shared_bytes);
      break;
    case GraphNode::Type::kMemset:
      std::snprintf(text, sizeof text, "\\ndst=0x%llx value=%u elementSize=%u width=%zu height=%zu",
                    static_cast<unsigned long long>(node.memset.dst), node.memset.value, node.memset.elementSize,
                    node.memset.width, node.memset.height);
      break;
    case GraphNode::Type::kMemcpy:
      std::snprintf(text, sizeof text, "\\n%zux%zux%zu bytes", node.memcpy.WidthInBytes, node.memcpy.Height,
                    node.memcpy.Depth);
      break;
    case GraphNode::Type::kMemAlloc:
    case GraphNode::Type::kMemFree:
      std::snprintf(text, sizeof text, "\\ndptr=0x%llx bytes=%llu", static_cast<unsigned long long>(node.dptr),
                    static_cast<unsigned long long>(node.bytes));
      break;
    case GraphNode::Type::kHost:
      std::snprintf(text, sizeof text, "\\nfn=%p data=%p", reinterpret_cast<void*>(node.host.fn), node.host.userData);
      break;
    case GraphNode::Type::kEventRecord:
    case GraphNode::Type::kEventWait:
      std::snprintf(text, sizeof text, "\\nevent=%p", static_cast<void*>(node.event));
      break;
    default:
      break;
  }
  return text;
}

// One graph (a cluster for an embedded one) and its edges. Caller holds no lock.
void WriteDot(std::FILE* out, Graph& graph, const std::string& prefix, bool verbose) {
  std::lock_guard lock(graph.mu);
  std::map<const GraphNode*, size_t> index;
  for (size_t i = 0; i < graph.nodes.size(); ++i) index[graph.nodes[i].get()] = i;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const GraphNode& node = *graph.nodes[i];
    const std::string name = prefix + "node_" + std::to_string(i);
    std::fprintf(out, "\"%s\" [shape=box label=\"%s_%zu\\n%s%s\"];\n", name.c_str(), prefix.c_str(), i,
                 NodeKindName(node.type), verbose ? NodeDetails(node).c_str() : "");
    if (node.child != nullptr) {
      const std::string inner = name + "_";
      std::fprintf(out, "subgraph \"cluster_%s\" {\nlabel=\"%s\";\n", name.c_str(), name.c_str());
      WriteDot(out, *node.child, inner, verbose);
      std::fprintf(out, "}\n");
    }
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const GraphNode& node = *graph.nodes[i];
    for (size_t e = 0; e < node.deps.size(); ++e) {
      std::fprintf(out, "\"%snode_%zu\" -> \"%snode_%zu\"%s;\n", prefix.c_str(), index.at(node.deps[e]), prefix.c_str(),
                   i, IsDefaultEdge(node.dep_edges[e]) ? "" : " [style=dashed]");
    }
  }
}

}  // namespace

extern "C" {

CUresult cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to, size_t numDependencies) {
  return AddEdges(hGraph, from, to, nullptr, numDependencies);
}
CUresult cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                   const CUgraphEdgeData* edgeData, size_t numDependencies) {
  return AddEdges(hGraph, from, to, edgeData, numDependencies);
}
CUresult cuGraphRemoveDependencies(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                   size_t numDependencies) {
  return RemoveEdges(hGraph, from, to, nullptr, numDependencies);
}
CUresult cuGraphRemoveDependencies_v2(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                      const CUgraphEdgeData* edgeData, size_t numDependencies) {
  return RemoveEdges(hGraph, from, to, edgeData, numDependencies);
}
CUresult cuGraphGetEdges(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to, size_t* numEdges) {
  return GetEdges(hGraph, from, to, nullptr, numEdges);
}
CUresult cuGraphGetEdges_v2(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* edgeData,
                            size_t* numEdges) {
  return GetEdges(hGraph, from, to, edgeData, numEdges);
}
CUresult cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode* dependencies, size_t* numDependencies) {
  return GetDependencies(hNode, dependencies, nullptr, numDependencies);
}
CUresult cuGraphNodeGetDependencies_v2(CUgraphNode hNode, CUgraphNode* dependencies, CUgraphEdgeData* edgeData,
                                       size_t* numDependencies) {
  return GetDependencies(hNode, dependencies, edgeData, numDependencies);
}
CUresult cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode* dependentNodes, size_t* numDependentNodes) {
  return GetDependents(hNode, dependentNodes, nullptr, numDependentNodes);
}
CUresult cuGraphNodeGetDependentNodes_v2(CUgraphNode hNode, CUgraphNode* dependentNodes, CUgraphEdgeData* edgeData,
                                         size_t* numDependentNodes) {
  return GetDependents(hNode, dependentNodes, edgeData, numDependentNodes);
}

CUresult cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode* rootNodes, size_t* numRootNodes) {
  Graph* graph = nullptr;
  if (CUresult rc = fgpu::sim::cuda::LookupGraph(hGraph, &graph); rc != CUDA_SUCCESS) return rc;
  if (numRootNodes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(graph->mu);
  std::vector<const GraphNode*> roots;
  for (const auto& node : graph->nodes) {
    if (node->deps.empty()) roots.push_back(node.get());
  }
  if (rootNodes != nullptr) {
    const size_t n = std::min(*numRootNodes, roots.size());
    for (size_t i = 0; i < n; ++i) rootNodes[i] = AsHandle(roots[i]);
    *numRootNodes = n;
  } else {
    *numRootNodes = roots.size();
  }
  return CUDA_SUCCESS;
}

// Removes the node and every edge to or from it. An allocation node's address range stays
// reserved with the graph (an executable graph made earlier may use it).
CUresult cuGraphDestroyNode(CUgraphNode hNode) {
  GraphNode* node = nullptr;
  if (CUresult rc = fgpu::sim::cuda::LookupNode(hNode, &node); rc != CUDA_SUCCESS) return rc;
  Graph& graph = *node->owner;
  std::unique_ptr<GraphNode> doomed;
  {
    std::lock_guard lock(graph.mu);
    for (const auto& other : graph.nodes) {
      for (long at = FindEdge(*other, node, nullptr); at >= 0; at = FindEdge(*other, node, nullptr)) {
        other->deps.erase(other->deps.begin() + at);
        other->dep_edges.erase(other->dep_edges.begin() + at);
      }
    }
    for (size_t i = 0; i < graph.capture_deps.size(); ++i) {
      if (graph.capture_deps[i] != node) continue;
      graph.capture_deps.erase(graph.capture_deps.begin() + static_cast<long>(i));
      graph.capture_edges.erase(graph.capture_edges.begin() + static_cast<long>(i));
      break;
    }
    auto it = std::find_if(graph.nodes.begin(), graph.nodes.end(), [&](const auto& n) { return n.get() == node; });
    doomed = std::move(*it);
    graph.nodes.erase(it);
    HandleRegistry::Get().Erase(node);
  }
  delete doomed->child;  // an embedded graph goes with its node
  return CUDA_SUCCESS;
}

CUresult cuGraphNodeFindInClone(CUgraphNode* phNode, CUgraphNode hOriginalNode, CUgraph hClonedGraph) {
  GraphNode* original = nullptr;
  Graph* clone = nullptr;
  if (CUresult rc = fgpu::sim::cuda::LookupNode(hOriginalNode, &original); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = fgpu::sim::cuda::LookupGraph(hClonedGraph, &clone); rc != CUDA_SUCCESS) return rc;
  if (phNode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t serial = 0;
  {
    std::lock_guard lock(original->owner->mu);
    serial = original->serial;
  }
  std::lock_guard lock(clone->mu);
  for (const auto& node : clone->nodes) {
    if (node->clone_of == serial) {
      *phNode = AsHandle(node.get());
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_VALUE;  // not a clone of that node's graph
}

// Writes the graph as a Graphviz digraph: a box per node (its kind; with
// CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE its parameters), an arrow per edge, a cluster per child graph.
CUresult cuGraphDebugDotPrint(CUgraph hGraph, const char* path, unsigned int flags) {
  Graph* graph = nullptr;
  if (CUresult rc = fgpu::sim::cuda::LookupGraph(hGraph, &graph); rc != CUDA_SUCCESS) return rc;
  if (path == nullptr || flags >= (1u << 16)) return CUDA_ERROR_INVALID_VALUE;
  std::FILE* out = std::fopen(path, "w");
  if (out == nullptr) return CUDA_ERROR_OPERATING_SYSTEM;
  std::fprintf(out, "digraph dot {\n");
  WriteDot(out, *graph, "graph_0_", (flags & CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE) != 0);
  std::fprintf(out, "}\n");
  const bool written = std::ferror(out) == 0;
  return std::fclose(out) == 0 && written ? CUDA_SUCCESS : CUDA_ERROR_OPERATING_SYSTEM;
}

}  // extern "C"
