// Graph node kinds beyond kernels, allocations and child graphs: memset, memcpy, host, event
// record and wait, external semaphore signal and wait, batch memory operations; kernel node
// parameters and attributes; cuGraphNodeSetParams; conditional handles.
//
// Parameters are validated when a node is created or changed, as the driver does, and kept; a
// launch replays each node as the stream call it stands for (RunGraphStep), so a memset really
// sets memory, a copy really copies, a host node calls its function in stream order, an event
// record records the event and a wait holds the stream.
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>

#include "core/abi/cuda_api.h"
#include "sim/cuda/api_graph.h"
#include "sim/cuda/copy_3d.h"
#include "sim/cuda/graph_internal.h"
#include "sim/cuda/launch.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/runtime.h"
#include "sim/cuda/stream_gate.h"

namespace fgpu::sim::cuda {
namespace {

constexpr unsigned kMaxGraphBatchOps = 256;  // "count must be less than 256", as on a stream

// The context a memset/memcpy/memop node names (NULL: the current one).
CUresult NodeContext(CUcontext handle, Context** out) {
  if (handle == nullptr) return Runtime::Get().CurrentContext(out);
  *out = Runtime::Get().LookupContext(handle);
  return *out != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

bool DeviceRangeWritable(uint64_t address, uint64_t bytes, int device) {
  return MemoryRegistry::Get().CanAccess(address, bytes, MemoryRegistry::Access::kWrite, device);
}

// One side of a 3D copy: whether the bytes it touches are memory of its type. An array side is
// checked to be a live array here; its bounds are checked by the copy itself (copy_3d.h).
CUresult CheckCopySide(CUmemorytype type, uint64_t host, uint64_t dev, CUarray array, uint64_t x, uint64_t y,
                       uint64_t z, uint64_t pitch, uint64_t rows_per_slice, const CUDA_MEMCPY3D& p,
                       MemoryRegistry::Access access, int device) {
  if (type == CU_MEMORYTYPE_ARRAY) {
    return HandleRegistry::Get().Is(array, Kind::kArray) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  }
  if (type != CU_MEMORYTYPE_HOST && type != CU_MEMORYTYPE_DEVICE && type != CU_MEMORYTYPE_UNIFIED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const uint64_t base = type == CU_MEMORYTYPE_HOST ? host : dev;
  if (base == 0) return CUDA_ERROR_INVALID_VALUE;
  const bool one_row = p.Height == 1 && p.Depth == 1;
  if (!one_row && (pitch < x + p.WidthInBytes || (p.Depth > 1 && rows_per_slice < y + p.Height))) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  uint64_t first = 0, last_row = 0, start = 0, bytes = 0;
  if (__builtin_mul_overflow(z * rows_per_slice + y, pitch, &first) || __builtin_add_overflow(first, x, &first) ||
      __builtin_mul_overflow((p.Depth - 1) * rows_per_slice + (p.Height - 1), pitch, &last_row) ||
      __builtin_add_overflow(last_row, p.WidthInBytes, &bytes) || __builtin_add_overflow(base, first, &start)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  bool ok = false;
  if (type == CU_MEMORYTYPE_HOST) {
    ok = HostRangeUsable(reinterpret_cast<const void*>(start), bytes, access);
  } else if (type == CU_MEMORYTYPE_DEVICE || MemoryRegistry::Get().Find(start)) {
    ok = MemoryRegistry::Get().CanAccess(start, bytes, access, device);
  } else {
    ok = HostRangeUsable(reinterpret_cast<const void*>(start), bytes, access);  // unified: host memory
  }
  return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// Lock of the graph a node belongs to: node parameters change under it.
std::unique_lock<std::mutex> LockOwner(const GraphNode& node) { return std::unique_lock(node.owner->mu); }

CUresult LookupTyped(CUgraphNode handle, GraphNode::Type type, GraphNode** out) {
  if (CUresult rc = LookupNode(handle, out); rc != CUDA_SUCCESS) return rc;
  return (*out)->type == type ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CheckEvent(CUevent event) {
  return HandleRegistry::Get().Is(event, Kind::kEvent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// The memset node's parameters, validated against the device of `ctx`.
CUresult FillMemset(const CUDA_MEMSET_NODE_PARAMS& params, CUcontext ctx_handle, GraphNode* node) {
  Context* ctx = nullptr;
  if (CUresult rc = NodeContext(ctx_handle, &ctx); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = CheckMemsetParams(params, ctx->device); rc != CUDA_SUCCESS) return rc;
  node->type = GraphNode::Type::kMemset;
  node->memset = params;
  node->ctx = reinterpret_cast<CUcontext>(ctx);
  node->device = ctx->device;
  return CUDA_SUCCESS;
}

CUresult FillMemcpy(const CUDA_MEMCPY3D& params, CUcontext ctx_handle, GraphNode* node) {
  Context* ctx = nullptr;
  if (CUresult rc = NodeContext(ctx_handle, &ctx); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = CheckMemcpyParams(params, ctx->device); rc != CUDA_SUCCESS) return rc;
  node->type = GraphNode::Type::kMemcpy;
  node->memcpy = params;
  node->ctx = reinterpret_cast<CUcontext>(ctx);
  node->device = ctx->device;
  return CUDA_SUCCESS;
}

CUresult FillHost(const CUDA_HOST_NODE_PARAMS& params, GraphNode* node) {
  if (params.fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  node->type = GraphNode::Type::kHost;
  node->host = params;
  return CUDA_SUCCESS;
}

CUresult FillEvent(GraphNode::Type type, CUevent event, GraphNode* node) {
  if (CUresult rc = CheckEvent(event); rc != CUDA_SUCCESS) return rc;
  node->type = type;
  node->event = event;
  return CUDA_SUCCESS;
}

template <typename Params>
CUresult FillSignal(const Params& params, GraphNode* node) {
  if (CUresult rc = CheckSemaphores(params.extSemArray, params.paramsArray, params.numExtSems); rc != CUDA_SUCCESS) {
    return rc;
  }
  node->type = GraphNode::Type::kExtSemSignal;
  node->semaphores.assign(params.extSemArray, params.extSemArray + params.numExtSems);
  node->signal_params.assign(params.paramsArray, params.paramsArray + params.numExtSems);
  return CUDA_SUCCESS;
}

template <typename Params>
CUresult FillWait(const Params& params, GraphNode* node) {
  if (CUresult rc = CheckSemaphores(params.extSemArray, params.paramsArray, params.numExtSems); rc != CUDA_SUCCESS) {
    return rc;
  }
  node->type = GraphNode::Type::kExtSemWait;
  node->semaphores.assign(params.extSemArray, params.extSemArray + params.numExtSems);
  node->wait_params.assign(params.paramsArray, params.paramsArray + params.numExtSems);
  return CUDA_SUCCESS;
}

template <typename Params>
CUresult FillMemOps(const Params& params, GraphNode* node) {
  Context* ctx = nullptr;
  if (CUresult rc = NodeContext(params.ctx, &ctx); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = CheckBatchMemOps(params.paramArray, params.count, params.flags); rc != CUDA_SUCCESS) return rc;
  node->type = GraphNode::Type::kBatchMemOp;
  node->memops.assign(params.paramArray, params.paramArray + params.count);
  node->memop_flags = params.flags;
  node->ctx = reinterpret_cast<CUcontext>(ctx);
  node->device = ctx->device;
  return CUDA_SUCCESS;
}

// A kernel node's launch, rebuilt from new parameters (the function and the shape validated).
template <typename Params>
CUresult FillKernel(const Params& params, CUfunction func, GraphNode* node) {
  const unsigned grid[3] = {params.gridDimX, params.gridDimY, params.gridDimZ};
  const unsigned block[3] = {params.blockDimX, params.blockDimY, params.blockDimZ};
  KernelLaunch launch;
  if (CUresult rc = PrepareLaunch(func, grid, block, params.sharedMemBytes, params.kernelParams, params.extra, false,
                                  &launch);
      rc != CUDA_SUCCESS) {
    return rc;
  }
  Context* ctx = nullptr;
  (void)Runtime::Get().CurrentContext(&ctx);  // PrepareLaunch checked there is one
  node->type = GraphNode::Type::kKernel;
  node->kernel = launch;
  node->device = ctx->device;
  node->kernel_params = CUDA_KERNEL_NODE_PARAMS{func,  grid[0],  grid[1], grid[2], block[0], block[1], block[2],
                                                params.sharedMemBytes, params.kernelParams, params.extra, nullptr,
                                                reinterpret_cast<CUcontext>(ctx)};
  return CUDA_SUCCESS;
}

// Copies the parameter fields of `from` (a fresh node of the same kind) into `to`, keeping its
// identity, edges and attributes.
void TakeParams(GraphNode& to, const GraphNode& from) {
  to.kernel = from.kernel;
  to.kernel_params = from.kernel_params;
  to.device = from.device;
  to.memset = from.memset;
  to.memcpy = from.memcpy;
  to.ctx = from.ctx;
  to.host = from.host;
  to.event = from.event;
  to.semaphores = from.semaphores;
  to.signal_params = from.signal_params;
  to.wait_params = from.wait_params;
  to.memops = from.memops;
  to.memop_flags = from.memop_flags;
}

// Add a node of kind filled by `fill`.
template <typename Fill>
CUresult AddFilled(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps, size_t count, Fill fill) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  auto node = std::make_unique<GraphNode>();
  if (CUresult rc = fill(node.get()); rc != CUDA_SUCCESS) return rc;
  return AddPreparedNode(out, graph, NodeDeps{deps, nullptr, count}, std::move(node));
}

// Set the parameters of a node of `type` to those `fill` builds.
template <typename Fill>
CUresult SetFilled(CUgraphNode handle, GraphNode::Type type, Fill fill) {
  GraphNode* node = nullptr;
  if (CUresult rc = LookupTyped(handle, type, &node); rc != CUDA_SUCCESS) return rc;
  GraphNode fresh;
  if (CUresult rc = fill(&fresh); rc != CUDA_SUCCESS) return rc;
  auto lock = LockOwner(*node);
  TakeParams(*node, fresh);
  return CUDA_SUCCESS;
}

// Kernel node attributes: each stored and read back.
CUresult ReadAttribute(const LaunchAttributes& a, CUlaunchAttributeID id, CUlaunchAttributeValue* out) {
  std::memset(out, 0, sizeof(*out));
  switch (id) {
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW: out->accessPolicyWindow = a.access_policy_window; break;
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE: out->cooperative = a.cooperative; break;
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY: out->syncPolicy = a.sync_policy; break;
    case CU_LAUNCH_ATTRIBUTE_PRIORITY: out->priority = a.priority; break;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP: out->memSyncDomainMap = a.mem_sync_domain_map; break;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN: out->memSyncDomain = a.mem_sync_domain; break;
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
      out->clusterDim = {a.cluster_dim[0], a.cluster_dim[1], a.cluster_dim[2]};
      break;
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
      out->preferredClusterDim = {a.preferred_cluster_dim[0], a.preferred_cluster_dim[1], a.preferred_cluster_dim[2]};
      break;
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      out->clusterSchedulingPolicyPreference = a.cluster_scheduling;
      break;
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: out->sharedMemCarveout = a.shared_memory_carveout; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult WriteAttribute(LaunchAttributes& a, CUlaunchAttributeID id, const CUlaunchAttributeValue& v) {
  switch (id) {
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
      if (v.accessPolicyWindow.hitRatio < 0.0f || v.accessPolicyWindow.hitRatio > 1.0f) return CUDA_ERROR_INVALID_VALUE;
      a.access_policy_window = v.accessPolicyWindow;
      return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE: a.cooperative = v.cooperative != 0; return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
      if (v.syncPolicy < CU_SYNC_POLICY_AUTO || v.syncPolicy > CU_SYNC_POLICY_BLOCKING_SYNC) return CUDA_ERROR_INVALID_VALUE;
      a.sync_policy = v.syncPolicy;
      return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_PRIORITY: a.priority = v.priority; return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP: a.mem_sync_domain_map = v.memSyncDomainMap; return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      if (v.memSyncDomain > CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE) return CUDA_ERROR_INVALID_VALUE;
      a.mem_sync_domain = v.memSyncDomain;
      return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
      a.cluster_dim[0] = v.clusterDim.x;
      a.cluster_dim[1] = v.clusterDim.y;
      a.cluster_dim[2] = v.clusterDim.z;
      return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
      a.preferred_cluster_dim[0] = v.preferredClusterDim.x;
      a.preferred_cluster_dim[1] = v.preferredClusterDim.y;
      a.preferred_cluster_dim[2] = v.preferredClusterDim.z;
      return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      if (v.clusterSchedulingPolicyPreference > CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING) {
        return CUDA_ERROR_INVALID_VALUE;
      }
      a.cluster_scheduling = v.clusterSchedulingPolicyPreference;
      return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      if (v.sharedMemCarveout > 100 && v.sharedMemCarveout != static_cast<unsigned>(-1)) return CUDA_ERROR_INVALID_VALUE;
      a.shared_memory_carveout = v.sharedMemCarveout;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

// A copy node runs as an asynchronous copy does: at once, or, behind a stream memory operation's
// unsatisfied wait, when the stream gets to it (copy_3d.h validates and copies).
CUresult RunCopy(const CUDA_MEMCPY3D& params, int device, CUstream handle, bool per_thread) {
  Stream* stream = nullptr;
  if (CUresult rc = Runtime::Get().ResolveStream(handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  if (!StreamHeld(*stream)) return Copy3D(params, device);
  RunOrHold(*stream, [params, device] { (void)Copy3D(params, device); });  // a failure then goes unreported
  return CUDA_SUCCESS;
}

CUresult RunMemset(const CUDA_MEMSET_NODE_PARAMS& m, CUstream s, bool pt) {
  switch (m.elementSize) {
    case 1: {
      const auto v = static_cast<unsigned char>(m.value);
      return pt ? cuMemsetD2D8Async_ptsz(m.dst, m.pitch, v, m.width, m.height, s)
                : cuMemsetD2D8Async(m.dst, m.pitch, v, m.width, m.height, s);
    }
    case 2: {
      const auto v = static_cast<unsigned short>(m.value);
      return pt ? cuMemsetD2D16Async_ptsz(m.dst, m.pitch, v, m.width, m.height, s)
                : cuMemsetD2D16Async(m.dst, m.pitch, v, m.width, m.height, s);
    }
    default:
      return pt ? cuMemsetD2D32Async_ptsz(m.dst, m.pitch, m.value, m.width, m.height, s)
                : cuMemsetD2D32Async(m.dst, m.pitch, m.value, m.width, m.height, s);
  }
}

}  // namespace

CUresult CheckMemsetParams(const CUDA_MEMSET_NODE_PARAMS& p, int device) {
  if (p.elementSize != 1 && p.elementSize != 2 && p.elementSize != 4) return CUDA_ERROR_INVALID_VALUE;
  if (p.width == 0 || p.height == 0 || p.dst == 0 || p.dst % p.elementSize != 0) return CUDA_ERROR_INVALID_VALUE;
  uint64_t row = 0, extent = 0;
  if (__builtin_mul_overflow(p.width, p.elementSize, &row)) return CUDA_ERROR_INVALID_VALUE;
  if (p.height > 1 && (p.pitch < row || p.pitch % p.elementSize != 0)) return CUDA_ERROR_INVALID_VALUE;
  if (__builtin_mul_overflow(p.height - 1, p.pitch, &extent) || __builtin_add_overflow(extent, row, &extent)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return DeviceRangeWritable(p.dst, extent, device) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CheckMemcpyParams(const CUDA_MEMCPY3D& p, int device) {
  if (p.reserved0 != nullptr || p.reserved1 != nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (p.WidthInBytes == 0 || p.Height == 0 || p.Depth == 0) return CUDA_ERROR_INVALID_VALUE;
  if (p.srcLOD != 0 || p.dstLOD != 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult rc = CheckCopySide(p.srcMemoryType, reinterpret_cast<uint64_t>(p.srcHost), p.srcDevice, p.srcArray,
                                  p.srcXInBytes, p.srcY, p.srcZ, p.srcPitch, p.srcHeight, p,
                                  MemoryRegistry::Access::kRead, device);
      rc != CUDA_SUCCESS) {
    return rc;
  }
  return CheckCopySide(p.dstMemoryType, reinterpret_cast<uint64_t>(p.dstHost), p.dstDevice, p.dstArray, p.dstXInBytes,
                       p.dstY, p.dstZ, p.dstPitch, p.dstHeight, p, MemoryRegistry::Access::kWrite, device);
}

CUresult CheckSemaphores(const CUexternalSemaphore* semaphores, const void* params, unsigned count) {
  if (count > 0 && (semaphores == nullptr || params == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < count; ++i) {
    if (!HandleRegistry::Get().Is(semaphores[i], Kind::kExternalSemaphore)) return CUDA_ERROR_INVALID_HANDLE;
  }
  return CUDA_SUCCESS;
}

CUresult CheckBatchMemOps(const CUstreamBatchMemOpParams* ops, unsigned count, unsigned flags) {
  if (flags != 0 || count == 0 || count >= kMaxGraphBatchOps || ops == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < count; ++i) {
    int type = 0;  // a C caller may pass any int: read it as one, not as the enum
    std::memcpy(&type, &ops[i].operation, sizeof type);
    switch (type) {
      case CU_STREAM_MEM_OP_WAIT_VALUE_32:
      case CU_STREAM_MEM_OP_WAIT_VALUE_64:
      case CU_STREAM_MEM_OP_WRITE_VALUE_32:
      case CU_STREAM_MEM_OP_WRITE_VALUE_64:
      case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
      case CU_STREAM_MEM_OP_BARRIER:
        break;  // the addresses and flags are checked by the stream operation at launch
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return CUDA_SUCCESS;
}

CUresult CaptureMemset(Graph& graph, const CUDA_MEMSET_NODE_PARAMS& params, Context& ctx) {
  auto node = std::make_unique<GraphNode>();
  if (CUresult rc = FillMemset(params, reinterpret_cast<CUcontext>(&ctx), node.get()); rc != CUDA_SUCCESS) return rc;
  AppendCapturedNode(graph, std::move(node));
  return CUDA_SUCCESS;
}

CUresult CaptureMemcpy(Graph& graph, const CUDA_MEMCPY3D& params, Context& ctx) {
  auto node = std::make_unique<GraphNode>();
  if (CUresult rc = FillMemcpy(params, reinterpret_cast<CUcontext>(&ctx), node.get()); rc != CUDA_SUCCESS) return rc;
  AppendCapturedNode(graph, std::move(node));
  return CUDA_SUCCESS;
}

CUresult FillNodeFromParams(const CUgraphNodeParams& params, GraphNode* node) {
  switch (params.type) {
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      const CUDA_MEMSET_NODE_PARAMS_v2& m = params.memset;
      const CUDA_MEMSET_NODE_PARAMS v1{m.dst, m.pitch, m.value, m.elementSize, m.width, m.height};
      return FillMemset(v1, m.ctx, node);
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      if (params.memcpy.flags != 0 || params.memcpy.reserved != 0) return CUDA_ERROR_INVALID_VALUE;
      return FillMemcpy(params.memcpy.copyParams, params.memcpy.copyCtx, node);
    case CU_GRAPH_NODE_TYPE_HOST:
      return FillHost(CUDA_HOST_NODE_PARAMS{params.host.fn, params.host.userData}, node);
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      return FillEvent(GraphNode::Type::kEventRecord, params.eventRecord.event, node);
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      return FillEvent(GraphNode::Type::kEventWait, params.eventWait.event, node);
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL:
      return FillSignal(params.extSemSignal, node);
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT:
      return FillWait(params.extSemWait, node);
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
      return FillMemOps(params.memOp, node);
    case CU_GRAPH_NODE_TYPE_KERNEL: {
      const CUDA_KERNEL_NODE_PARAMS_v3& k = params.kernel;
      return FillKernel(k, k.func != nullptr ? k.func : reinterpret_cast<CUfunction>(k.kern), node);
    }
    case CU_GRAPH_NODE_TYPE_CONDITIONAL:
      // Conditions are set by device code, which simulated kernels do not run.
      return CUDA_ERROR_NOT_SUPPORTED;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

void CopyNodeParams(GraphNode& to, const GraphNode& from) { TakeParams(to, from); }

CUresult RunGraphStep(const GraphNode& node, CUstream s, bool pt) {
  switch (node.type) {
    case GraphNode::Type::kKernel:
      return ExecuteLaunch(node.kernel, s, pt);
    case GraphNode::Type::kMemset:
      return RunMemset(node.memset, s, pt);
    case GraphNode::Type::kMemcpy:
      return RunCopy(node.memcpy, node.device, s, pt);
    case GraphNode::Type::kHost:
      return pt ? cuLaunchHostFunc_ptsz(s, node.host.fn, node.host.userData)
                : cuLaunchHostFunc(s, node.host.fn, node.host.userData);
    case GraphNode::Type::kEventRecord:
      return pt ? cuEventRecord_ptsz(node.event, s) : cuEventRecord(node.event, s);
    case GraphNode::Type::kEventWait:
      return pt ? cuStreamWaitEvent_ptsz(s, node.event, 0) : cuStreamWaitEvent(s, node.event, 0);
    case GraphNode::Type::kExtSemSignal: {
      const auto n = static_cast<unsigned>(node.semaphores.size());
      return pt ? cuSignalExternalSemaphoresAsync_ptsz(node.semaphores.data(), node.signal_params.data(), n, s)
                : cuSignalExternalSemaphoresAsync(node.semaphores.data(), node.signal_params.data(), n, s);
    }
    case GraphNode::Type::kExtSemWait: {
      const auto n = static_cast<unsigned>(node.semaphores.size());
      return pt ? cuWaitExternalSemaphoresAsync_ptsz(node.semaphores.data(), node.wait_params.data(), n, s)
                : cuWaitExternalSemaphoresAsync(node.semaphores.data(), node.wait_params.data(), n, s);
    }
    case GraphNode::Type::kBatchMemOp: {
      auto ops = node.memops;  // the stream call takes a mutable array
      const auto n = static_cast<unsigned>(ops.size());
      return pt ? cuStreamBatchMemOp_v2_ptsz(s, n, ops.data(), node.memop_flags)
                : cuStreamBatchMemOp_v2(s, n, ops.data(), node.memop_flags);
    }
    case GraphNode::Type::kEmpty:
    case GraphNode::Type::kMemAlloc:  // memory is taken when the executable graph becomes resident
    case GraphNode::Type::kMemFree:
    case GraphNode::Type::kChildGraph:  // flattened away
      return CUDA_SUCCESS;
  }
  return CUDA_SUCCESS;
}

CUresult WriteLaunchAttribute(LaunchAttributes& attributes, CUlaunchAttributeID id, const CUlaunchAttributeValue& v) {
  return WriteAttribute(attributes, id, v);
}
CUresult ReadLaunchAttribute(const LaunchAttributes& attributes, CUlaunchAttributeID id, CUlaunchAttributeValue* out) {
  return ReadAttribute(attributes, id, out);
}

}  // namespace fgpu::sim::cuda

using fgpu::sim::cuda::GraphNode;
using fgpu::sim::cuda::LookupNode;

namespace {

using fgpu::sim::cuda::AddFilled;
using fgpu::sim::cuda::FillEvent;
using fgpu::sim::cuda::FillHost;
using fgpu::sim::cuda::FillKernel;
using fgpu::sim::cuda::FillMemcpy;
using fgpu::sim::cuda::FillMemOps;
using fgpu::sim::cuda::FillMemset;
using fgpu::sim::cuda::FillSignal;
using fgpu::sim::cuda::FillWait;
using fgpu::sim::cuda::LockOwner;
using fgpu::sim::cuda::LookupTyped;
using fgpu::sim::cuda::SetFilled;

// A NULL parameter block: CUDA_ERROR_INVALID_VALUE once initialised.
CUresult MissingParams() {
  const CUresult rc = fgpu::sim::cuda::Ready();
  return rc != CUDA_SUCCESS ? rc : CUDA_ERROR_INVALID_VALUE;
}

template <typename Params>
CUresult GetKernelParams(CUgraphNode handle, Params* out) {
  GraphNode* node = nullptr;
  if (CUresult rc = LookupTyped(handle, GraphNode::Type::kKernel, &node); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto lock = LockOwner(*node);
  const CUDA_KERNEL_NODE_PARAMS& k = node->kernel_params;
  out->func = k.func;
  out->gridDimX = k.gridDimX;
  out->gridDimY = k.gridDimY;
  out->gridDimZ = k.gridDimZ;
  out->blockDimX = k.blockDimX;
  out->blockDimY = k.blockDimY;
  out->blockDimZ = k.blockDimZ;
  out->sharedMemBytes = k.sharedMemBytes;
  out->kernelParams = k.kernelParams;
  out->extra = k.extra;
  return CUDA_SUCCESS;
}

template <typename Params>
CUresult SetKernelParams(CUgraphNode handle, const Params* params, CUfunction func) {
  if (CUresult rc = fgpu::sim::cuda::Ready(); rc != CUDA_SUCCESS) return rc;
  if (params == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return SetFilled(handle, GraphNode::Type::kKernel, [&](GraphNode* n) { return FillKernel(*params, func, n); });
}

}  // namespace

extern "C" {

// ---- kernel nodes
CUresult cuGraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  return GetKernelParams(hNode, nodeParams);
}
CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  CUresult rc = GetKernelParams(hNode, nodeParams);
  if (rc == CUDA_SUCCESS) {
    auto* node = reinterpret_cast<GraphNode*>(hNode);
    auto lock = LockOwner(*node);
    nodeParams->kern = nullptr;
    nodeParams->ctx = node->kernel_params.ctx;
  }
  return rc;
}
CUresult cuGraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  return SetKernelParams(hNode, nodeParams, nodeParams != nullptr ? nodeParams->func : nullptr);
}
CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  CUfunction func = nullptr;
  if (nodeParams != nullptr) {
    func = nodeParams->func != nullptr ? nodeParams->func : reinterpret_cast<CUfunction>(nodeParams->kern);
  }
  return SetKernelParams(hNode, nodeParams, func);
}

CUresult cuGraphKernelNodeGetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr, CUkernelNodeAttrValue* value_out) {
  GraphNode* node = nullptr;
  if (CUresult rc = LookupTyped(hNode, GraphNode::Type::kKernel, &node); rc != CUDA_SUCCESS) return rc;
  if (value_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto lock = LockOwner(*node);
  return fgpu::sim::cuda::ReadLaunchAttribute(node->attributes, attr, value_out);
}
CUresult cuGraphKernelNodeSetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr, const CUkernelNodeAttrValue* value) {
  GraphNode* node = nullptr;
  if (CUresult rc = LookupTyped(hNode, GraphNode::Type::kKernel, &node); rc != CUDA_SUCCESS) return rc;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto lock = LockOwner(*node);
  return fgpu::sim::cuda::WriteLaunchAttribute(node->attributes, attr, *value);
}
CUresult cuGraphKernelNodeCopyAttributes(CUgraphNode dst, CUgraphNode src) {
  GraphNode* to = nullptr;
  GraphNode* from = nullptr;
  if (CUresult rc = LookupTyped(dst, GraphNode::Type::kKernel, &to); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = LookupTyped(src, GraphNode::Type::kKernel, &from); rc != CUDA_SUCCESS) return rc;
  fgpu::sim::cuda::LaunchAttributes copy;
  {
    auto lock = LockOwner(*from);
    copy = from->attributes;
  }
  auto lock = LockOwner(*to);
  to->attributes = copy;
  return CUDA_SUCCESS;
}

// ---- memset nodes
CUresult cuGraphAddMemsetNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                              size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS* memsetParams, CUcontext ctx) {
  if (memsetParams == nullptr) return MissingParams();
  return AddFilled(phGraphNode, hGraph, dependencies, numDependencies,
                   [&](GraphNode* n) { return FillMemset(*memsetParams, ctx, n); });
}
CUresult cuGraphMemsetNodeGetParams(CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS* nodeParams) {
  GraphNode* node = nullptr;
  if (CUresult rc = LookupTyped(hNode, GraphNode::Type::kMemset, &node); rc != CUDA_SUCCESS) return rc;
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto lock = LockOwner(*node);
  *nodeParams = node->memset;
  return CUDA_SUCCESS;
}
CUresult cuGraphMemsetNodeSetParams(CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS* nodeParams) {
  if (nodeParams == nullptr) return MissingParams();
  GraphNode* node = nullptr;
  if (CUresult rc = LookupTyped(hNode, GraphNode::Type::kMemset, &node); rc != CUDA_SUCCESS) return rc;
  return SetFilled(hNode, GraphNode::Type::kMemset, [&](GraphNode* n) { return FillMemset(*nodeParams, node->ctx, n); });
}

// ---- memcpy nodes
CUresult cuGraphAddMemcpyNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                              size_t numDependencies, const CUDA_MEMCPY3D* copyParams, CUcontext ctx) {
  if (copyParams == nullptr) return MissingParams();
  return AddFilled(phGraphNode, hGraph, dependencies, numDependencies,
                   [&](GraphNode* n) { return FillMemcpy(*copyParams, ctx, n); });
}
CUresult cuGraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D* nodeParams) {
  GraphNode* node = nullptr;
  if (CUresult rc = LookupTyped(hNode, GraphNode::Type::kMemcpy, &node); rc != CUDA_SUCCESS) return rc;
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto lock = LockOwner(*node);
  *nodeParams = node->memcpy;
  return CUDA_SUCCESS;
}
CUresult cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D* nodeParams) {
  if (nodeParams == nullptr) return MissingParams();
  GraphNode* node = nullptr;
  if (CUresult rc = LookupTyped(hNode, GraphNode::Type::kMemcpy, &node); rc != CUDA_SUCCESS) return rc;
  return SetFilled(hNode, GraphNode::Type::kMemcpy, [&](GraphNode* n) { return FillMemcpy(*nodeParams, node->ctx, n); });
}

// ---- host nodes
CUresult cuGraphAddHostNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                            size_t numDependencies, const CUDA_HOST_NODE_PARAMS* nodeParams) {
  if (nodeParams == nullptr) return MissingParams();
  return AddFilled(phGraphNode, hGraph, dependencies, numDependencies,
                   [&](GraphNode* n) { return FillHost(*nodeParams, n); });
}
CUresult cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS* nodeParams) {
  GraphNode* node = nullptr;
  if (CUresult rc = LookupTyped(hNode, GraphNode::Type::kHost, &node); rc != CUDA_SUCCESS) return rc;
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto lock = LockOwner(*node);
  *nodeParams = node->host;
  return CUDA_SUCCESS;
}
CUresult cuGraphHostNodeSetParams(CUgraphNode hNode, const CUDA_HOST_NODE_PARAMS* nodeParams) {
  if (nodeParams == nullptr) return MissingParams();
  return SetFilled(hNode, GraphNode::Type::kHost, [&](GraphNode* n) { return FillHost(*nodeParams, n); });
}

// ---- event nodes
CUresult cuGraphAddEventRecordNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                   size_t numDependencies, CUevent event) {
  return AddFilled(phGraphNode, hGraph, dependencies, numDependencies,
                   [&](GraphNode* n) { return FillEvent(GraphNode::Type::kEventRecord, event, n); });
}
CUresult cuGraphAddEventWaitNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                 size_t numDependencies, CUevent event) {
  return AddFilled(phGraphNode, hGraph, dependencies, numDependencies,
                   [&](GraphNode* n) { return FillEvent(GraphNode::Type::kEventWait, event, n); });
}
CUresult cuGraphEventRecordNodeGetEvent(CUgraphNode hNode, CUevent* event_out) {
  GraphNode* node = nullptr;
  if (CUresult rc = LookupTyped(hNode, GraphNode::Type::kEventRecord, &node); rc != CUDA_SUCCESS) return rc;
  if (event_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto lock = LockOwner(*node);
  *event_out = node->event;
  return CUDA_SUCCESS;
}
CUresult cuGraphEventWaitNodeGetEvent(CUgraphNode hNode, CUevent* event_out) {
  GraphNode* node = nullptr;
  if (CUresult rc = LookupTyped(hNode, GraphNode::Type::kEventWait, &node); rc != CUDA_SUCCESS) return rc;
  if (event_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto lock = LockOwner(*node);
  *event_out = node->event;
  return CUDA_SUCCESS;
}
CUresult cuGraphEventRecordNodeSetEvent(CUgraphNode hNode, CUevent event) {
  return SetFilled(hNode, GraphNode::Type::kEventRecord,
                   [&](GraphNode* n) { return FillEvent(GraphNode::Type::kEventRecord, event, n); });
}
CUresult cuGraphEventWaitNodeSetEvent(CUgraphNode hNode, CUevent event) {
  return SetFilled(hNode, GraphNode::Type::kEventWait,
                   [&](GraphNode* n) { return FillEvent(GraphNode::Type::kEventWait, event, n); });
}

// ---- external semaphore nodes
CUresult cuGraphAddExternalSemaphoresSignalNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                const CUgraphNode* dependencies, size_t numDependencies,
                                                const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS* nodeParams) {
  if (nodeParams == nullptr) return MissingParams();
  return AddFilled(phGraphNode, hGraph, dependencies, numDependencies,
                   [&](GraphNode* n) { return FillSignal(*nodeParams, n); });
}
CUresult cuGraphAddExternalSemaphoresWaitNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                              const CUgraphNode* dependencies, size_t numDependencies,
                                              const CUDA_EXT_SEM_WAIT_NODE_PARAMS* nodeParams) {
  if (nodeParams == nullptr) return MissingParams();
  return AddFilled(phGraphNode, hGraph, dependencies, numDependencies,
                   [&](GraphNode* n) { return FillWait(*nodeParams, n); });
}
// The arrays returned are the node's own, valid while it lives and keeps these parameters.
CUresult cuGraphExternalSemaphoresSignalNodeGetParams(CUgraphNode hNode, CUDA_EXT_SEM_SIGNAL_NODE_PARAMS* params_out) {
  GraphNode* node = nullptr;
  if (CUresult rc = LookupTyped(hNode, GraphNode::Type::kExtSemSignal, &node); rc != CUDA_SUCCESS) return rc;
  if (params_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto lock = LockOwner(*node);
  params_out->extSemArray = node->semaphores.data();
  params_out->paramsArray = node->signal_params.data();
  params_out->numExtSems = static_cast<unsigned>(node->semaphores.size());
  return CUDA_SUCCESS;
}
CUresult cuGraphExternalSemaphoresWaitNodeGetParams(CUgraphNode hNode, CUDA_EXT_SEM_WAIT_NODE_PARAMS* params_out) {
  GraphNode* node = nullptr;
  if (CUresult rc = LookupTyped(hNode, GraphNode::Type::kExtSemWait, &node); rc != CUDA_SUCCESS) return rc;
  if (params_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto lock = LockOwner(*node);
  params_out->extSemArray = node->semaphores.data();
  params_out->paramsArray = node->wait_params.data();
  params_out->numExtSems = static_cast<unsigned>(node->semaphores.size());
  return CUDA_SUCCESS;
}
CUresult cuGraphExternalSemaphoresSignalNodeSetParams(CUgraphNode hNode,
                                                      const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS* nodeParams) {
  if (nodeParams == nullptr) return MissingParams();
  return SetFilled(hNode, GraphNode::Type::kExtSemSignal, [&](GraphNode* n) { return FillSignal(*nodeParams, n); });
}
CUresult cuGraphExternalSemaphoresWaitNodeSetParams(CUgraphNode hNode, const CUDA_EXT_SEM_WAIT_NODE_PARAMS* nodeParams) {
  if (nodeParams == nullptr) return MissingParams();
  return SetFilled(hNode, GraphNode::Type::kExtSemWait, [&](GraphNode* n) { return FillWait(*nodeParams, n); });
}

// ---- batch memory operation nodes
CUresult cuGraphAddBatchMemOpNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                  size_t numDependencies, const CUDA_BATCH_MEM_OP_NODE_PARAMS* nodeParams) {
  if (nodeParams == nullptr) return MissingParams();
  return AddFilled(phGraphNode, hGraph, dependencies, numDependencies,
                   [&](GraphNode* n) { return FillMemOps(*nodeParams, n); });
}
CUresult cuGraphBatchMemOpNodeGetParams(CUgraphNode hNode, CUDA_BATCH_MEM_OP_NODE_PARAMS* nodeParams_out) {
  GraphNode* node = nullptr;
  if (CUresult rc = LookupTyped(hNode, GraphNode::Type::kBatchMemOp, &node); rc != CUDA_SUCCESS) return rc;
  if (nodeParams_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto lock = LockOwner(*node);
  nodeParams_out->ctx = node->ctx;
  nodeParams_out->count = static_cast<unsigned>(node->memops.size());
  nodeParams_out->paramArray = node->memops.data();  // the node's own copy
  nodeParams_out->flags = node->memop_flags;
  return CUDA_SUCCESS;
}
CUresult cuGraphBatchMemOpNodeSetParams(CUgraphNode hNode, const CUDA_BATCH_MEM_OP_NODE_PARAMS* nodeParams) {
  if (nodeParams == nullptr) return MissingParams();
  return SetFilled(hNode, GraphNode::Type::kBatchMemOp, [&](GraphNode* n) { return FillMemOps(*nodeParams, n); });
}

// ---- any node
CUresult cuGraphNodeSetParams(CUgraphNode hNode, CUgraphNodeParams* nodeParams) {
  GraphNode* node = nullptr;
  if (CUresult rc = LookupNode(hNode, &node); rc != CUDA_SUCCESS) return rc;
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (nodeParams->type) {
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
    case CU_GRAPH_NODE_TYPE_GRAPH:
    case CU_GRAPH_NODE_TYPE_EMPTY:
      return CUDA_ERROR_NOT_SUPPORTED;  // "not all node types may be updated"
    default:
      break;
  }
  GraphNode fresh;
  if (CUresult rc = fgpu::sim::cuda::FillNodeFromParams(*nodeParams, &fresh); rc != CUDA_SUCCESS) return rc;
  auto lock = LockOwner(*node);
  if (fresh.type != node->type) return CUDA_ERROR_INVALID_VALUE;  // a node keeps its kind
  fgpu::sim::cuda::CopyNodeParams(*node, fresh);
  return CUDA_SUCCESS;
}

// Conditional handles are kept (their default value and flags), but no conditional node can be
// made: conditions are set by device code, which simulated kernels do not run.
CUresult cuGraphConditionalHandleCreate(CUgraphConditionalHandle* pHandle_out, CUgraph hGraph, CUcontext ctx,
                                        unsigned int defaultLaunchValue, unsigned int flags) {
  fgpu::sim::cuda::Graph* graph = nullptr;
  if (CUresult rc = fgpu::sim::cuda::LookupGraph(hGraph, &graph); rc != CUDA_SUCCESS) return rc;
  if (pHandle_out == nullptr || (flags & ~static_cast<unsigned>(CU_GRAPH_COND_ASSIGN_DEFAULT)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  fgpu::sim::cuda::Context* context = nullptr;
  if (CUresult rc = fgpu::sim::cuda::Runtime::Get().ContextOrCurrent(ctx, &context); rc != CUDA_SUCCESS) return rc;
  static std::atomic<cuuint64_t> next_handle{1};
  (void)defaultLaunchValue;  // nothing reads a condition without conditional nodes
  *pHandle_out = next_handle.fetch_add(1);
  return CUDA_SUCCESS;
}

}  // extern "C"
