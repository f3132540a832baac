#include "hook/memory/device_view.h"

#include <algorithm>

namespace fgpu::hook {

MemoryView VirtualMemoryView(uint64_t cap, uint64_t used, uint64_t physical_total, uint64_t physical_free) {
  MemoryView view;
  view.total = std::min(cap, physical_total);
  view.used = used;
  const uint64_t headroom = used >= view.total ? 0 : view.total - used;
  view.free = std::min(headroom, physical_free);
  return view;
}

}  // namespace fgpu::hook
