// What the graph files share (api_graph.cc, api_graph_nodes.cc, api_graph_topology.cc,
// api_graph_exec.cc, api_user_object.cc, api_stream_capture.cc): handle lookups, node insertion
// with its edges, and the user-object references graphs hold.
//
// Locking: a graph's `mu` guards its node list, every node's edges and parameters, its capture
// dependencies and its user objects. Functions below that take a Graph& lock it themselves
// unless their name ends in Locked.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/abi/cuda_types.h"
#include "sim/cuda/objects.h"

namespace fgpu::sim::cuda {

// The handle checks every graph entry point starts with: cuInit, then a live handle
// (CUDA_ERROR_INVALID_VALUE otherwise, as the driver answers for graph handles).
CUresult LookupGraph(CUgraph handle, Graph** out);
CUresult LookupNode(CUgraphNode handle, GraphNode** out);
CUresult LookupExec(CUgraphExec handle, GraphExec** out);

// The dependencies a new node is given: explicit ones, or (from_capture) the capture
// dependencies of the graph, which the new node then replaces.
struct NodeDeps {
  const CUgraphNode* nodes = nullptr;
  const CUgraphEdgeData* edges = nullptr;  // null: all default
  size_t count = 0;
  bool from_capture = false;
};

// Every dependency a live node of `graph`, none twice, every edge's data valid
// (CUDA_ERROR_INVALID_VALUE; programmatic/port edges CUDA_ERROR_NOT_SUPPORTED).
CUresult CheckNodeDeps(Graph& graph, const NodeDeps& deps);
CUresult CheckEdgeData(const CUgraphEdgeData* edges, size_t count);
// Gives the node its serial, owner and edges, registers its handle and appends it.
CUgraphNode InsertNode(Graph& graph, std::unique_ptr<GraphNode> node, const NodeDeps& deps);
// The checks of every cuGraphAdd*Node (an output, a live graph, valid dependencies), then the
// insertion of `node`.
CUresult AddPreparedNode(CUgraphNode* out, CUgraph handle, const NodeDeps& deps, std::unique_ptr<GraphNode> node);
// Adds a node recorded by stream capture into `graph` after its capture dependencies.
void AppendCapturedNode(Graph& graph, std::unique_ptr<GraphNode> node);

// Stream capture (api_stream_capture.cc). StartCapture: `stream` captures into `graph` from now
// (CUDA_ERROR_ILLEGAL_STATE if it already captures or the graph is captured; the legacy stream
// cannot be captured). StopCapture: ends it, returning the graph (null if none).
CUresult StartCapture(Stream& stream, Graph& graph, CUstreamCaptureMode mode, bool owns_graph);
Graph* StopCapture(Stream& stream);

// A new process-unique node serial.
uint64_t NextNodeSerial();

// Whether `a` and `b` are equal edge data.
bool SameEdge(const CUgraphEdgeData& a, const CUgraphEdgeData& b);

// User objects (api_user_object.cc): references taken and dropped on behalf of graphs and
// executable graphs. Releasing the last reference calls the destructor callback (on the host-call
// executor, as the driver runs it asynchronously).
void RetainUserObject(UserObject* object, unsigned count);
void ReleaseUserObject(UserObject* object, unsigned count);

// Validation of node parameters shared by add, set and exec-set (api_graph_nodes.cc).
CUresult CheckMemsetParams(const CUDA_MEMSET_NODE_PARAMS& params, int device);
CUresult CheckMemcpyParams(const CUDA_MEMCPY3D& params, int device);
CUresult CheckSemaphores(const CUexternalSemaphore* semaphores, const void* params, unsigned count);
CUresult CheckBatchMemOps(const CUstreamBatchMemOpParams* ops, unsigned count, unsigned flags);

// Fills a node from cuGraphAddNode/cuGraphNodeSetParams parameters of the kinds of
// api_graph_nodes.cc (and kernels), validated; conditional nodes CUDA_ERROR_NOT_SUPPORTED.
CUresult FillNodeFromParams(const CUgraphNodeParams& params, GraphNode* node);
// Copies the parameters (not the identity, edges or attributes) of `from` into `to`.
void CopyNodeParams(GraphNode& to, const GraphNode& from);
// Launch attributes of kernel nodes and streams, validated, stored and read back.
CUresult WriteLaunchAttribute(LaunchAttributes& attributes, CUlaunchAttributeID id, const CUlaunchAttributeValue& v);
CUresult ReadLaunchAttribute(const LaunchAttributes& attributes, CUlaunchAttributeID id, CUlaunchAttributeValue* out);

// The steps an executable graph of `graph` would have (origins set); false on a cycle.
// *memory_nodes: whether it has allocation or free nodes. Caller holds no graph lock.
bool FlattenGraph(Graph& graph, std::vector<ExecStep>* steps, bool* memory_nodes);

// Runs one node of an executable graph on a stream, as the corresponding stream call does
// (api_graph_nodes.cc).
CUresult RunGraphStep(const GraphNode& node, CUstream stream, bool per_thread);

}  // namespace fgpu::sim::cuda
