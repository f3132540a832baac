// Process-local driver objects of the simulated libcuda, and the registry that
// validates every handle an application hands back to us.
//
// Handles given to applications (CUcontext, CUstream, CUevent, CUmodule, ...) are
// pointers to these objects, but no API dereferences a handle before the registry
// confirms it is live and of the expected kind: a stale, foreign or garbage handle
// gets CUDA_ERROR_INVALID_HANDLE / INVALID_CONTEXT / INVALID_VALUE, never a crash.
//
// Thread-safety: the registry is internally locked. Object fields that change after
// creation are atomics or guarded by the owning context's mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/abi/cuda_types.h"
#include "sim/cuda/ptx_image.h"

namespace fgpu::sim::cuda {

enum class Kind : uint8_t {
  kContext, kStream, kEvent, kModule, kFunction, kGraph, kGraphNode, kGraphExec, kMemPool, kArray,
  kMipmappedArray, kLinkState, kExternalMemory, kExternalSemaphore, kUserObject,
};

struct Context;
struct Graph;
struct GraphNode;
struct GraphExec;

// Launch attributes a stream or a kernel node keeps (cuStreamSetAttribute,
// cuGraphKernelNodeSetAttribute): stored, read back and copied; the timeline ignores them.
struct LaunchAttributes {
  CUaccessPolicyWindow access_policy_window{};
  CUsynchronizationPolicy sync_policy = CU_SYNC_POLICY_AUTO;
  int priority = 0;
  CUlaunchMemSyncDomainMap mem_sync_domain_map{0, 1};
  CUlaunchMemSyncDomain mem_sync_domain = CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT;
  // Kernel nodes only.
  int cooperative = 0;
  unsigned cluster_dim[3] = {0, 0, 0};
  unsigned preferred_cluster_dim[3] = {0, 0, 0};
  CUclusterSchedulingPolicy cluster_scheduling = CU_CLUSTER_SCHEDULING_POLICY_DEFAULT;
  unsigned shared_memory_carveout = 0;
};

// Source of stream ids (cuStreamGetId): unique for the life of the process, never reused.
inline std::atomic<unsigned long long> g_next_stream_id{1};

struct Stream {
  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();  // drops what a stream memory operation still holds on it (stream_gate.h)
  // Every stream takes its id when made, the legacy and per-thread default streams included.
  const unsigned long long id = g_next_stream_id.fetch_add(1, std::memory_order_relaxed);
  Context* ctx = nullptr;
  unsigned flags = 0;  // CU_STREAM_NON_BLOCKING or default
  int priority = 0;
  bool is_default = false;  // the legacy or a per-thread default stream
  // End (monotonic ns) of the last work queued on this stream.
  std::atomic<uint64_t> tail_ns{0};
  // Non-null while the stream is being captured into a graph.
  std::atomic<Graph*> capture{nullptr};
  CUstreamCaptureMode capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  unsigned long long capture_id = 0;   // of the capture in progress (cuStreamGetCaptureInfo)
  bool capture_owns_graph = true;      // false: cuStreamBeginCaptureToGraph, the graph is the caller's
  std::mutex attributes_mu;
  LaunchAttributes attributes;  // cuStreamSetAttribute (under attributes_mu)
  // Host functions queued on this stream that have not run yet: synchronisation waits for them.
  std::atomic<int> pending_host_calls{0};
  // Held by a stream memory operation (a wait not yet satisfied, or a write not yet due): later
  // work on the stream queues behind it (stream_gate.h). `used_memops`: it ever was.
  std::atomic<bool> held{false};
  std::atomic<bool> used_memops{false};
};

struct Context {
  int device = 0;
  unsigned flags = 0;
  bool primary = false;
  unsigned long long id = 0;
  uint64_t charged_overhead = 0;  // device memory charged at creation
  std::unique_ptr<Stream> legacy_stream;
  // Latest end of work on any blocking stream: the legacy stream waits for it.
  std::atomic<uint64_t> blocking_tail_ns{0};
  // Latest end of any work in the context: cuCtxSynchronize waits for it.
  std::atomic<uint64_t> tail_ns{0};
  // cuCtxWaitEvent: no work queued in the context from now on starts before this.
  std::atomic<uint64_t> wait_floor_ns{0};
  std::mutex mu;  // guards limits and preferences below
  size_t stack_limit = 1024;
  size_t malloc_heap_limit = 8u << 20;
  size_t printf_fifo_limit = 1u << 20;
  CUfunc_cache cache_config = CU_FUNC_CACHE_PREFER_NONE;  // cuCtxSetCacheConfig: a preference kept
  std::vector<unsigned long long> peers;  // ids of the contexts it has peer access to (under mu)
  int attach_count = 0;  // cuCtxAttach minus cuCtxDetach (under mu)
};

struct Event {
  Context* ctx = nullptr;
  unsigned flags = 0;
  std::atomic<bool> recorded{false};
  std::atomic<uint64_t> time_ns{0};  // when the work captured by the last record completes
  // An interprocess event with a handle (api_ipc.cc): its time on a page shared with the
  // processes that opened it (0: never recorded), which records write and queries read.
  std::atomic<uint64_t>* shared = nullptr;
  int shared_fd = -1;  // the exporter's memfd of that page
};
// Unmaps an event's shared page (and closes its descriptor); api_ipc.cc.
void ReleaseSharedEventPage(Event& event);

struct Function;
struct Module {
  Context* ctx = nullptr;  // nullptr for a library (cuLibraryLoadData), which no context owns
  bool library = false;
  // Entry names parsed from PTX. Empty with `opaque` set: a cubin/fatbin image we cannot
  // parse, so any name is accepted.
  std::vector<std::string> entries;
  bool opaque = false;
  PtxImage ptx;  // what a PTX image declares (empty for a binary one)
  // Where ptx.variables live once placed (module_globals.h): one address per variable, in order.
  std::vector<uint64_t> global_addresses;
  bool globals_placed = false;
  std::mutex mu;
  std::unordered_map<std::string, std::unique_ptr<Function>> functions;
};

struct Function {
  Module* module = nullptr;
  std::string name;
  uint64_t wave_ns = 0;        // device time of one wave (a grid of <= sm_count blocks)
  bool duration_from_param = false;  // fgpu_spin: first parameter (u64 ns) is the wave time
  int max_dynamic_shared = 48 * 1024;
  // What the image declares (the occupancy calculators use them); a binary image we cannot
  // read declares the defaults.
  int registers = 16;
  int static_shared = 0;
  CUfunc_cache cache_config = CU_FUNC_CACHE_PREFER_NONE;
  // Legacy launch configuration (cuFuncSetBlockShape / cuFuncSetSharedSize / cuParamSet*): what
  // cuLaunch and cuLaunchGrid[Async] launch with (api_launch.cc). Like the driver's, this state is
  // the caller's to serialise: the legacy calls are not safe on one function from many threads.
  int block_shape[3] = {0, 0, 0};
  unsigned shared_size = 0;
  std::vector<unsigned char> legacy_params;  // written by cuParamSet{i,f,v}, grown as they reach
  unsigned legacy_param_size = 0;            // cuParamSetSize: the bytes a legacy launch passes
};

// Kernel launch as recorded in a graph or executed on a stream.
struct KernelLaunch {
  Function* function = nullptr;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned shared_bytes = 0;
  uint64_t param_ns = 0;  // the fgpu_spin duration parameter, copied at launch/capture
};

struct GraphNode {
  enum class Type : uint8_t {
    kKernel, kMemAlloc, kMemFree, kEmpty, kChildGraph, kMemset, kMemcpy, kHost, kEventRecord, kEventWait,
    kExtSemSignal, kExtSemWait, kBatchMemOp,
  } type = Type::kEmpty;
  // Process-unique, never reused: how an executable graph names the node it was made from, and
  // how a clone names its original (cuGraphNodeFindInClone).
  uint64_t serial = 0;
  uint64_t clone_of = 0;     // serial of the node this one is a copy of (0: none)
  Graph* owner = nullptr;
  // Incoming edges: the nodes this one depends on, with each edge's data.
  std::vector<GraphNode*> deps;
  std::vector<CUgraphEdgeData> dep_edges;
  KernelLaunch kernel;
  CUDA_KERNEL_NODE_PARAMS kernel_params{};  // kKernel: as given (cuGraphKernelNodeGetParams)
  LaunchAttributes attributes;               // kKernel
  int device = 0;
  uint64_t bytes = 0;         // kMemAlloc: requested size
  CUdeviceptr dptr = 0;       // kMemAlloc: address handed out; kMemFree: address freed
  CUmemPoolProps pool_props{};             // kMemAlloc: as created (cuGraphMemAllocNodeGetParams)
  std::vector<CUmemAccessDesc> access;     // kMemAlloc: peer access descriptors
  Graph* child = nullptr;     // kChildGraph: the embedded graph, owned by this node
  CUDA_MEMSET_NODE_PARAMS memset{};        // kMemset
  CUDA_MEMCPY3D memcpy{};                  // kMemcpy
  CUcontext ctx = nullptr;                 // kMemset, kMemcpy, kBatchMemOp: the context given
  CUDA_HOST_NODE_PARAMS host{};            // kHost
  CUevent event = nullptr;                 // kEventRecord, kEventWait
  // kExtSemSignal / kExtSemWait: the semaphores and their parameters (one of the two lists).
  std::vector<CUexternalSemaphore> semaphores;
  std::vector<CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS> signal_params;
  std::vector<CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS> wait_params;
  std::vector<CUstreamBatchMemOpParams> memops;  // kBatchMemOp
  unsigned memop_flags = 0;
};

struct UserObject;

// A graph's destructor (api_graph.cc) also destroys its child graphs, erases its nodes' and
// child graphs' handles and unmaps the address ranges of its allocation nodes.
struct Graph {
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph();
  std::mutex mu;
  std::vector<std::unique_ptr<GraphNode>> nodes;  // in dependency (insertion) order
  // Address ranges reserved for memory-allocation nodes, unmapped with the graph.
  std::vector<std::pair<void*, size_t>> reserved_ranges;
  // Non-null: embedded in a child graph node of `parent` (cloned into it, or moved), owned by
  // that node.
  Graph* parent = nullptr;
  bool moved = false;  // embedded with CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE
  // The live executable graph of a graph with memory nodes (the driver allows one at a time).
  GraphExec* memory_exec = nullptr;
  bool capturing = false;  // a stream captures into it
  // While a stream captures into this graph: the nodes the next captured node depends on.
  std::vector<GraphNode*> capture_deps;
  std::vector<CUgraphEdgeData> capture_edges;
  // User objects the graph holds references to (cuGraphRetainUserObject), with their counts.
  std::vector<std::pair<UserObject*, unsigned>> user_objects;
};

// One node of an executable graph: a copy of its graph node (edges dropped), child graphs
// flattened, in a topological order of the graph.
struct ExecStep {
  GraphNode node;
  bool enabled = true;          // cuGraphNodeSetEnabled
  uint64_t child_origin = 0;    // serial of the child graph node it came from (0: top level)
  const GraphNode* origin = nullptr;  // the graph node copied: valid only while flattening
};

struct GraphExec {
  Context* ctx = nullptr;
  unsigned long long flags = 0;  // as instantiated (cuGraphExecGetFlags)
  std::vector<ExecStep> steps;
  // The top-level graph's nodes by serial, in the graph's order, and their edges as (from, to)
  // serial pairs: what cuGraphExecUpdate compares a new graph with.
  std::vector<uint64_t> top_nodes;
  std::vector<GraphNode::Type> top_types;
  std::vector<std::pair<uint64_t, uint64_t>> top_edges;
  // Steps [begin, end) of each child graph node, by its serial (cuGraphExecChildGraphNodeSetParams).
  struct ChildRange {
    uint64_t serial = 0;
    size_t begin = 0, end = 0;
  };
  std::vector<ChildRange> child_ranges;
  // User objects the executable graph holds (those of its graph at instantiation).
  std::vector<std::pair<UserObject*, unsigned>> user_objects;
  // Graph memory, per device: charged on first launch, kept until trim or destroy (as the
  // driver's graph memory pool keeps it).
  struct Portion {
    int device = 0;
    uint64_t bytes = 0;  // allocation nodes on `device`, each rounded up to the granularity
    bool resident = false;
  };
  std::vector<Portion> portions;
  bool frees_all_allocations = false;  // every alloc node has a matching free node
  Graph* source = nullptr;             // the graph it was instantiated from, if it has memory nodes
  std::atomic<uint64_t> last_launch_end_ns{0};
};

// The one table of live handles. Insert on create, Erase on destroy, Lookup before use.
class HandleRegistry {
 public:
  static HandleRegistry& Get();
  void Insert(const void* handle, Kind kind);
  void Erase(const void* handle);
  bool Is(const void* handle, Kind kind) const;

  template <typename T>
  T* Lookup(const void* handle, Kind kind) const {
    return Is(handle, kind) ? static_cast<T*>(const_cast<void*>(handle)) : nullptr;
  }

 private:
  mutable std::mutex mu_;
  std::unordered_map<const void*, Kind> live_;
};

}  // namespace fgpu::sim::cuda
