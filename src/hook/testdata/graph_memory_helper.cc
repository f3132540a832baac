// fgpu_hook_graph_helper: builds graphs with memory nodes through the driver API and prints,
// after each step, the call's result and the slice ledger's usage of device 0, so that
// graph_memory_test.cc can check when graph memory is charged and credited under the hook.
//
//   fgpu_hook_graph_helper [--lookup direct|procaddress] <MiB per graph>
//
// --lookup procaddress: cuGraphLaunch comes from cuGetProcAddress_v2 (what cudart does).
// One line per step: <step> <CUresult> <ledger used bytes>. FGPU_SLICE names the slice.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

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

}  // namespace

int main(int argc, char** argv) {
  g_slice = std::getenv("FGPU_SLICE");
  if (g_slice == nullptr || argc < 2) {
    std::fprintf(stderr, "usage: FGPU_SLICE=dir %s [--lookup direct|procaddress] <MiB>\n", argv[0]);
    return 2;
  }
  bool procaddress = argc >= 4 && std::string(argv[1]) == "--lookup" && std::string(argv[2]) == "procaddress";
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
