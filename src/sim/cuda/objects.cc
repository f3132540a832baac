#include "sim/cuda/objects.h"

namespace fgpu::sim::cuda {

HandleRegistry& HandleRegistry::Get() {
  // Never destroyed: handles may be looked up from atexit handlers and other
  // libraries' destructors after static destruction began.
  static auto* registry = new HandleRegistry;
  return *registry;
}

void HandleRegistry::Insert(const void* handle, Kind kind) {
  std::lock_guard lock(mu_);
  live_[handle] = kind;
}

void HandleRegistry::Erase(const void* handle) {
  std::lock_guard lock(mu_);
  live_.erase(handle);
}

bool HandleRegistry::Is(const void* handle, Kind kind) const {
  if (handle == nullptr) return false;
  std::lock_guard lock(mu_);
  auto it = live_.find(handle);
  return it != live_.end() && it->second == kind;
}

}  // namespace fgpu::sim::cuda
