#include "probe/session.h"

#include "probe/json_line.h"

namespace fgpu::probe {

std::string BuiltinErrorName(int code) {
  switch (code) {
#define FGPU_PROBE_RESULT_NAME_(name, value) \
  case value:                                \
    return #name;
    FGPU_CUDA_RESULT_LIST(FGPU_PROBE_RESULT_NAME_)
#undef FGPU_PROBE_RESULT_NAME_
  }
  return "CUDA_ERROR_UNKNOWN_CODE_" + std::to_string(code);
}

void EmitCudaError(const char* call, int code, const std::string& name) {
  JsonLine("error").Str("call", call).Int("code", code).Str("name", name).Emit();
}

Session::~Session() {
  // Release the retained primary context so the driver's accounting sees the
  // process leave cleanly even before it exits.
  if (retained_) table_.cuDevicePrimaryCtxRelease_v2(device_);
}

std::string Session::ErrorName(CUresult rc) const {
  const char* name = nullptr;
  if (table_.cuGetErrorName != nullptr && table_.cuGetErrorName(rc, &name) == CUDA_SUCCESS && name != nullptr) {
    return name;
  }
  return BuiltinErrorName(static_cast<int>(rc));
}

bool Session::Check(CUresult rc, const char* call) const {
  if (rc == CUDA_SUCCESS) return true;
  EmitCudaError(call, static_cast<int>(rc), ErrorName(rc));
  return false;
}

bool Session::Open(const SessionOptions& options) {
  LookupFailure failure;
  if (!BuildDriverTable(options.lookup, options.cuda_version, options.entries, &table_, &failure)) {
    JsonLine line("error");
    line.Str("call", failure.call).Str("symbol", failure.symbol).Int("code", failure.code);
    if (failure.code != 0) line.Str("name", BuiltinErrorName(failure.code));
    if (!failure.detail.empty()) line.Str("detail", failure.detail);
    line.Str("lookup", LookupModeName(options.lookup)).Int("cuda_version", options.cuda_version);
    line.Emit();
    return false;
  }
  ordinal_ = options.device;
  if (!FGPU_PROBE_CALL(*this, cuInit, 0)) return false;
  if (!FGPU_PROBE_CALL(*this, cuDeviceGet, &device_, ordinal_)) return false;
  if (!FGPU_PROBE_CALL(*this, cuDevicePrimaryCtxRetain, &context_, device_)) return false;
  retained_ = true;
  return FGPU_PROBE_CALL(*this, cuCtxSetCurrent, context_);
}

}  // namespace fgpu::probe
