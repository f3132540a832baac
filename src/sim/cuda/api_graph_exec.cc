// Executable graphs changed in place: cuGraphExec*SetParams (one node), node enable/disable,
// cuGraphExecUpdate[_v2] (a topologically identical graph's parameters), cuGraphExecGetFlags.
//
// An executable graph names its nodes by the serials of the graph nodes it was made from (child
// graphs' nodes included), so the node handles of the instantiated graph address them, as the
// driver documents. The driver's update restrictions are applied: a kernel keeps its context,
// a 2D memset changes only its address and value, a copy keeps its memory types, a semaphore
// node keeps its count of semaphores; memory (allocation/free) nodes cannot be updated.
#include <algorithm>
#include <cstring>
#include <mutex>

#include "core/abi/cuda_api.h"
#include "sim/cuda/graph_internal.h"
#include "sim/cuda/runtime.h"

namespace {

using fgpu::sim::cuda::ExecStep;
using fgpu::sim::cuda::Graph;
using fgpu::sim::cuda::GraphExec;
using fgpu::sim::cuda::GraphNode;

// Whether `fresh` may replace `current`'s parameters in an executable graph; the update result
// that says why not otherwise.
CUgraphExecUpdateResult UpdateVerdict(const GraphNode& current, const GraphNode& fresh) {
  if (current.type != fresh.type) return CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
  switch (current.type) {
    case GraphNode::Type::kKernel:
      if (current.kernel_params.ctx != fresh.kernel_params.ctx) return CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE;
      break;
    case GraphNode::Type::kMemset: {
      const CUDA_MEMSET_NODE_PARAMS& a = current.memset;
      const CUDA_MEMSET_NODE_PARAMS& b = fresh.memset;
      if (current.device != fresh.device) return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
      const bool two_d = a.height > 1 || b.height > 1;
      if (two_d && (a.pitch != b.pitch || a.elementSize != b.elementSize || a.width != b.width || a.height != b.height)) {
        return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;  // a 2D memset changes only address and value
      }
      break;
    }
    case GraphNode::Type::kMemcpy:
      if (current.device != fresh.device || current.memcpy.srcMemoryType != fresh.memcpy.srcMemoryType ||
          current.memcpy.dstMemoryType != fresh.memcpy.dstMemoryType) {
        return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
      }
      break;
    case GraphNode::Type::kExtSemSignal:
    case GraphNode::Type::kExtSemWait:
      if (current.semaphores.size() != fresh.semaphores.size()) return CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
      break;
    case GraphNode::Type::kMemAlloc:
    case GraphNode::Type::kMemFree:
      if (current.dptr != fresh.dptr || current.bytes != fresh.bytes) return CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED;
      break;
    default:
      break;
  }
  return CU_GRAPH_EXEC_UPDATE_SUCCESS;
}

// Takes a new node's parameters into a step (its identity, state and the exec's memory stay).
void Adopt(ExecStep& step, const GraphNode& fresh) {
  fgpu::sim::cuda::CopyNodeParams(step.node, fresh);
  step.node.attributes = fresh.attributes;
}

// The step of `exec` made from graph node `handle` (CUDA_ERROR_INVALID_VALUE if none).
CUresult FindStep(CUgraphExec exec_handle, CUgraphNode handle, GraphExec** exec, ExecStep** step,
                  GraphNode** node = nullptr) {
  if (CUresult rc = fgpu::sim::cuda::LookupExec(exec_handle, exec); rc != CUDA_SUCCESS) return rc;
  GraphNode* source = nullptr;
  if (CUresult rc = fgpu::sim::cuda::LookupNode(handle, &source); rc != CUDA_SUCCESS) return rc;
  if (node != nullptr) *node = source;
  auto& steps = (*exec)->steps;
  auto it = std::find_if(steps.begin(), steps.end(), [&](const ExecStep& s) { return s.node.serial == source->serial; });
  if (it == steps.end()) return CUDA_ERROR_INVALID_VALUE;  // not a node this executable graph was made from
  *step = &*it;
  return CUDA_SUCCESS;
}

// cuGraphExec*SetParams: the node's new parameters, validated as for the graph node, then the
// update restrictions (CUDA_ERROR_INVALID_VALUE when broken).
CUresult ExecSetGeneric(CUgraphExec exec_handle, CUgraphNode handle, const CUgraphNodeParams& params) {
  GraphExec* exec = nullptr;
  ExecStep* step = nullptr;
  if (CUresult rc = FindStep(exec_handle, handle, &exec, &step); rc != CUDA_SUCCESS) return rc;
  GraphNode fresh;
  if (CUresult rc = fgpu::sim::cuda::FillNodeFromParams(params, &fresh); rc != CUDA_SUCCESS) return rc;
  if (UpdateVerdict(step->node, fresh) != CU_GRAPH_EXEC_UPDATE_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  fgpu::sim::cuda::CopyNodeParams(step->node, fresh);
  return CUDA_SUCCESS;
}

// A graph node flattened the same way (kinds in the same order) as `steps`: the verdict, and the
// first offending node of the new graph.
CUgraphExecUpdateResult CompareSteps(const std::vector<ExecStep>& steps, size_t begin, size_t end,
                                     const std::vector<ExecStep>& fresh, const GraphNode** error_node) {
  if (end - begin != fresh.size()) return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
  for (size_t i = 0; i < fresh.size(); ++i) {
    const CUgraphExecUpdateResult verdict = UpdateVerdict(steps[begin + i].node, fresh[i].node);
    if (verdict != CU_GRAPH_EXEC_UPDATE_SUCCESS) {
      *error_node = fresh[i].origin;
      return verdict;
    }
    if (fresh[i].node.type == GraphNode::Type::kMemAlloc || fresh[i].node.type == GraphNode::Type::kMemFree) {
      *error_node = fresh[i].origin;
      return CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED;  // memory nodes cannot be updated
    }
  }
  return CU_GRAPH_EXEC_UPDATE_SUCCESS;
}

// The top-level shape: as many nodes, paired in creation order, with the same kinds and the
// same dependencies (by pairing).
CUgraphExecUpdateResult CompareTop(const GraphExec& exec, Graph& graph, const GraphNode** error_node,
                                   const GraphNode** error_from) {
  std::lock_guard lock(graph.mu);
  if (graph.nodes.size() != exec.top_nodes.size()) return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
  std::vector<uint64_t> paired(graph.nodes.size());  // new node index -> old serial
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    paired[i] = exec.top_nodes[i];
    if (graph.nodes[i]->type != exec.top_types[i]) {
      *error_node = graph.nodes[i].get();
      return CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
    }
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const GraphNode& node = *graph.nodes[i];
    std::vector<uint64_t> old_deps;
    for (auto [from, to] : exec.top_edges) {
      if (to == paired[i]) old_deps.push_back(from);
    }
    if (old_deps.size() != node.deps.size()) {
      *error_node = &node;
      return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    }
    for (size_t e = 0; e < node.deps.size(); ++e) {
      const auto at = std::find_if(graph.nodes.begin(), graph.nodes.end(),
                                   [&](const auto& n) { return n.get() == node.deps[e]; }) - graph.nodes.begin();
      if (paired[static_cast<size_t>(at)] != old_deps[e]) {
        *error_node = &node;
        *error_from = node.deps[e];
        return CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
      }
    }
  }
  return CU_GRAPH_EXEC_UPDATE_SUCCESS;
}

CUresult Update(CUgraphExec exec_handle, CUgraph graph_handle, CUgraphExecUpdateResultInfo* info) {
  GraphExec* exec = nullptr;
  Graph* graph = nullptr;
  if (CUresult rc = fgpu::sim::cuda::LookupExec(exec_handle, &exec); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = fgpu::sim::cuda::LookupGraph(graph_handle, &graph); rc != CUDA_SUCCESS) return rc;
  if (info == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *info = CUgraphExecUpdateResultInfo{CU_GRAPH_EXEC_UPDATE_ERROR, nullptr, nullptr};
  const GraphNode* error_node = nullptr;
  const GraphNode* error_from = nullptr;
  CUgraphExecUpdateResult verdict = CompareTop(*exec, *graph, &error_node, &error_from);
  std::vector<ExecStep> fresh;
  bool memory_nodes = false;
  if (verdict == CU_GRAPH_EXEC_UPDATE_SUCCESS && !fgpu::sim::cuda::FlattenGraph(*graph, &fresh, &memory_nodes)) {
    verdict = CU_GRAPH_EXEC_UPDATE_ERROR;  // a cycle
  }
  if (verdict == CU_GRAPH_EXEC_UPDATE_SUCCESS) {
    verdict = CompareSteps(exec->steps, 0, exec->steps.size(), fresh, &error_node);
  }
  info->result = verdict;
  info->errorNode = reinterpret_cast<CUgraphNode>(const_cast<GraphNode*>(error_node));
  info->errorFromNode = reinterpret_cast<CUgraphNode>(const_cast<GraphNode*>(error_from));
  if (verdict != CU_GRAPH_EXEC_UPDATE_SUCCESS) return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
  for (size_t i = 0; i < fresh.size(); ++i) Adopt(exec->steps[i], fresh[i].node);
  return CUDA_SUCCESS;
}

// Only kernel, memset and memcpy nodes can be disabled, as documented.
CUresult FindSwitchable(CUgraphExec exec_handle, CUgraphNode handle, ExecStep** step) {
  GraphExec* exec = nullptr;
  if (CUresult rc = FindStep(exec_handle, handle, &exec, step); rc != CUDA_SUCCESS) return rc;
  switch ((*step)->node.type) {
    case GraphNode::Type::kKernel:
    case GraphNode::Type::kMemset:
    case GraphNode::Type::kMemcpy:
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

}  // namespace

extern "C" {

CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
                                           const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  if (CUresult rc = fgpu::sim::cuda::Ready(); rc != CUDA_SUCCESS) return rc;
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUgraphNodeParams params{};
  params.type = CU_GRAPH_NODE_TYPE_KERNEL;
  std::memcpy(&params.kernel, nodeParams, sizeof(*nodeParams));  // same layout
  return ExecSetGeneric(hGraphExec, hNode, params);
}
CUresult cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                        const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  if (CUresult rc = fgpu::sim::cuda::Ready(); rc != CUDA_SUCCESS) return rc;
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_KERNEL_NODE_PARAMS v2{nodeParams->func,      nodeParams->gridDimX,  nodeParams->gridDimY,
                                   nodeParams->gridDimZ,  nodeParams->blockDimX, nodeParams->blockDimY,
                                   nodeParams->blockDimZ, nodeParams->sharedMemBytes, nodeParams->kernelParams,
                                   nodeParams->extra,     nullptr,               nullptr};
  return cuGraphExecKernelNodeSetParams_v2(hGraphExec, hNode, &v2);
}

CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                        const CUDA_MEMSET_NODE_PARAMS* memsetParams, CUcontext ctx) {
  if (CUresult rc = fgpu::sim::cuda::Ready(); rc != CUDA_SUCCESS) return rc;
  if (memsetParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUgraphNodeParams params{};
  params.type = CU_GRAPH_NODE_TYPE_MEMSET;
  const CUDA_MEMSET_NODE_PARAMS& m = *memsetParams;
  params.memset = CUDA_MEMSET_NODE_PARAMS_v2{m.dst, m.pitch, m.value, m.elementSize, m.width, m.height, ctx};
  return ExecSetGeneric(hGraphExec, hNode, params);
}

CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_MEMCPY3D* copyParams,
                                        CUcontext ctx) {
  if (CUresult rc = fgpu::sim::cuda::Ready(); rc != CUDA_SUCCESS) return rc;
  if (copyParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUgraphNodeParams params{};
  params.type = CU_GRAPH_NODE_TYPE_MEMCPY;
  params.memcpy.copyCtx = ctx;
  params.memcpy.copyParams = *copyParams;
  return ExecSetGeneric(hGraphExec, hNode, params);
}

CUresult cuGraphExecHostNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                      const CUDA_HOST_NODE_PARAMS* nodeParams) {
  if (CUresult rc = fgpu::sim::cuda::Ready(); rc != CUDA_SUCCESS) return rc;
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUgraphNodeParams params{};
  params.type = CU_GRAPH_NODE_TYPE_HOST;
  params.host = CUDA_HOST_NODE_PARAMS_v2{nodeParams->fn, nodeParams->userData};
  return ExecSetGeneric(hGraphExec, hNode, params);
}

CUresult cuGraphExecEventRecordNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode, CUevent event) {
  CUgraphNodeParams params{};
  params.type = CU_GRAPH_NODE_TYPE_EVENT_RECORD;
  params.eventRecord.event = event;
  return ExecSetGeneric(hGraphExec, hNode, params);
}

CUresult cuGraphExecEventWaitNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode, CUevent event) {
  CUgraphNodeParams params{};
  params.type = CU_GRAPH_NODE_TYPE_WAIT_EVENT;
  params.eventWait.event = event;
  return ExecSetGeneric(hGraphExec, hNode, params);
}

CUresult cuGraphExecExternalSemaphoresSignalNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                          const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS* nodeParams) {
  if (CUresult rc = fgpu::sim::cuda::Ready(); rc != CUDA_SUCCESS) return rc;
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUgraphNodeParams params{};
  params.type = CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL;
  params.extSemSignal = {nodeParams->extSemArray, nodeParams->paramsArray, nodeParams->numExtSems};
  return ExecSetGeneric(hGraphExec, hNode, params);
}

CUresult cuGraphExecExternalSemaphoresWaitNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                        const CUDA_EXT_SEM_WAIT_NODE_PARAMS* nodeParams) {
  if (CUresult rc = fgpu::sim::cuda::Ready(); rc != CUDA_SUCCESS) return rc;
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUgraphNodeParams params{};
  params.type = CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT;
  params.extSemWait = {nodeParams->extSemArray, nodeParams->paramsArray, nodeParams->numExtSems};
  return ExecSetGeneric(hGraphExec, hNode, params);
}

CUresult cuGraphExecBatchMemOpNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                            const CUDA_BATCH_MEM_OP_NODE_PARAMS* nodeParams) {
  if (CUresult rc = fgpu::sim::cuda::Ready(); rc != CUDA_SUCCESS) return rc;
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUgraphNodeParams params{};
  params.type = CU_GRAPH_NODE_TYPE_BATCH_MEM_OP;
  params.memOp = {nodeParams->ctx, nodeParams->count, nodeParams->paramArray, nodeParams->flags};
  return ExecSetGeneric(hGraphExec, hNode, params);
}

// The child graph's nodes take the parameters of `childGraph`'s, which must have the same shape.
CUresult cuGraphExecChildGraphNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, CUgraph childGraph) {
  GraphExec* exec = nullptr;
  GraphNode* node = nullptr;
  Graph* child = nullptr;
  if (CUresult rc = fgpu::sim::cuda::LookupExec(hGraphExec, &exec); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = fgpu::sim::cuda::LookupNode(hNode, &node); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = fgpu::sim::cuda::LookupGraph(childGraph, &child); rc != CUDA_SUCCESS) return rc;
  auto range = std::find_if(exec->child_ranges.begin(), exec->child_ranges.end(),
                            [&](const GraphExec::ChildRange& r) { return r.serial == node->serial; });
  if (range == exec->child_ranges.end()) return CUDA_ERROR_INVALID_VALUE;  // not a child graph node of it
  std::vector<ExecStep> fresh;
  bool memory_nodes = false;
  if (!fgpu::sim::cuda::FlattenGraph(*child, &fresh, &memory_nodes) || memory_nodes) return CUDA_ERROR_INVALID_VALUE;
  const GraphNode* error_node = nullptr;
  if (CompareSteps(exec->steps, range->begin, range->end, fresh, &error_node) != CU_GRAPH_EXEC_UPDATE_SUCCESS) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (size_t i = 0; i < fresh.size(); ++i) Adopt(exec->steps[range->begin + i], fresh[i].node);
  return CUDA_SUCCESS;
}

CUresult cuGraphExecNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, CUgraphNodeParams* nodeParams) {
  if (CUresult rc = fgpu::sim::cuda::Ready(); rc != CUDA_SUCCESS) return rc;
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (nodeParams->type) {
    case CU_GRAPH_NODE_TYPE_GRAPH:
      return cuGraphExecChildGraphNodeSetParams(hGraphExec, hNode, nodeParams->graph.graph);
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      return CUDA_ERROR_NOT_SUPPORTED;  // memory nodes cannot be updated
    case CU_GRAPH_NODE_TYPE_EMPTY:
      return CUDA_ERROR_INVALID_VALUE;  // nothing to set
    default:
      return ExecSetGeneric(hGraphExec, hNode, *nodeParams);
  }
}

CUresult cuGraphNodeSetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int isEnabled) {
  ExecStep* step = nullptr;
  if (CUresult rc = FindSwitchable(hGraphExec, hNode, &step); rc != CUDA_SUCCESS) return rc;
  step->enabled = isEnabled != 0;
  return CUDA_SUCCESS;
}

CUresult cuGraphNodeGetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int* isEnabled) {
  ExecStep* step = nullptr;
  if (CUresult rc = FindSwitchable(hGraphExec, hNode, &step); rc != CUDA_SUCCESS) return rc;
  if (isEnabled == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *isEnabled = step->enabled ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo* resultInfo) {
  return Update(hGraphExec, hGraph, resultInfo);
}

CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode* hErrorNode_out,
                           CUgraphExecUpdateResult* updateResult_out) {
  if (CUresult rc = fgpu::sim::cuda::Ready(); rc != CUDA_SUCCESS) return rc;
  if (hErrorNode_out == nullptr || updateResult_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUgraphExecUpdateResultInfo info{};
  const CUresult rc = Update(hGraphExec, hGraph, &info);
  *hErrorNode_out = info.errorNode;
  *updateResult_out = info.result;
  return rc;
}

CUresult cuGraphExecGetFlags(CUgraphExec hGraphExec, cuuint64_t* flags) {
  GraphExec* exec = nullptr;
  if (CUresult rc = fgpu::sim::cuda::LookupExec(hGraphExec, &exec); rc != CUDA_SUCCESS) return rc;
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *flags = exec->flags;
  return CUDA_SUCCESS;
}

}  // extern "C"
