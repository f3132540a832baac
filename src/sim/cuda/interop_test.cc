// Tests of what programs none of us wrote reach for beyond allocation and launch: IPC memory and
// events between processes, the occupancy calculators, the JIT linker, peer access, host
// allocation flags and the profiler switches. Each test runs in a forked child (its own cuInit
// and segment); the IPC tests fork once more before cuInit, for a second process on the segment.
#include <dirent.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/abi/cuda_api.h"
#include "sim/cuda/child_process.h"
#include "sim/cuda/sim_test_env.h"

namespace fgpu::sim::testing {
namespace {

constexpr const char* kInteropConfig = R"({
  "devices": [{"count": 2, "memory": "4GiB", "granularity": "2MiB", "sm_count": 16, "context_overhead": "300MiB"}],
  "default_kernel_wave_us": 10
})";
constexpr const char* kInteropPtx =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry fgpu_spin(.param .u64 ns)\n{\n ret;\n}\n";

std::string RunInteropSim(const std::function<std::string()>& body) { return RunWithConfig(kInteropConfig, "interop-test", body); }

// A pipe carrying fixed-size messages between the two processes of an IPC test.
struct Channel {
  int fds[2] = {-1, -1};
  Channel() { (void)!pipe(fds); }
  ~Channel() {
    close(fds[0]);
    close(fds[1]);
  }
  template <typename T>
  bool Send(const T& value) {
    return write(fds[1], &value, sizeof(value)) == static_cast<ssize_t>(sizeof(value));
  }
  template <typename T>
  bool Receive(T* value) {
    return read(fds[0], value, sizeof(*value)) == static_cast<ssize_t>(sizeof(*value));
  }
};

// Forks the importing process (before the caller's cuInit), which runs `importer` and exits
// with 0 on success; its failure text comes back through `report`.
pid_t ForkImporter(Channel& report, const std::function<std::string()>& importer) {
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string failure = importer();
    char text[512] = {};
    std::snprintf(text, sizeof text, "%s", failure.empty() ? "OK" : failure.c_str());
    report.Send(text);
    _exit(0);
  }
  return pid;
}

std::string ImporterVerdict(Channel& report, pid_t pid) {
  char text[512] = {};
  const bool got = report.Receive(&text);
  waitpid(pid, nullptr, 0);
  if (!got) return "the importer died";
  return std::string(text) == "OK" ? "" : "importer: " + std::string(text);
}

TEST(SimIpc, AnotherProcessMapsTheSameMemoryAndIsChargedNothing) {
  EXPECT_EQ(RunInteropSim([] {
    Channel handles, back, report;
    const pid_t importer = ForkImporter(report, [&]() -> std::string {
      CUipcMemHandle handle{};
      FGPU_REQUIRE(handles.Receive(&handle));
      PrimaryContext ctx;
      FGPU_REQUIRE(ctx.ok());
      const uint64_t free_before = FreeBytes();
      CUdeviceptr mapped = 0, again = 0;
      FGPU_REQUIRE_CU(cuIpcOpenMemHandle_v2(&mapped, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_SUCCESS);
      FGPU_REQUIRE(FreeBytes() == free_before);  // the exporter's allocation holds the memory
      FGPU_REQUIRE_CU(cuIpcOpenMemHandle(&again, handle, 0), CUDA_SUCCESS);
      FGPU_REQUIRE(again == mapped);  // one mapping per handle, counted
      std::vector<uint32_t> seen(1024);
      FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(seen.data(), mapped, seen.size() * 4), CUDA_SUCCESS);
      for (size_t i = 0; i < seen.size(); ++i) FGPU_REQUIRE(seen[i] == i * 3);
      const uint32_t answer = 0xC0FFEE;
      FGPU_REQUIRE_CU(cuMemcpyHtoD_v2(mapped + 4096, &answer, 4), CUDA_SUCCESS);
      size_t size = 0;
      CUdeviceptr base = 0;
      FGPU_REQUIRE_CU(cuMemGetAddressRange_v2(&base, &size, mapped + 100), CUDA_SUCCESS);
      FGPU_REQUIRE(base == mapped && size == 64 * kMiB);
      FGPU_REQUIRE_CU(cuMemFree_v2(mapped), CUDA_ERROR_INVALID_VALUE);  // closed, not freed
      FGPU_REQUIRE_CU(cuIpcCloseMemHandle(mapped), CUDA_SUCCESS);
      FGPU_REQUIRE_CU(cuIpcCloseMemHandle(mapped), CUDA_SUCCESS);
      FGPU_REQUIRE_CU(cuIpcCloseMemHandle(mapped), CUDA_ERROR_INVALID_VALUE);
      back.Send(1);
      return "";
    });
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUdeviceptr buffer = 0;
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&buffer, 64 * kMiB), CUDA_SUCCESS);
    std::vector<uint32_t> pattern(1024);
    for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint32_t>(i * 3);
    FGPU_REQUIRE_CU(cuMemcpyHtoD_v2(buffer, pattern.data(), pattern.size() * 4), CUDA_SUCCESS);
    CUipcMemHandle handle{};
    FGPU_REQUIRE_CU(cuIpcGetMemHandle(&handle, buffer), CUDA_SUCCESS);
    // Exporting keeps what the allocation held, and the exporter cannot map its own handle.
    uint32_t first = 0;
    FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(&first, buffer + 12, 4), CUDA_SUCCESS);
    FGPU_REQUIRE(first == 9);
    CUdeviceptr self = 0;
    FGPU_REQUIRE_CU(cuIpcOpenMemHandle_v2(&self, handle, 1), CUDA_ERROR_INVALID_CONTEXT);
    FGPU_REQUIRE(handles.Send(handle));
    int done = 0;
    FGPU_REQUIRE(back.Receive(&done));
    if (std::string verdict = ImporterVerdict(report, importer); !verdict.empty()) return verdict;
    uint32_t answer = 0;
    FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(&answer, buffer + 4096, 4), CUDA_SUCCESS);
    FGPU_REQUIRE(answer == 0xC0FFEE);  // written by the other process
    FGPU_REQUIRE_CU(cuMemFree_v2(buffer), CUDA_SUCCESS);
    return std::string();
  }), "");
}

TEST(SimIpc, BadHandlesAndMemoryThatCannotBeSharedAreRefused) {
  EXPECT_EQ(RunInteropSim([] {
    Channel handles, report;
    const pid_t importer = ForkImporter(report, [&]() -> std::string {
      CUipcMemHandle handle{};
      FGPU_REQUIRE(handles.Receive(&handle));
      PrimaryContext ctx;
      FGPU_REQUIRE(ctx.ok());
      CUdeviceptr mapped = 0;
      // Freed by the exporter before it was opened: its descriptor is gone.
      FGPU_REQUIRE_CU(cuIpcOpenMemHandle_v2(&mapped, handle, 1), CUDA_ERROR_INVALID_HANDLE);
      CUipcMemHandle garbage{};
      std::memset(garbage.reserved, 0x5a, sizeof garbage.reserved);
      FGPU_REQUIRE_CU(cuIpcOpenMemHandle_v2(&mapped, garbage, 1), CUDA_ERROR_INVALID_VALUE);
      FGPU_REQUIRE_CU(cuIpcOpenMemHandle_v2(&mapped, handle, 2), CUDA_ERROR_INVALID_VALUE);
      FGPU_REQUIRE_CU(cuIpcOpenMemHandle_v2(nullptr, handle, 1), CUDA_ERROR_INVALID_VALUE);
      return "";
    });
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUdeviceptr buffer = 0, managed = 0;
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&buffer, 8 * kMiB), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemAllocManaged(&managed, 8 * kMiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    CUipcMemHandle handle{};
    FGPU_REQUIRE_CU(cuIpcGetMemHandle(&handle, buffer + 64), CUDA_ERROR_INVALID_VALUE);  // not the base
    FGPU_REQUIRE_CU(cuIpcGetMemHandle(&handle, managed), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuIpcGetMemHandle(nullptr, buffer), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuIpcCloseMemHandle(buffer), CUDA_ERROR_INVALID_VALUE);  // not an import
    FGPU_REQUIRE_CU(cuIpcGetMemHandle(&handle, buffer), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(buffer), CUDA_SUCCESS);
    FGPU_REQUIRE(handles.Send(handle));
    return ImporterVerdict(report, importer);
  }), "");
}

TEST(SimIpc, AnEventRecordedInOneProcessIsWaitedOnInAnother) {
  EXPECT_EQ(RunInteropSim([] {
    Channel handles, opened, recorded, report;
    const pid_t importer = ForkImporter(report, [&]() -> std::string {
      CUipcEventHandle handle{};
      FGPU_REQUIRE(handles.Receive(&handle));
      PrimaryContext ctx;
      FGPU_REQUIRE(ctx.ok());
      CUevent event = nullptr;
      FGPU_REQUIRE_CU(cuIpcOpenEventHandle(&event, handle), CUDA_SUCCESS);
      FGPU_REQUIRE_CU(cuEventQuery(event), CUDA_SUCCESS);  // not recorded yet: complete
      FGPU_REQUIRE(opened.Send(1));
      int ready = 0;
      FGPU_REQUIRE(recorded.Receive(&ready));
      FGPU_REQUIRE_CU(cuEventQuery(event), CUDA_ERROR_NOT_READY);  // the exporter's 300 ms kernel runs
      const auto start = std::chrono::steady_clock::now();
      FGPU_REQUIRE_CU(cuEventSynchronize(event), CUDA_SUCCESS);
      FGPU_REQUIRE(std::chrono::steady_clock::now() - start > std::chrono::milliseconds(100));
      FGPU_REQUIRE_CU(cuEventQuery(event), CUDA_SUCCESS);
      float ms = 0;
      FGPU_REQUIRE_CU(cuEventElapsedTime_v2(&ms, event, event), CUDA_ERROR_INVALID_HANDLE);  // no timing
      FGPU_REQUIRE_CU(cuEventDestroy_v2(event), CUDA_SUCCESS);
      return "";
    });
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUevent timed = nullptr, shared = nullptr;
    CUipcEventHandle handle{};
    FGPU_REQUIRE_CU(cuEventCreate(&timed, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuIpcGetEventHandle(&handle, timed), CUDA_ERROR_INVALID_VALUE);  // not interprocess
    FGPU_REQUIRE_CU(cuEventCreate(&shared, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuIpcGetEventHandle(&handle, shared), CUDA_SUCCESS);
    FGPU_REQUIRE(handles.Send(handle));
    CUmodule module = nullptr;
    CUfunction spin = nullptr;
    FGPU_REQUIRE_CU(cuModuleLoadData(&module, kInteropPtx), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuModuleGetFunction(&spin, module, "fgpu_spin"), CUDA_SUCCESS);
    uint64_t ns = 300'000'000;
    void* params[] = {&ns};
    int ready = 0;
    FGPU_REQUIRE(opened.Receive(&ready));
    FGPU_REQUIRE_CU(cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuEventRecord(shared, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE(recorded.Send(1));
    if (std::string verdict = ImporterVerdict(report, importer); !verdict.empty()) return verdict;
    FGPU_REQUIRE_CU(cuEventDestroy_v2(shared), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuEventDestroy_v2(timed), CUDA_SUCCESS);
    return std::string();
  }), "");
}

// The permission bits of this process's open IPC memfds (memfd_create names them
// "fgpu-sim-ipc" and "fgpu-sim-ipc-event").
std::vector<unsigned> IpcMemfdModes() {
  std::vector<unsigned> modes;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return modes;
  while (const dirent* entry = readdir(dir)) {
    const std::string path = std::string("/proc/self/fd/") + entry->d_name;
    char target[256] = {};
    if (readlink(path.c_str(), target, sizeof target - 1) <= 0) continue;
    struct stat st{};
    if (std::strstr(target, "memfd:fgpu-sim-ipc") != nullptr && stat(path.c_str(), &st) == 0) {
      modes.push_back(st.st_mode & 07777);
    }
  }
  closedir(dir);
  return modes;
}

// How many of this process's mappings are of the IPC memfds.
int IpcMappings() {
  std::ifstream maps("/proc/self/maps");
  int count = 0;
  for (std::string line; std::getline(maps, line);) count += line.find("memfd:fgpu-sim-ipc") != std::string::npos;
  return count;
}

// Another user who obtains the 64 bytes of a handle (leaked through a file, say) cannot open them:
// the same answer as a handle whose exporter is gone, nothing mapped, the owner's data unchanged;
// a process of the owner's user opens the same handles. The other user's importer initialises as
// root and then drops to uid/gid 4242, so it is on the segment (whose mode the tests leave alone).
TEST(SimIpc, AnotherUsersProcessCannotOpenTheHandles) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to become another user";
  EXPECT_EQ(RunInteropSim([] {
    Channel to_owner, to_stranger, owner_report, stranger_report;
    const pid_t owner = ForkImporter(owner_report, [&]() -> std::string {
      CUipcMemHandle memory{};
      CUipcEventHandle event_handle{};
      FGPU_REQUIRE(to_owner.Receive(&memory) && to_owner.Receive(&event_handle));
      PrimaryContext ctx;
      FGPU_REQUIRE(ctx.ok());
      CUdeviceptr mapped = 0;
      FGPU_REQUIRE_CU(cuIpcOpenMemHandle_v2(&mapped, memory, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_SUCCESS);
      uint32_t word = 0;
      FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(&word, mapped + 40, 4), CUDA_SUCCESS);
      FGPU_REQUIRE(word == 10 * 7);
      CUevent event = nullptr;
      FGPU_REQUIRE_CU(cuIpcOpenEventHandle(&event, event_handle), CUDA_SUCCESS);
      FGPU_REQUIRE_CU(cuEventDestroy_v2(event), CUDA_SUCCESS);
      FGPU_REQUIRE_CU(cuIpcCloseMemHandle(mapped), CUDA_SUCCESS);
      return "";
    });
    const pid_t stranger = ForkImporter(stranger_report, [&]() -> std::string {
      CUipcMemHandle memory{};
      CUipcEventHandle event_handle{};
      FGPU_REQUIRE(to_stranger.Receive(&memory) && to_stranger.Receive(&event_handle));
      PrimaryContext ctx;
      FGPU_REQUIRE(ctx.ok());
      FGPU_REQUIRE(setgroups(0, nullptr) == 0 && setresgid(4242, 4242, 4242) == 0 && setresuid(4242, 4242, 4242) == 0);
      CUdeviceptr mapped = 0;
      FGPU_REQUIRE_CU(cuIpcOpenMemHandle_v2(&mapped, memory, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_ERROR_INVALID_HANDLE);
      FGPU_REQUIRE(mapped == 0);
      CUevent event = nullptr;
      FGPU_REQUIRE_CU(cuIpcOpenEventHandle(&event, event_handle), CUDA_ERROR_INVALID_HANDLE);
      FGPU_REQUIRE(event == nullptr);
      FGPU_REQUIRE(IpcMappings() == 0);
      return "";
    });
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUdeviceptr buffer = 0;
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&buffer, 8 * kMiB), CUDA_SUCCESS);
    std::vector<uint32_t> pattern(1024);
    for (size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<uint32_t>(i * 7);
    FGPU_REQUIRE_CU(cuMemcpyHtoD_v2(buffer, pattern.data(), pattern.size() * 4), CUDA_SUCCESS);
    CUevent shared = nullptr;
    FGPU_REQUIRE_CU(cuEventCreate(&shared, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
    CUipcMemHandle memory{};
    CUipcEventHandle event_handle{};
    FGPU_REQUIRE_CU(cuIpcGetMemHandle(&memory, buffer), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuIpcGetEventHandle(&event_handle, shared), CUDA_SUCCESS);
    const std::vector<unsigned> modes = IpcMemfdModes();
    FGPU_REQUIRE(modes.size() == 2);
    for (unsigned mode : modes) FGPU_REQUIRE(mode == 0600);
    FGPU_REQUIRE(to_stranger.Send(memory) && to_stranger.Send(event_handle));
    if (std::string verdict = ImporterVerdict(stranger_report, stranger); !verdict.empty()) return "stranger " + verdict;
    FGPU_REQUIRE(to_owner.Send(memory) && to_owner.Send(event_handle));
    if (std::string verdict = ImporterVerdict(owner_report, owner); !verdict.empty()) return "owner " + verdict;
    std::vector<uint32_t> after(pattern.size());
    FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(after.data(), buffer, after.size() * 4), CUDA_SUCCESS);
    FGPU_REQUIRE(after == pattern);
    FGPU_REQUIRE_CU(cuEventDestroy_v2(shared), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(buffer), CUDA_SUCCESS);
    return std::string();
  }), "");
}

// H100-like limits (the simulator's attributes): 2048 threads, 32 blocks, 64 K registers and
// 228 KiB of shared memory per SM, 1 KiB reserved per block; a kernel of 16 registers.
TEST(SimOccupancy, TheCalculatorsFollowTheDevicesLimits) {
  EXPECT_EQ(RunInteropSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUmodule module = nullptr;
    CUfunction kernel = nullptr;
    FGPU_REQUIRE_CU(cuModuleLoadData(&module, kInteropPtx), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuModuleGetFunction(&kernel, module, "fgpu_spin"), CUDA_SUCCESS);
    int blocks = 0;
    FGPU_REQUIRE_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, 256, 0), CUDA_SUCCESS);
    FGPU_REQUIRE(blocks == 8);  // 2048 threads / 256
    FGPU_REQUIRE_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, 32, 0), CUDA_SUCCESS);
    FGPU_REQUIRE(blocks == 32);  // the block limit
    // 50 KiB of dynamic shared memory: (50 + 1) KiB a block, 4 fit in 228 KiB.
    FGPU_REQUIRE_CU(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, kernel, 128, 50 * 1024, 0),
                    CUDA_SUCCESS);
    FGPU_REQUIRE(blocks == 0);  // over the kernel's 48 KiB without the opt-in
    FGPU_REQUIRE_CU(cuFuncSetAttribute(kernel, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100 * 1024),
                    CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, kernel, 128, 50 * 1024, 0),
                    CUDA_SUCCESS);
    FGPU_REQUIRE(blocks == 4);
    FGPU_REQUIRE_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, 1025, 0), CUDA_SUCCESS);
    FGPU_REQUIRE(blocks == 0);
    FGPU_REQUIRE_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, 0, 0), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, kernel, 64, 0, 7),
                    CUDA_ERROR_INVALID_VALUE);
    int grid = 0, block = 0;
    FGPU_REQUIRE_CU(cuOccupancyMaxPotentialBlockSize(&grid, &block, kernel, nullptr, 0, 0), CUDA_SUCCESS);
    FGPU_REQUIRE(block == 1024 && grid == 2 * 16);  // 2 blocks of 1024 fill an SM; 16 SMs
    FGPU_REQUIRE_CU(cuOccupancyMaxPotentialBlockSize(&grid, &block, kernel, nullptr, 0, 200), CUDA_SUCCESS);
    FGPU_REQUIRE(block == 128 && grid == 16 * 16);  // under 200 threads, 128 fills an SM exactly
    // A block's shared memory growing with its size: 64 bytes a thread.
    FGPU_REQUIRE_CU(cuOccupancyMaxPotentialBlockSizeWithFlags(
                        &grid, &block, kernel, [](int size) { return static_cast<size_t>(size) * 64; }, 0, 0, 0),
                    CUDA_SUCCESS);
    FGPU_REQUIRE(block > 0 && block % 32 == 0 && grid > 0);
    size_t dynamic = 0;
    FGPU_REQUIRE_CU(cuOccupancyAvailableDynamicSMemPerBlock(&dynamic, kernel, 4, 128), CUDA_SUCCESS);
    FGPU_REQUIRE(dynamic == 56 * 1024);  // 228 KiB / 4 = 57 KiB, less the 1 KiB reservation
    FGPU_REQUIRE_CU(cuOccupancyAvailableDynamicSMemPerBlock(&dynamic, kernel, 33, 32), CUDA_SUCCESS);
    FGPU_REQUIRE(dynamic == 0);  // 33 blocks never fit
    FGPU_REQUIRE_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, nullptr, 64, 0), CUDA_ERROR_INVALID_HANDLE);
    FGPU_REQUIRE_CU(cuFuncSetCacheConfig(kernel, CU_FUNC_CACHE_PREFER_SHARED), CUDA_SUCCESS);
    // 9, no CUfunc_cache value, as a C program may pass it (through the entry point's address:
    // in C++ the enum cannot hold it).
    void* entry = nullptr;
    FGPU_REQUIRE_CU(cuGetProcAddress_v2("cuFuncSetCacheConfig", &entry, 13000, 0, nullptr), CUDA_SUCCESS);
    const auto set_cache_config = reinterpret_cast<CUresult (*)(CUfunction, int)>(entry);
    FGPU_REQUIRE_CU(set_cache_config(kernel, 9), CUDA_ERROR_INVALID_VALUE);
    return std::string();
  }), "");
}

TEST(SimLinker, PtxInputsLinkIntoAnImageWhoseEntriesLoad) {
  EXPECT_EQ(RunInteropSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    const std::string first = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry first()\n{\n ret;\n}\n";
    const std::string second = ".visible .entry second()\n{\n ret;\n}\n";
    char log[256] = {};
    CUjit_option options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {log, reinterpret_cast<void*>(sizeof log)};
    CUlinkState link = nullptr;
    FGPU_REQUIRE_CU(cuLinkCreate_v2(2, options, values, &link), CUDA_SUCCESS);
    void* image = nullptr;
    size_t size = 0;
    FGPU_REQUIRE_CU(cuLinkComplete(link, &image, &size), CUDA_ERROR_INVALID_VALUE);  // nothing added
    FGPU_REQUIRE_CU(cuLinkAddData_v2(link, CU_JIT_INPUT_PTX, const_cast<char*>(first.c_str()), first.size() + 1, "a",
                                     0, nullptr, nullptr),
                    CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuLinkAddData_v2(link, CU_JIT_INPUT_PTX, const_cast<char*>(second.data()), second.size(), "b", 0,
                                     nullptr, nullptr),
                    CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuLinkAddData_v2(link, CU_JIT_INPUT_NVVM, const_cast<char*>("x"), 1, "c", 0, nullptr, nullptr),
                    CUDA_ERROR_JIT_COMPILER_NOT_FOUND);
    FGPU_REQUIRE_CU(cuLinkAddFile_v2(link, CU_JIT_INPUT_CUBIN, "/nonexistent.cubin", 0, nullptr, nullptr),
                    CUDA_ERROR_FILE_NOT_FOUND);
    FGPU_REQUIRE_CU(cuLinkComplete(link, &image, &size), CUDA_SUCCESS);
    FGPU_REQUIRE(image != nullptr && size > first.size());
    CUmodule module = nullptr;
    CUfunction function = nullptr;
    FGPU_REQUIRE_CU(cuModuleLoadData(&module, image), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuModuleGetFunction(&function, module, "first"), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuModuleGetFunction(&function, module, "second"), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuModuleGetFunction(&function, module, "third"), CUDA_ERROR_NOT_FOUND);
    FGPU_REQUIRE_CU(cuLinkDestroy(link), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuLinkDestroy(link), CUDA_ERROR_INVALID_HANDLE);
    return std::string();
  }), "");
}

TEST(SimPeers, PeerAccessIsBetweenTwoDevicesOnlyAndOnce) {
  EXPECT_EQ(RunInteropSim([] {
    FGPU_REQUIRE_CU(cuInit(0), CUDA_SUCCESS);
    CUcontext zero = nullptr, one = nullptr;
    FGPU_REQUIRE_CU(cuDevicePrimaryCtxRetain(&one, 1), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuDevicePrimaryCtxRetain(&zero, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxSetCurrent(zero), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxEnablePeerAccess(zero, 0), CUDA_ERROR_INVALID_CONTEXT);  // itself
    FGPU_REQUIRE_CU(cuCtxEnablePeerAccess(one, 1), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuCtxDisablePeerAccess(one), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
    FGPU_REQUIRE_CU(cuCtxEnablePeerAccess(one, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxEnablePeerAccess(one, 0), CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
    FGPU_REQUIRE_CU(cuCtxDisablePeerAccess(one), CUDA_SUCCESS);
    CUcontext same_device = nullptr;
    FGPU_REQUIRE_CU(cuCtxCreate_v2(&same_device, 0, 0), CUDA_SUCCESS);  // current now
    FGPU_REQUIRE_CU(cuCtxEnablePeerAccess(zero, 0), CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
    FGPU_REQUIRE_CU(cuCtxDestroy_v2(same_device), CUDA_SUCCESS);
    return std::string();
  }), "");
}

TEST(SimHostMemory, HostAllocationsTellTheirFlagsAndTheProfilerSwitchesAreAccepted) {
  EXPECT_EQ(RunInteropSim([] {
    FGPU_REQUIRE_CU(cuProfilerStart(), CUDA_ERROR_NOT_INITIALIZED);
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    void* pinned = nullptr;
    FGPU_REQUIRE_CU(cuMemHostAlloc(&pinned, 1 << 20, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
                    CUDA_SUCCESS);
    unsigned flags = 0;
    FGPU_REQUIRE_CU(cuMemHostGetFlags(&flags, static_cast<char*>(pinned) + 100), CUDA_SUCCESS);
    FGPU_REQUIRE(flags == (CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    int stack_value = 0;
    FGPU_REQUIRE_CU(cuMemHostGetFlags(&flags, &stack_value), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemHostGetFlags(nullptr, pinned), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuMemFreeHost(pinned), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuProfilerStart(), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuProfilerStop(), CUDA_SUCCESS);
    return std::string();
  }), "");
}

}  // namespace
}  // namespace fgpu::sim::testing
