// `alloc` and `fill`: hold device memory through one allocation API, so tests can
// see what a cap, the simulator's accounting or NVML make of it.
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "probe/commands.h"
#include "probe/json_line.h"

namespace fgpu::probe {

namespace {

constexpr uint64_t kMaxFillAllocations = 100000;

void AppendBlockFacts(const DeviceBlock& block, JsonLine* line) {
  line->Uint("allocated_bytes", block.allocated_bytes);
  if (!block.shape.empty()) {
    line->BeginArray("shape");
    for (uint64_t extent : block.shape) line->Uint("", extent);
    line->EndArray();
  }
}

// Prints {"event":"mem_get_info","free":N,"total":N}; false after an error line.
bool EmitMemGetInfo(const Session& session) {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  if (!FGPU_PROBE_CALL(session, cuMemGetInfo_v2, &free_bytes, &total_bytes)) return false;
  JsonLine("mem_get_info").Uint("free", free_bytes).Uint("total", total_bytes).Emit();
  return true;
}

// Frees newest first (the order a stack-like program releases memory); true if all succeeded.
bool FreeAll(DeviceMemory* memory, const std::vector<DeviceBlock>& blocks) {
  bool all_freed = true;
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) all_freed = memory->Free(*it) && all_freed;
  return all_freed;
}

}  // namespace

void HoldFor(uint64_t ms) {
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

int RunAlloc(const Session& session, const AllocOptions& options) {
  DeviceMemory memory(session, options.api);
  std::vector<DeviceBlock> blocks;
  bool ok = true;
  for (uint64_t i = 0; i < options.count; ++i) {
    DeviceBlock block;
    const AllocOutcome outcome = memory.Allocate(options.bytes, &block);
    JsonLine line("alloc");
    line.Str("api", AllocApiName(options.api))
        .Uint("bytes", options.bytes)
        .Str("result", session.ErrorName(outcome.code))
        .Int("code", outcome.code);
    if (outcome.code != CUDA_SUCCESS) {
      line.Str("call", outcome.failed_call);
      ok = false;
    } else {
      blocks.push_back(block);
      AppendBlockFacts(block, &line);
      if (DeviceMemory::IsLinear(options.api)) {
        // The seed mixes pid and index: two probes writing the same simulated pages
        // would read back each other's pattern.
        const bool round_trip = memory.RoundTrip(block, (static_cast<uint64_t>(getpid()) << 20) + i);
        line.Bool("roundtrip", round_trip);
        ok = ok && round_trip;
      }
    }
    line.Emit();
  }
  ok = EmitMemGetInfo(session) && ok;
  HoldFor(options.hold_ms);
  ok = FreeAll(&memory, blocks) && ok;
  return ok ? kExitOk : kExitCudaError;
}

int RunFill(const Session& session, const FillOptions& options) {
  DeviceMemory memory(session, options.api);
  std::vector<DeviceBlock> blocks;
  uint64_t allocated_bytes = 0;
  AllocOutcome stop;
  while (blocks.size() < kMaxFillAllocations) {
    DeviceBlock block;
    stop = memory.Allocate(options.chunk, &block);
    if (stop.code != CUDA_SUCCESS) break;
    blocks.push_back(block);
    allocated_bytes += block.allocated_bytes;
  }
  const bool out_of_memory = stop.code == CUDA_ERROR_OUT_OF_MEMORY;
  if (stop.code != CUDA_SUCCESS && !out_of_memory) {
    EmitCudaError(stop.failed_call, stop.code, session.ErrorName(stop.code));
  }
  JsonLine line("fill");
  line.Str("api", AllocApiName(options.api))
      .Uint("chunk", options.chunk)
      .Uint("allocations", blocks.size())
      .Uint("allocated_bytes", allocated_bytes)
      .Int("stop_code", stop.code)
      .Str("stop_error", session.ErrorName(stop.code));
  if (stop.failed_call != nullptr) line.Str("stop_call", stop.failed_call);
  // Reaching the cap without a failure (managed memory may oversubscribe) is not an
  // out-of-memory stop, so it exits 1 like any other unexpected end.
  line.Bool("capped", stop.code == CUDA_SUCCESS);
  line.Emit();
  bool ok = EmitMemGetInfo(session) && out_of_memory;
  HoldFor(options.hold_ms);
  ok = FreeAll(&memory, blocks) && ok;
  return ok ? kExitOk : kExitCudaError;
}

}  // namespace fgpu::probe
