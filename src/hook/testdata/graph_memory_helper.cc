// fgpu_hook_graph_helper: builds graphs with memory nodes through the driver API and prints,
// after each step, the call's result and the slice ledger's usage of device 0, so that
// graph_memory_test.cc can check when graph memory is charged and credited under the hook.
//
//   fgpu_hook_graph_helper [--lookup direct|procaddress] [--via HOW] <MiB per graph>
//
// --lookup procaddress: cuGraphLaunch comes from cuGetProcAddress_v2 (what cudart does).
// --via: how the allocation nodes are made. `explicit` (the default): cuGraphAddMemAllocNode,
// the full lifecycle (launch, upload, trim, ...). The others run one shorter sequence (Shared)
// on graphs A and B made by: `addnode` cuGraphAddNode (A) and cuGraphAddNode_v2 (B); `child`
// a child graph moved into its parent with cuGraphAddNode; `capture` stream capture of
// cuMemAllocAsync (A) and cuMemAllocFromPoolAsync_ptsz (B); `clone` cuGraphClone (refused for
// graphs with memory nodes, so A and B are moved-child graphs of clones of kernel-free graphs).
// One line per step: <step> <CUresult> <ledger used bytes>. FGPU_SLICE names the slice.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/abi/cuda_api.h"
#include "slice/slice.h"

namespace {

constexpr unsigned long long kMiB = 1ull << 20;

const char* g_slice = nullptr;
CUresult (*g_launch)(CUgraphExec, CUstream) = &cuGraphLaunch;

unsigned long long LedgerUsed() {
  fgpu::Result<fgpu::slice::SliceAdmin> admin = fgpu::slice::SliceAdmin::Open(g_slice);
  return admin.ok() ? admin->Usage().used.at(0) : ~0ull;
}

void Step(const char* name, CUresult rc) { std::printf("%s %d %llu\n", name, static_cast<int>(rc), LedgerUsed()); }

// A graph with one allocation node of `bytes` on device 0 and, if `free_inside`, its free node.
CUgraph MemoryGraph(unsigned long long bytes, bool free_inside) {
  CUgraph graph = nullptr;
  if (cuGraphCreate(&graph, 0) != CUDA_SUCCESS) return nullptr;
  CUDA_MEM_ALLOC_NODE_PARAMS params;
  std::memset(&params, 0, sizeof(params));
  params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  params.poolProps.location.id = 0;
  params.bytesize = bytes;
  CUgraphNode alloc = nullptr, free_node = nullptr;
  if (cuGraphAddMemAllocNode(&alloc, graph, nullptr, 0, &params) != CUDA_SUCCESS) return nullptr;
  if (free_inside && cuGraphAddMemFreeNode(&free_node, graph, &alloc, 1, params.dptr) != CUDA_SUCCESS) {
    return nullptr;
  }
  return graph;
}

CUDA_MEM_ALLOC_NODE_PARAMS AllocParams(unsigned long long bytes) {
  CUDA_MEM_ALLOC_NODE_PARAMS params;
  std::memset(&params, 0, sizeof(params));
  params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  params.poolProps.location.id = 0;
  params.bytesize = bytes;
  return params;
}

CUgraphNodeParams NodeParams(CUgraphNodeType type) {
  CUgraphNodeParams params;
  std::memset(&params, 0, sizeof(params));
  params.type = type;
  return params;
}

// cuGraphAddNode (or _v2): an empty root, the allocation, its free.
CUgraph AddNodeGraph(unsigned long long bytes, bool v2) {
  CUgraph graph = nullptr;
  if (cuGraphCreate(&graph, 0) != CUDA_SUCCESS) return nullptr;
  CUgraphNode empty = nullptr, alloc = nullptr, free_node = nullptr;
  CUgraphNodeParams params = NodeParams(CU_GRAPH_NODE_TYPE_EMPTY);
  if (cuGraphAddNode(&empty, graph, nullptr, 0, &params) != CUDA_SUCCESS) return nullptr;
  params = NodeParams(CU_GRAPH_NODE_TYPE_MEM_ALLOC);
  const CUDA_MEM_ALLOC_NODE_PARAMS alloc_params = AllocParams(bytes);
  std::memcpy(&params.alloc, &alloc_params, sizeof(alloc_params));
  const CUresult rc = v2 ? cuGraphAddNode_v2(&alloc, graph, &empty, nullptr, 1, &params)
                         : cuGraphAddNode(&alloc, graph, &empty, 1, &params);
  if (rc != CUDA_SUCCESS) return nullptr;
  const CUdeviceptr dptr = params.alloc.dptr;
  params = NodeParams(CU_GRAPH_NODE_TYPE_MEM_FREE);
  params.free.dptr = dptr;
  if (cuGraphAddNode(&free_node, graph, &alloc, 1, &params) != CUDA_SUCCESS) return nullptr;
  return graph;
}

// `child` moved into a new parent (after an empty node) with cuGraphAddNode.
CUgraph ParentOf(CUgraph child) {
  CUgraph parent = nullptr;
  CUgraphNode empty = nullptr, node = nullptr;
  if (child == nullptr || cuGraphCreate(&parent, 0) != CUDA_SUCCESS ||
      cuGraphAddEmptyNode(&empty, parent, nullptr, 0) != CUDA_SUCCESS) {
    return nullptr;
  }
  CUgraphNodeParams params = NodeParams(CU_GRAPH_NODE_TYPE_GRAPH);
  params.graph.graph = child;
  params.graph.ownership = CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE;
  return cuGraphAddNode(&node, parent, &empty, 1, &params) == CUDA_SUCCESS ? parent : nullptr;
}

// Stream capture: the allocation (cuMemAllocAsync, or cuMemAllocFromPoolAsync_ptsz from the
// device's pool) and its free. Prints the capture's own steps (`name`_alloc, `name`_free).
CUgraph CapturedGraph(const char* name, unsigned long long bytes, bool from_pool, CUstream stream) {
  CUmemoryPool pool = nullptr;
  if (cuDeviceGetMemPool(&pool, 0) != CUDA_SUCCESS) return nullptr;
  if (cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL) != CUDA_SUCCESS) return nullptr;
  CUdeviceptr dptr = 0;
  const CUresult alloc_rc = from_pool ? cuMemAllocFromPoolAsync_ptsz(&dptr, bytes, pool, stream)
                                      : cuMemAllocAsync(&dptr, bytes, stream);
  Step((std::string(name) + "_alloc").c_str(), alloc_rc);
  const CUresult free_rc = from_pool ? cuMemFreeAsync_ptsz(dptr, stream) : cuMemFreeAsync(dptr, stream);
  Step((std::string(name) + "_free").c_str(), free_rc);
  CUgraph graph = nullptr;
  if (cuStreamEndCapture(stream, &graph) != CUDA_SUCCESS) return nullptr;
  cuuint64_t reserved = ~0ull;
  cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved);
  std::printf("%s_pool_reserved 0 %llu\n", name, static_cast<unsigned long long>(reserved));
  return alloc_rc == CUDA_SUCCESS && free_rc == CUDA_SUCCESS ? graph : nullptr;
}

void DriverReserved(const char* name) {
  cuuint64_t reserved = ~0ull;
  cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved);
  std::printf("%s 0 %llu\n", name, static_cast<unsigned long long>(reserved));
}

// The sequence every --via but `explicit` runs: A charged on its first launch, B (made only
// after A is resident) refused without reaching the driver, destroys credited.
int Shared(const std::string& via, unsigned long long bytes) {
  CUstream stream = nullptr;
  if (cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) return 1;
  auto make = [&](const char* name, bool second) -> CUgraph {
    if (via == "addnode") return AddNodeGraph(bytes, second);
    if (via == "child") return ParentOf(MemoryGraph(bytes, true));
    if (via == "capture") return CapturedGraph(name, bytes, second, stream);
    if (via == "clone") {
      // The driver clones no graph with memory nodes; a clone can still get them moved in.
      CUgraph empty = nullptr, clone = nullptr, memory = MemoryGraph(bytes, true);
      CUgraphNode node = nullptr;
      if (cuGraphCreate(&empty, 0) != CUDA_SUCCESS || cuGraphAddEmptyNode(&node, empty, nullptr, 0) != CUDA_SUCCESS) {
        return nullptr;
      }
      Step((std::string(name) + "_clone_memory_graph").c_str(), cuGraphClone(&clone, memory));
      if (cuGraphClone(&clone, empty) != CUDA_SUCCESS) return nullptr;
      CUgraphNodeParams params = NodeParams(CU_GRAPH_NODE_TYPE_GRAPH);
      params.graph.graph = memory;
      params.graph.ownership = CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE;
      return cuGraphAddNode(&node, clone, nullptr, 0, &params) == CUDA_SUCCESS ? clone : nullptr;
    }
    return nullptr;
  };
  CUgraph a = make("a", false);
  Step("build_a", a != nullptr ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN);
  if (a == nullptr) return 1;
  CUgraphExec exec_a = nullptr, exec_b = nullptr;
  Step("instantiate_a", cuGraphInstantiateWithFlags(&exec_a, a, 0));
  Step("launch_a", g_launch(exec_a, stream));
  Step("relaunch_a", g_launch(exec_a, stream));
  CUgraph b = make("b", true);
  Step("build_b", b != nullptr ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN);
  if (b == nullptr) return 1;
  Step("instantiate_b", cuGraphInstantiate_v2(&exec_b, b, nullptr, nullptr, 0));
  Step("launch_b", g_launch(exec_b, stream));
  DriverReserved("driver_reserved_after_refusal");  // what the driver took: A's only
  Step("upload_b", cuGraphUpload(exec_b, stream));
  Step("destroy_a", cuGraphExecDestroy(exec_a));
  Step("launch_b_after_destroy", g_launch(exec_b, stream));
  Step("synchronize", cuStreamSynchronize(stream));
  Step("destroy_b", cuGraphExecDestroy(exec_b));
  DriverReserved("driver_reserved_at_end");
  cuGraphDestroy(a);
  cuGraphDestroy(b);
  cuStreamDestroy_v2(stream);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  g_slice = std::getenv("FGPU_SLICE");
  if (g_slice == nullptr || argc < 2) {
    std::fprintf(stderr, "usage: FGPU_SLICE=dir %s [--lookup direct|procaddress] [--via HOW] <MiB>\n", argv[0]);
    return 2;
  }
  bool procaddress = false;
  std::string via = "explicit";
  for (int i = 1; i + 1 < argc - 1; i += 2) {
    if (std::string(argv[i]) == "--lookup") procaddress = std::string(argv[i + 1]) == "procaddress";
    if (std::string(argv[i]) == "--via") via = argv[i + 1];
  }
  const unsigned long long bytes = std::strtoull(argv[argc - 1], nullptr, 10) * kMiB;
  CUdevice device = 0;
  CUcontext ctx = nullptr;
  if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&device, 0) != CUDA_SUCCESS ||
      cuCtxCreate_v2(&ctx, 0, device) != CUDA_SUCCESS) {
    std::fprintf(stderr, "no device\n");
    return 1;
  }
  if (procaddress) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult status{};
    if (cuGetProcAddress_v2("cuGraphLaunch", &fn, 12000, 0, &status) != CUDA_SUCCESS || fn == nullptr) return 1;
    g_launch = reinterpret_cast<CUresult (*)(CUgraphExec, CUstream)>(fn);
  }
  Step("context", CUDA_SUCCESS);
  if (via != "explicit") {
    const int rc = Shared(via, bytes);
    Step("destroy_context", cuCtxDestroy_v2(ctx));
    return rc;
  }

  // A: allocates and frees inside. Charged on its first launch only.
  CUgraph a = MemoryGraph(bytes, true);
  CUgraphExec exec_a = nullptr;
  Step("instantiate_a", cuGraphInstantiateWithFlags(&exec_a, a, 0));
  Step("launch_a", g_launch(exec_a, nullptr));
  Step("relaunch_a", g_launch(exec_a, nullptr));
  // B: the same size again; does not fit beside A.
  CUgraph b = MemoryGraph(bytes, true);
  CUgraphExec exec_b = nullptr;
  Step("instantiate_b", cuGraphInstantiate_v2(&exec_b, b, nullptr, nullptr, 0));
  Step("launch_b", g_launch(exec_b, nullptr));
  Step("upload_b", cuGraphUpload(exec_b, nullptr));
  CUgraphExec exec_b_upload = nullptr;
  CUDA_GRAPH_INSTANTIATE_PARAMS params;
  std::memset(&params, 0, sizeof(params));
  params.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
  Step("instantiate_upload_b", cuGraphInstantiateWithParams(&exec_b_upload, b, &params));
  Step("destroy_a", cuGraphExecDestroy(exec_a));
  Step("launch_b_ptsz", cuGraphLaunch_ptsz(exec_b, nullptr));
  Step("synchronize", cuCtxSynchronize());
  Step("trim", cuDeviceGraphMemTrim(device));
  cuuint64_t reserved = ~0ull;
  Step("driver_reserved", cuDeviceGetGraphMemAttribute(device, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved));
  std::printf("driver_reserved_bytes 0 %llu\n", static_cast<unsigned long long>(reserved));
  Step("relaunch_b", g_launch(exec_b, nullptr));
  Step("destroy_b", cuGraphExecDestroy(exec_b));
  // C: allocates without freeing. Trim cannot give it back; only its destruction does.
  CUgraph c = MemoryGraph(bytes, false);
  CUgraphExec exec_c = nullptr;
  Step("instantiate_c", cuGraphInstantiate(&exec_c, c, nullptr, nullptr, 0));
  Step("upload_c", cuGraphUpload_ptsz(exec_c, nullptr));
  Step("synchronize_c", cuCtxSynchronize());
  Step("trim_c", cuDeviceGraphMemTrim(device));
  Step("destroy_graph_c", cuGraphDestroy(c));
  Step("destroy_c", cuGraphExecDestroy(exec_c));
  cuGraphDestroy(a);
  cuGraphDestroy(b);
  Step("destroy_context", cuCtxDestroy_v2(ctx));
  return 0;
}
