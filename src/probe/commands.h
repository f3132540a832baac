// The probe's commands. Each takes an open Session (device 0's primary context is
// current) and its parsed options, prints JSON lines and returns the exit status
// (kExitOk, or kExitCudaError after printing an error line).
#ifndef FGPU_PROBE_COMMANDS_H_
#define FGPU_PROBE_COMMANDS_H_

#include <cstdint>

#include "probe/device_memory.h"
#include "probe/session.h"

namespace fgpu::probe {

struct AllocOptions {
  uint64_t bytes = 0;
  AllocApi api = AllocApi::kMemAlloc;
  uint64_t count = 1;
  uint64_t hold_ms = 0;
};

struct FillOptions {
  AllocApi api = AllocApi::kMemAlloc;
  uint64_t chunk = 256ull << 20;
  uint64_t hold_ms = 0;
};

// `spin` (docs/probe.md). A "launch" is one cuLaunchKernel, or one cuGraphLaunch of a
// chain of graph_kernels kernels; the duty schedule, busy time and windows count
// kernel_us of device time per kernel.
struct SpinOptions {
  double duty_percent = 100;
  double seconds = 1;
  uint64_t kernel_us = 1000;
  uint64_t depth = 2;          // launches in flight at most
  bool sync_each = false;      // cuStreamSynchronize after every launch (depth unused)
  uint64_t graph_kernels = 0;  // 0: cuLaunchKernel; N: cuGraphLaunch of N chained kernel nodes
  uint64_t window_ms = 0;      // 0: no "windows" in the result

  uint64_t KernelsPerLaunch() const { return graph_kernels == 0 ? 1 : graph_kernels; }
};

int RunInfo(const Session& session);
int RunAlloc(const Session& session, const AllocOptions& options);
int RunFill(const Session& session, const FillOptions& options);
int RunSpin(const Session& session, const SpinOptions& options);
// `symbols`: the twelve base names the interposer's matching was first checked on, or every
// base name of core/abi/cuda_symbols.inc (`--names all`: the simulator's fidelity, side by side
// with a real driver in scripts/gpu-check).
struct SymbolsOptions {
  bool all_names = false;
};

int RunSymbols(const Session& session, const SymbolsOptions& options);
// `attributes`: cuDeviceGetAttribute for every attribute of FGPU_CUDA_DEVICE_ATTRIBUTE_LIST.
int RunAttributes(const Session& session);

// Sleeps `ms` milliseconds (the --hold-ms of alloc and fill).
void HoldFor(uint64_t ms);

}  // namespace fgpu::probe

#endif  // FGPU_PROBE_COMMANDS_H_
