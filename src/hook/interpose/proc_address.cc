#include "hook/interpose/proc_address.h"

namespace fgpu::hook {

ProcAddressAnswer SubstituteProcAddress(const AddressMap& map, Mode mode, const char* symbol, void* real_answer) {
  if (real_answer == nullptr) return {false, nullptr};
  const AddressMap::Entry* entry = map.Find(real_answer);
  if (mode == Mode::kPassThrough) {
    return {false, entry != nullptr && entry->real != nullptr ? entry->real : real_answer};
  }
  if (entry != nullptr) return {false, entry->wrapper};
  if (RefusesUnknownVariant(symbol)) return {true, nullptr};
  return {false, real_answer};
}

}  // namespace fgpu::hook
