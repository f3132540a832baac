// The names and versions of the driver table's entries, and the lookup mode names:
// the part of driver_table.h that references no driver symbol, so the command-line
// parser (and its unit test) links without libcuda.
#include <algorithm>
#include <iterator>

#include "probe/driver_table.h"

namespace fgpu::probe {

namespace {

// FGPU_PROBE_DRIVER_ENTRIES, then FGPU_PROBE_GRAPH_ENTRIES: kCore is a prefix.
constexpr DriverEntry kEntries[] = {
#define FGPU_PROBE_ENTRY_(exported, base, since) {#exported, #base, since},
    FGPU_PROBE_ALL_DRIVER_ENTRIES(FGPU_PROBE_ENTRY_)
#undef FGPU_PROBE_ENTRY_
};

constexpr const char* kCoreNames[] = {
#define FGPU_PROBE_NAME_(exported, base, since) #exported,
    FGPU_PROBE_DRIVER_ENTRIES(FGPU_PROBE_NAME_)
#undef FGPU_PROBE_NAME_
};
constexpr size_t kCoreCount = std::size(kCoreNames);

}  // namespace

const DriverEntry* DriverEntries(DriverEntrySet set, size_t* count) {
  *count = set == DriverEntrySet::kCore ? kCoreCount : std::size(kEntries);
  return kEntries;
}

std::string_view LookupModeName(LookupMode mode) {
  switch (mode) {
    case LookupMode::kDirect: return "direct";
    case LookupMode::kDlsym: return "dlsym";
    case LookupMode::kProcAddress: return "procaddress";
    case LookupMode::kProcAddressV2: return "procaddress_v2";
  }
  return "unknown";
}

bool ParseLookupMode(std::string_view text, LookupMode* mode) {
  for (LookupMode candidate :
       {LookupMode::kDirect, LookupMode::kDlsym, LookupMode::kProcAddress, LookupMode::kProcAddressV2}) {
    if (text == LookupModeName(candidate)) {
      *mode = candidate;
      return true;
    }
  }
  return false;
}

int MinimumCudaVersion(DriverEntrySet set) {
  size_t count = 0;
  const DriverEntry* entries = DriverEntries(set, &count);
  int minimum = 0;
  for (size_t i = 0; i < count; ++i) minimum = std::max(minimum, entries[i].since);
  return minimum;
}

}  // namespace fgpu::probe
