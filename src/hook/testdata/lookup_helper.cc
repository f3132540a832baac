// fgpu_hook_lookup_helper: prints, for every way a program can reach a driver entry point,
// which file and which exported symbol the answer lies in (dladdr). interpose_test.cc runs it
// under LD_PRELOAD=libfgpu.so to tell our wrappers from the driver's functions — something a
// comparison of addresses inside the process cannot do, since our dlsym override answers both
// sides of such a comparison.
//
//   fgpu_hook_lookup_helper [--getter direct|dlsym] [--open local|global]
//
// --getter: cuGetProcAddress[_v2] as linked symbols (under LD_PRELOAD: our exports) or from
// dlsym on the libcuda.so.1 handle (what cudart does). --open: how libcuda.so.1 is dlopened.
// Built twice: fgpu_hook_lookup_helper links libcuda.so.1 (for --getter direct), and
// fgpu_hook_lookup_helper_unlinked (FGPU_HELPER_LINKS_DRIVER=0) does not, so that with
// --open local the global scope holds no driver at all.
// One line per lookup, space-separated:
//   <how> <name> <cudaVersion|-> <flags|-> <rc|-> <status|-> <file|null> <symbol|->
// how: dlsym, getter (11.3 form), getter_v2, chained (through the getter the getter returned),
// rtld_default, rtld_next.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "core/abi/cuda_api.h"

#ifndef FGPU_HELPER_LINKS_DRIVER
#define FGPU_HELPER_LINKS_DRIVER 1
#endif

namespace {

const char* const kHooked[] = {
#define FGPU_HOOK(name) #name,
#include "hook/interpose/hooked_symbols.inc"
#undef FGPU_HOOK
#define FGPU_HOOK_NVML(name) #name,
#include "hook/interpose/hooked_nvml.inc"
#undef FGPU_HOOK_NVML
};

struct Export {
  const char* base;
  const char* exported;
};
const Export kExports[] = {
#define FGPU_CUDA_SYMBOL(base, exported, version, per_thread) {#base, #exported},
#include "core/abi/cuda_symbols.inc"
#undef FGPU_CUDA_SYMBOL
};

// Names that are not hooked: present in the driver, absent, or another library's.
const char* const kOtherNames[] = {"cuDeviceGet", "cuMemcpyHtoD_v2", "cuStreamQuery_ptsz", "cuMemAlloc_v3",
                                   "cuNoSuchFunction", "nvmlInit_v2", "nvmlDeviceGetMemoryInfo_v3",
                                   "cublasCreate_v2"};
const char* const kOtherBases[] = {"cuDeviceGet", "cuMemcpyHtoD", "cuStreamQuery", "cuLaunchKernelEx",
                                   "cuCtxGetDevice", "cuNoSuchFunction"};
constexpr int kVersions[] = {11030, 12000, 13000};
constexpr cuuint64_t kFlags[] = {CU_GET_PROC_ADDRESS_DEFAULT, CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                                 CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM};

std::string Where(void* address) {
  if (address == nullptr) return "null -";
  Dl_info info{};
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "? -";
  const char* slash = std::strrchr(info.dli_fname, '/');
  std::string text = slash != nullptr ? slash + 1 : info.dli_fname;
  text += ' ';
  text += info.dli_sname != nullptr ? info.dli_sname : "-";
  return text;
}

void PrintLookup(const char* how, const char* name, void* address) {
  std::printf("%s %s - - - - %s\n", how, name, Where(address).c_str());
}

void PrintGetter(const char* how, const char* name, int version, cuuint64_t flags, CUresult rc, int status,
                 void* address) {
  std::printf("%s %s %d %llu %d %d %s\n", how, name, version, static_cast<unsigned long long>(flags),
              static_cast<int>(rc), status, Where(address).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  bool direct_getter = false;
  int open_mode = RTLD_LOCAL;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string option = argv[i], value = argv[i + 1];
    if (option == "--getter" && ((FGPU_HELPER_LINKS_DRIVER && value == "direct") || value == "dlsym")) {
      direct_getter = value == "direct";
    } else if (option == "--open" && (value == "local" || value == "global")) {
      open_mode = value == "global" ? RTLD_GLOBAL : RTLD_LOCAL;
    } else {
      std::fprintf(stderr, "usage: %s [--getter direct|dlsym] [--open local|global]\n", argv[0]);
      return 2;
    }
  }
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | open_mode);
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (cuda == nullptr || nvml == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }

  for (const char* name : kHooked) PrintLookup("dlsym", name, dlsym(std::strncmp(name, "nvml", 4) == 0 ? nvml : cuda, name));
  for (const char* name : kOtherNames) PrintLookup("dlsym", name, dlsym(std::strncmp(name, "nvml", 4) == 0 ? nvml : cuda, name));
  PrintLookup("rtld_default", "cuInit", dlsym(RTLD_DEFAULT, "cuInit"));
  PrintLookup("rtld_default", "cuDeviceGet", dlsym(RTLD_DEFAULT, "cuDeviceGet"));
  // From this executable, the next "dlsym" after it is the preloaded override, not libc's:
  // the override must keep the caller's identity (a tail call into the real dlsym).
  PrintLookup("rtld_next", "dlsym", dlsym(RTLD_NEXT, "dlsym"));

  using Getter = decltype(&::cuGetProcAddress);
  using GetterV2 = decltype(&::cuGetProcAddress_v2);
  auto getter = reinterpret_cast<Getter>(dlsym(cuda, "cuGetProcAddress"));
  auto getter_v2 = reinterpret_cast<GetterV2>(dlsym(cuda, "cuGetProcAddress_v2"));
#if FGPU_HELPER_LINKS_DRIVER
  if (direct_getter) {
    getter = &::cuGetProcAddress;
    getter_v2 = &::cuGetProcAddress_v2;
  }
#else
  (void)direct_getter;  // refused by the option parser
#endif
  if (getter == nullptr || getter_v2 == nullptr) {
    std::fprintf(stderr, "no cuGetProcAddress\n");
    return 1;
  }

  std::set<std::string> bases;
  for (const char* name : kHooked) {
    for (const Export& entry : kExports) {
      if (std::strcmp(entry.exported, name) == 0) bases.insert(entry.base);
    }
  }
  bases.insert(std::begin(kOtherBases), std::end(kOtherBases));
  for (const std::string& base : bases) {
    for (int version : kVersions) {
      for (cuuint64_t flags : kFlags) {
        void* address = nullptr;
        CUresult rc = getter(base.c_str(), &address, version, flags);
        PrintGetter("getter", base.c_str(), version, flags, rc, -1, address);
        address = nullptr;
        // Not what a found symbol gets: shows whether the getter wrote the status.
        CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
        rc = getter_v2(base.c_str(), &address, version, flags, &status);
        PrintGetter("getter_v2", base.c_str(), version, flags, rc, status, address);
      }
    }
  }

  // cudart's bootstrap: the getter asked for itself, then used.
  void* self = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  if (getter_v2("cuGetProcAddress", &self, 12000, 0, &status) == CUDA_SUCCESS && self != nullptr) {
    void* address = nullptr;
    const CUresult rc = reinterpret_cast<GetterV2>(self)("cuMemAlloc", &address, 12000, 0, &status);
    PrintGetter("chained", "cuMemAlloc", 12000, 0, rc, status, address);
  }
  self = nullptr;
  if (getter("cuGetProcAddress", &self, 11030, 0) == CUDA_SUCCESS && self != nullptr) {
    void* address = nullptr;
    const CUresult rc = reinterpret_cast<Getter>(self)("cuLaunchKernel", &address, 11030,
                                                       CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    PrintGetter("chained", "cuLaunchKernel", 11030, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, rc, -1, address);
  }
  return 0;
}
