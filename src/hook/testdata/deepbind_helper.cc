// fgpu_hook_deepbind_helper: opens a library with the flags it is given and allocates device
// memory through it, for interpose/deep_bind_test.cc. Not linked to the driver: the library it
// opens (testdata/deepbind_library.cc) brings libcuda.so.1 as its own dependency.
//
//   fgpu_hook_deepbind_helper <library> <dlopen|dlmopen> <flag,...> <chunk MiB> <count>
//
// flags: now, lazy, local, global, noload, nodelete, deepbind. Prints one line per step:
//   open 1 -                    | open 0 <dlerror text>   (then stops)
//   global 0|1                  the library's symbol seen through RTLD_DEFAULT (RTLD_GLOBAL kept)
//   bound <file>                the object the library's cuMemAlloc_v2 lies in (dladdr)
//   start <CUresult>            cuInit .. primary context, through the library
//   total <bytes>               cuMemGetInfo_v2's total, through the library
//   alloc <i> <CUresult>        `count` allocations of `chunk` MiB, up to the first failure
// The library is found by the helper's own RUNPATH when <library> is a bare name.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

int ParseFlags(const char* text, bool* ok) {
  int mode = 0;
  std::string list(text);
  size_t start = 0;
  *ok = true;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    const std::string flag = list.substr(start, end - start);
    if (flag == "now") mode |= RTLD_NOW;
    else if (flag == "lazy") mode |= RTLD_LAZY;
    else if (flag == "local") mode |= RTLD_LOCAL;
    else if (flag == "global") mode |= RTLD_GLOBAL;
    else if (flag == "noload") mode |= RTLD_NOLOAD;
    else if (flag == "nodelete") mode |= RTLD_NODELETE;
    else if (flag == "deepbind") mode |= RTLD_DEEPBIND;
    else *ok = false;
    start = end + 1;
  }
  return mode;
}

const char* BaseName(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash != nullptr ? slash + 1 : path;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s <library> <dlopen|dlmopen> <flag,...> <chunk MiB> <count>\n", argv[0]);
    return 2;
  }
  bool flags_ok = false;
  const int mode = ParseFlags(argv[3], &flags_ok);
  if (!flags_ok) return 2;
  const unsigned long long chunk = std::strtoull(argv[4], nullptr, 10) << 20;
  const int count = std::atoi(argv[5]);

  dlerror();
  void* library = std::strcmp(argv[2], "dlmopen") == 0 ? dlmopen(LM_ID_BASE, argv[1], mode) : dlopen(argv[1], mode);
  if (library == nullptr) {
    const char* error = dlerror();
    std::printf("open 0 %s\n", error != nullptr ? error : "(no dlerror)");
    return 0;
  }
  std::printf("open 1 -\n");
  std::printf("global %d\n", dlsym(RTLD_DEFAULT, "fgpu_deepbind_start") != nullptr ? 1 : 0);

  using Start = int (*)();
  using Alloc = int (*)(unsigned long long);
  using Total = unsigned long long (*)();
  using Function = void* (*)();
  const auto start = reinterpret_cast<Start>(dlsym(library, "fgpu_deepbind_start"));
  const auto alloc = reinterpret_cast<Alloc>(dlsym(library, "fgpu_deepbind_alloc"));
  const auto total = reinterpret_cast<Total>(dlsym(library, "fgpu_deepbind_total"));
  const auto function = reinterpret_cast<Function>(dlsym(library, "fgpu_deepbind_alloc_function"));
  if (start == nullptr || alloc == nullptr || total == nullptr || function == nullptr) return 3;

  Dl_info where{};
  std::printf("bound %s\n", dladdr(function(), &where) != 0 && where.dli_fname != nullptr ? BaseName(where.dli_fname) : "?");
  const int started = start();
  std::printf("start %d\n", started);
  if (started != 0) return 0;
  std::printf("total %llu\n", total());
  for (int i = 0; i < count; ++i) {
    const int rc = alloc(chunk);
    std::printf("alloc %d %d\n", i, rc);
    if (rc != 0) break;
  }
  return 0;
}
