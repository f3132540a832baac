// Driver logs (cuLogs*): callbacks are registered and dumps succeed, but the simulated driver
// writes no log messages, so the log is always empty and no callback is ever called.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <mutex>
#include <vector>

#include "core/abi/cuda_api.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/runtime.h"

namespace fgpu::sim::cuda {
namespace {

struct LogCallback {
  CUlogsCallback callback = nullptr;
  void* user_data = nullptr;
};
struct LogCallbacks {
  std::mutex mu;
  std::vector<std::unique_ptr<LogCallback>> entries;
};
LogCallbacks& RegisteredLogCallbacks() {
  static auto* callbacks = new LogCallbacks;  // never destroyed: entry points may run during exit
  return *callbacks;
}

}  // namespace
}  // namespace fgpu::sim::cuda

namespace sim = fgpu::sim::cuda;

extern "C" {

CUresult cuLogsRegisterCallback(CUlogsCallback callbackFunc, void* userData, CUlogsCallbackHandle* callback_out) {
  return sim::Guarded([&] {
    if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
    if (callbackFunc == nullptr || callback_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    auto entry = std::make_unique<sim::LogCallback>();
    entry->callback = callbackFunc;
    entry->user_data = userData;
    sim::LogCallbacks& callbacks = sim::RegisteredLogCallbacks();
    std::lock_guard lock(callbacks.mu);
    *callback_out = reinterpret_cast<CUlogsCallbackHandle>(entry.get());
    callbacks.entries.push_back(std::move(entry));
    return CUDA_SUCCESS;
  });
}

CUresult cuLogsUnregisterCallback(CUlogsCallbackHandle callback) {
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  sim::LogCallbacks& callbacks = sim::RegisteredLogCallbacks();
  std::lock_guard lock(callbacks.mu);
  auto& entries = callbacks.entries;
  const auto found = std::find_if(entries.begin(), entries.end(), [&](const auto& entry) {
    return reinterpret_cast<CUlogsCallbackHandle>(entry.get()) == callback;
  });
  if (found == entries.end()) return CUDA_ERROR_INVALID_VALUE;
  entries.erase(found);
  return CUDA_SUCCESS;
}

// The end of the (empty) log: where the next message would go.
CUresult cuLogsCurrent(CUlogIterator* iterator_out, unsigned int flags) {
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  if (iterator_out == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  *iterator_out = 0;
  return CUDA_SUCCESS;
}

// Writes what was logged — nothing — to the file, which is created (or truncated).
CUresult cuLogsDumpToFile(CUlogIterator* iterator, const char* pathToFile, unsigned int flags) {
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  if (pathToFile == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::FILE* file = std::fopen(pathToFile, "w");
  if (file == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::fclose(file);
  if (iterator != nullptr) *iterator = 0;
  return CUDA_SUCCESS;
}

// "If there are no messages to dump, *size will be set to 0 and the function will return
// CUDA_SUCCESS"; the buffer is terminated.
CUresult cuLogsDumpToMemory(CUlogIterator* iterator, char* buffer, size_t* size, unsigned int flags) {
  if (CUresult rc = sim::Ready(); rc != CUDA_SUCCESS) return rc;
  if (buffer == nullptr || size == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (*size > 0) buffer[0] = '\0';
  *size = 0;
  if (iterator != nullptr) *iterator = 0;
  return CUDA_SUCCESS;
}

}  // extern "C"
