// The JIT linker. The simulator compiles nothing: PTX inputs are joined into one PTX image (so
// the module loaded from it resolves exactly their entries), and a binary input (cubin, fatbin,
// object, library) makes the output that binary, which the module loader accepts without
// inspection as it does a cubin loaded directly. The image lives until cuLinkDestroy.
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "core/abi/cuda_api.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/runtime.h"

using fgpu::sim::cuda::Context;
using fgpu::sim::cuda::Guarded;
using fgpu::sim::cuda::HandleRegistry;
using fgpu::sim::cuda::Kind;
using fgpu::sim::cuda::Runtime;

namespace {

struct LinkState {
  Context* ctx = nullptr;
  std::string ptx;                 // the PTX inputs, one after the other
  std::vector<char> binary;        // the first binary input
  std::vector<char> image;         // cuLinkComplete's output
  int inputs = 0;
};

constexpr size_t kMaxInputBytes = size_t{256} << 20;

CUresult Options(unsigned count, const CUjit_option* options, void** values) {
  if (count > 0 && (options == nullptr || values == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < count; ++i) {
    if (options[i] < 0 || options[i] >= CU_JIT_NUM_OPTIONS) return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;  // log buffers stay as given: there is nothing to log
}

CUresult LookupState(CUlinkState handle, LinkState** state) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  *state = HandleRegistry::Get().Lookup<LinkState>(handle, Kind::kLinkState);
  return *state != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult Create(unsigned count, CUjit_option* options, void** values, CUlinkState* out) {
  if (CUresult rc = Runtime::Get().RequireInit(); rc != CUDA_SUCCESS) return rc;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult rc = Options(count, options, values); rc != CUDA_SUCCESS) return rc;
  auto state = std::make_unique<LinkState>();
  state->ctx = ctx;
  HandleRegistry::Get().Insert(state.get(), Kind::kLinkState);
  *out = reinterpret_cast<CUlinkState>(state.release());
  return CUDA_SUCCESS;
}

CUresult Add(LinkState& state, CUjitInputType type, const char* data, size_t size) {
  if (type < CU_JIT_INPUT_CUBIN || type >= CU_JIT_NUM_INPUT_TYPES) return CUDA_ERROR_INVALID_VALUE;
  if (type == CU_JIT_INPUT_NVVM) return CUDA_ERROR_JIT_COMPILER_NOT_FOUND;  // no NVVM behind the simulator
  if (type == CU_JIT_INPUT_PTX) {
    const size_t length = strnlen(data, size);  // PTX text, its terminator optional within size
    if (length == 0) return CUDA_ERROR_INVALID_PTX;
    state.ptx.append(data, length).push_back('\n');
  } else if (state.binary.empty()) {
    state.binary.assign(data, data + size);
  }
  ++state.inputs;
  return CUDA_SUCCESS;
}

CUresult AddData(CUlinkState handle, CUjitInputType type, void* data, size_t size, unsigned count,
                 CUjit_option* options, void** values) {
  LinkState* state = nullptr;
  if (CUresult rc = LookupState(handle, &state); rc != CUDA_SUCCESS) return rc;
  if (data == nullptr || size == 0 || size > kMaxInputBytes) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult rc = Options(count, options, values); rc != CUDA_SUCCESS) return rc;
  return Add(*state, type, static_cast<const char*>(data), size);
}

CUresult AddFile(CUlinkState handle, CUjitInputType type, const char* path, unsigned count, CUjit_option* options,
                 void** values) {
  LinkState* state = nullptr;
  if (CUresult rc = LookupState(handle, &state); rc != CUDA_SUCCESS) return rc;
  if (path == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult rc = Options(count, options, values); rc != CUDA_SUCCESS) return rc;
  std::ifstream file(path, std::ios::binary);
  if (!file) return CUDA_ERROR_FILE_NOT_FOUND;
  std::vector<char> bytes{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  if (bytes.empty() || bytes.size() > kMaxInputBytes) return CUDA_ERROR_INVALID_VALUE;
  return Add(*state, type, bytes.data(), bytes.size());
}

CUresult Complete(CUlinkState handle, void** image, size_t* size) {
  LinkState* state = nullptr;
  if (CUresult rc = LookupState(handle, &state); rc != CUDA_SUCCESS) return rc;
  if (image == nullptr || size == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (state->inputs == 0) return CUDA_ERROR_INVALID_VALUE;  // nothing to link
  if (!state->binary.empty()) {
    state->image = state->binary;
  } else {
    state->image.assign(state->ptx.begin(), state->ptx.end());
    state->image.push_back('\0');
  }
  *image = state->image.data();
  *size = state->image.size();
  return CUDA_SUCCESS;
}

CUresult Destroy(CUlinkState handle) {
  LinkState* state = nullptr;
  if (CUresult rc = LookupState(handle, &state); rc != CUDA_SUCCESS) return rc;
  HandleRegistry::Get().Erase(state);
  delete state;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuLinkCreate(unsigned int numOptions, CUjit_option* options, void** optionValues, CUlinkState* stateOut) {
  return Guarded([&] { return Create(numOptions, options, optionValues, stateOut); });
}
CUresult cuLinkCreate_v2(unsigned int numOptions, CUjit_option* options, void** optionValues, CUlinkState* stateOut) {
  return Guarded([&] { return Create(numOptions, options, optionValues, stateOut); });
}
CUresult cuLinkAddData(CUlinkState state, CUjitInputType type, void* data, size_t size, const char* /*name*/,
                       unsigned int numOptions, CUjit_option* options, void** optionValues) {
  return Guarded([&] { return AddData(state, type, data, size, numOptions, options, optionValues); });
}
CUresult cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void* data, size_t size, const char* /*name*/,
                          unsigned int numOptions, CUjit_option* options, void** optionValues) {
  return Guarded([&] { return AddData(state, type, data, size, numOptions, options, optionValues); });
}
CUresult cuLinkAddFile(CUlinkState state, CUjitInputType type, const char* path, unsigned int numOptions,
                       CUjit_option* options, void** optionValues) {
  return Guarded([&] { return AddFile(state, type, path, numOptions, options, optionValues); });
}
CUresult cuLinkAddFile_v2(CUlinkState state, CUjitInputType type, const char* path, unsigned int numOptions,
                          CUjit_option* options, void** optionValues) {
  return Guarded([&] { return AddFile(state, type, path, numOptions, options, optionValues); });
}
CUresult cuLinkComplete(CUlinkState state, void** cubinOut, size_t* sizeOut) {
  return Guarded([&] { return Complete(state, cubinOut, sizeOut); });
}
CUresult cuLinkDestroy(CUlinkState state) {
  return Guarded([&] { return Destroy(state); });
}

}  // extern "C"
