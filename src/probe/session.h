// Session: the driver table plus an initialised device and its primary context,
// shared by every command; and the probe's way of reporting a failed driver call.
//
// Contract
// - Open builds the table (LookupMode; the entry lists of SessionOptions::entries),
//   calls cuInit(0), cuDeviceGet(ordinal), cuDevicePrimaryCtxRetain and
//   cuCtxSetCurrent. Any failure prints an error line and returns false. The
//   destructor releases the primary context.
// - Check(rc, call) prints {"event":"error","call":...,"code":...,"name":...} when
//   rc is not CUDA_SUCCESS, and returns rc == CUDA_SUCCESS.
// - Error names come from the driver's cuGetErrorName when the table has it, else
//   from FGPU_CUDA_RESULT_LIST, so a code is always printed with a name.
#ifndef FGPU_PROBE_SESSION_H_
#define FGPU_PROBE_SESSION_H_

#include <string>

#include "probe/driver_table.h"

namespace fgpu::probe {

// Exit statuses: the probe's command-line contract.
inline constexpr int kExitOk = 0;
inline constexpr int kExitCudaError = 1;
inline constexpr int kExitUsage = 2;

struct SessionOptions {
  int device = 0;
  LookupMode lookup = LookupMode::kProcAddressV2;
  int cuda_version = 12000;
  // The graph entry points too (FGPU_PROBE_GRAPH_ENTRIES): only `spin --graph-kernels`.
  DriverEntrySet entries = DriverEntrySet::kCore;
};

class Session {
 public:
  Session() = default;
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  bool Open(const SessionOptions& options);

  const DriverTable& cu() const { return table_; }
  CUdevice device() const { return device_; }
  int ordinal() const { return ordinal_; }
  CUcontext context() const { return context_; }

  // Name of a CUresult, e.g. "CUDA_ERROR_OUT_OF_MEMORY".
  std::string ErrorName(CUresult rc) const;
  bool Check(CUresult rc, const char* call) const;

 private:
  DriverTable table_;
  int ordinal_ = 0;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  bool retained_ = false;
};

// The CUresult's name from fgpu's own list; "CUDA_ERROR_UNKNOWN_CODE_<n>" if absent.
std::string BuiltinErrorName(int code);

// Prints an error line for `call` failing with `code`.
void EmitCudaError(const char* call, int code, const std::string& name);

}  // namespace fgpu::probe

// Calls table member `fn` and reports a failure under its exported name:
//   if (!FGPU_PROBE_CALL(session, cuMemFree_v2, ptr)) ...
#define FGPU_PROBE_CALL(session, fn, ...) ((session).Check((session).cu().fn(__VA_ARGS__), #fn))

#endif  // FGPU_PROBE_SESSION_H_
