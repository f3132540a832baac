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

struct SpinOptions {
  double duty_percent = 100;
  double seconds = 1;
  uint64_t kernel_us = 1000;
};

int RunInfo(const Session& session);
int RunAlloc(const Session& session, const AllocOptions& options);
int RunFill(const Session& session, const FillOptions& options);
int RunSpin(const Session& session, const SpinOptions& options);
int RunSymbols(const Session& session);

// Sleeps `ms` milliseconds (the --hold-ms of alloc and fill).
void HoldFor(uint64_t ms);

}  // namespace fgpu::probe

#endif  // FGPU_PROBE_COMMANDS_H_
