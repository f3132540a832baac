// `symbols`: what cuGetProcAddress hands out for a fixed set of base names, CUDA
// versions and stream flags, and which exported symbol each answer is.
//
// Why: an interposer replaces entry points by matching the getter's answer against
// the addresses of libcuda's exported variants (reference/cuda.md §1.3). That only
// works if the real driver returns exported symbols, which this command verifies
// on a GPU, and shows which variant (cuMemAlloc_v2, cuLaunchKernel_ptsz, ...) each
// (version, flags) pair selects.
#include <dlfcn.h>

#include <iterator>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "probe/commands.h"
#include "probe/json_line.h"

namespace fgpu::probe {

namespace {

constexpr const char* kBaseNames[] = {
    "cuInit",          "cuMemAlloc",       "cuMemFree",      "cuLaunchKernel",
    "cuCtxCreate",     "cuCtxSynchronize", "cuMemGetInfo",   "cuMemcpyHtoD",
    "cuGetProcAddress", "cuMemCreate",     "cuMemAllocAsync", "cuGraphLaunch",
};
constexpr int kVersions[] = {11030, 12000, 13000};
constexpr cuuint64_t kFlags[] = {CU_GET_PROC_ADDRESS_DEFAULT, CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                                 CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM};

struct Export {
  const char* base;
  const char* name;
  void* address;  // dlsym in libcuda.so.1; null if this driver lacks it
};

// Every exported variant fgpu knows of (core/abi/cuda_symbols.inc), with its address.
std::vector<Export> ExportedVariants(void* library) {
  std::vector<Export> exports = {
#define FGPU_CUDA_SYMBOL(base, exported, version, per_thread) {#base, #exported, nullptr},
#include "core/abi/cuda_symbols.inc"
#undef FGPU_CUDA_SYMBOL
  };
  for (Export& entry : exports) entry.address = dlsym(library, entry.name);
  return exports;
}

// The exported name at `address`, preferring a variant of `base` when aliases exist.
const char* SameAs(const std::vector<Export>& exports, const char* base, void* address) {
  if (address == nullptr) return nullptr;
  const char* any = nullptr;
  for (const Export& entry : exports) {
    if (entry.address != address) continue;
    if (std::string_view(entry.base) == base) return entry.name;
    if (any == nullptr) any = entry.name;
  }
  return any;
}

}  // namespace

int RunSymbols(const Session& session, const SymbolsOptions& options) {
  const DriverTable& cu = session.cu();
  const std::vector<Export> exports = ExportedVariants(cu.library);
  std::vector<const char*> bases(std::begin(kBaseNames), std::end(kBaseNames));
  if (options.all_names) {
    bases.clear();
    std::set<std::string_view> seen;
    for (const Export& entry : exports) {
      if (seen.insert(entry.base).second) bases.push_back(entry.base);
    }
    // Every variant, present or not in this driver: the simulator's exports against the real one's.
    for (const Export& entry : exports) {
      JsonLine("export").Str("name", entry.name).Str("base", entry.base).Bool("present", entry.address != nullptr).Emit();
    }
  }
  // The 11.3 form has no status output; every other mode asks the _v2 getter.
  const bool legacy_getter = cu.mode == LookupMode::kProcAddress;
  for (const char* base : bases) {
    for (int version : kVersions) {
      for (cuuint64_t flags : kFlags) {
        void* address = nullptr;
        CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
        const CUresult rc = legacy_getter ? cu.cuGetProcAddress(base, &address, version, flags)
                                          : cu.cuGetProcAddress_v2(base, &address, version, flags, &status);
        JsonLine line("symbol");
        line.Str("name", base)
            .Int("version", version)
            .Uint("flags", flags)
            .Int("code", rc)
            .Bool("found", address != nullptr);
        if (legacy_getter) {
          line.Null("status");
        } else {
          line.Int("status", status);
        }
        if (const char* same_as = SameAs(exports, base, address)) {
          line.Str("same_as", same_as);
        } else {
          line.Null("same_as");
        }
        line.Emit();
      }
    }
  }
  return kExitOk;
}

}  // namespace fgpu::probe
