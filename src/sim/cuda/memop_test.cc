// Tests of the stream memory operations: writes land when their stream gets to them, waits hold
// their stream (and what is queued behind them) until the condition holds on the word, whoever
// writes it — another stream, the host, a copy. Each test runs in a forked child.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "core/abi/cuda_api.h"
#include "core/units.h"
#include "sim/cuda/child_process.h"
#include "sim/cuda/sim_test_env.h"
#include "sim/state/shared_devices.h"

namespace fgpu::sim::testing {
namespace {

constexpr const char* kMemOpConfig = R"({
  "devices": [{"count": 1, "memory": "4GiB", "granularity": "2MiB", "sm_count": 16, "context_overhead": "300MiB"}],
  "default_kernel_wave_us": 10
})";
constexpr const char* kMemOpPtx =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry fgpu_spin(.param .u64 ns)\n{\n ret;\n}\n";

std::string RunMemOpSim(const std::function<std::string()>& body) {
  return RunWithConfig(kMemOpConfig, "memop-test", body);
}

uint32_t ReadWord32(CUdeviceptr ptr) {
  uint32_t value = 0xDEADBEEF;
  return cuMemcpyDtoH_v2(&value, ptr, sizeof value) == CUDA_SUCCESS ? value : 0xDEADBEEF;
}

TEST(SimStreamMemOps, WritesLandAndSatisfiedWaitsPass) {
  EXPECT_EQ(RunMemOpSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUdeviceptr words = 0;
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&words, 4096), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD8_v2(words, 0, 4096), CUDA_SUCCESS);
    CUstream stream = nullptr;
    FGPU_REQUIRE_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);

    FGPU_REQUIRE_CU(cuStreamWriteValue32(stream, words, 11, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamWriteValue32_v2(stream, words + 4, 12, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamWriteValue32_ptsz(stream, words + 8, 13, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER),
                    CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamWriteValue64(stream, words + 16, 0x1122334455667788ull, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamWriteValue64_v2_ptsz(nullptr, words + 24, 99, 0), CUDA_SUCCESS);
    CUstreamBatchMemOpParams batch[3] = {};
    batch[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    batch[0].writeValue.address = words + 32;
    batch[0].writeValue.value = 21;
    batch[1].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
    batch[1].memoryBarrier.flags = CU_STREAM_MEMORY_BARRIER_TYPE_GPU;
    batch[2].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
    batch[2].writeValue.address = words + 40;
    batch[2].writeValue.value64 = 1ull << 40;
    FGPU_REQUIRE_CU(cuStreamBatchMemOp_v2(stream, 3, batch, 0), CUDA_SUCCESS);
    // Waits that already hold let the stream go on at once.
    FGPU_REQUIRE_CU(cuStreamWaitValue32(stream, words, 11, CU_STREAM_WAIT_VALUE_EQ), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamWaitValue64_v2(stream, words + 16, 0x1122334455667788ull, CU_STREAM_WAIT_VALUE_GEQ),
                    CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamQuery(stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSynchronize(stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuCtxSynchronize(), CUDA_SUCCESS);
    uint64_t seen[6] = {};
    FGPU_REQUIRE_CU(cuMemcpyDtoH_v2(seen, words, sizeof seen), CUDA_SUCCESS);
    FGPU_REQUIRE(seen[0] == (uint64_t{12} << 32 | 11) && (seen[1] & 0xFFFFFFFF) == 13);
    FGPU_REQUIRE(seen[2] == 0x1122334455667788ull && seen[3] == 99);
    FGPU_REQUIRE(seen[4] == 21 && seen[5] == 1ull << 40);

    // Every condition, evaluated at once on a stream with nothing before it.
    struct Case {
      uint32_t word, value;
      unsigned flags;
      bool holds;
    };
    const Case cases[] = {
        {5, 5, CU_STREAM_WAIT_VALUE_EQ, true},          {5, 6, CU_STREAM_WAIT_VALUE_EQ, false},
        {6, 5, CU_STREAM_WAIT_VALUE_GEQ, true},         {4, 5, CU_STREAM_WAIT_VALUE_GEQ, false},
        {1, 0xFFFFFFF0u, CU_STREAM_WAIT_VALUE_GEQ, true},  // cyclic: 1 is after 0xFFFFFFF0
        {0x6, 0x2, CU_STREAM_WAIT_VALUE_AND, true},     {0x4, 0x2, CU_STREAM_WAIT_VALUE_AND, false},
        {0x0, 0x0, CU_STREAM_WAIT_VALUE_NOR, true},     {0xFFFF0000u, 0x0000FFFFu, CU_STREAM_WAIT_VALUE_NOR, false},
        {5, 5, CU_STREAM_WAIT_VALUE_EQ | CU_STREAM_WAIT_VALUE_FLUSH, true},
    };
    for (const Case& c : cases) {
      FGPU_REQUIRE_CU(cuMemsetD32_v2(words + 64, c.word, 1), CUDA_SUCCESS);
      FGPU_REQUIRE_CU(cuStreamWaitValue32(stream, words + 64, c.value, c.flags), CUDA_SUCCESS);
      FGPU_REQUIRE_CU(cuStreamQuery(stream), c.holds ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY);
      if (!c.holds) {  // release it: a value that satisfies every failing case above
        const uint32_t release = c.flags == CU_STREAM_WAIT_VALUE_NOR ? 0 : (c.flags == CU_STREAM_WAIT_VALUE_AND ? 0x2 : c.value);
        FGPU_REQUIRE_CU(cuMemcpyHtoD_v2(words + 64, &release, sizeof release), CUDA_SUCCESS);
        FGPU_REQUIRE_CU(cuStreamSynchronize(stream), CUDA_SUCCESS);
      }
    }
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(words), CUDA_SUCCESS);
    return std::string();
  }), "");
}

TEST(SimStreamMemOps, ProducerAndConsumerOnTwoStreams) {
  EXPECT_EQ(RunMemOpSim([] {
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    CUmodule module = nullptr;
    CUfunction spin = nullptr;
    FGPU_REQUIRE_CU(cuModuleLoadData(&module, kMemOpPtx), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuModuleGetFunction(&spin, module, "fgpu_spin"), CUDA_SUCCESS);
    CUdeviceptr flag = 0, result = 0;
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&flag, 4096), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&result, 4096), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD32_v2(flag, 0, 2), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemsetD32_v2(result, 0, 1), CUDA_SUCCESS);
    CUstream producer = nullptr, consumer = nullptr;
    FGPU_REQUIRE_CU(cuStreamCreate(&producer, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamCreate(&consumer, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUevent consumed = nullptr;
    FGPU_REQUIRE_CU(cuEventCreate(&consumed, 0), CUDA_SUCCESS);

    // The consumer waits for the flag, then runs a kernel, writes its result and records an event:
    // all of it is held until the producer's write, which lands after the producer's 30 ms kernel.
    FGPU_REQUIRE_CU(cuStreamWaitValue32(consumer, flag, 1, CU_STREAM_WAIT_VALUE_GEQ), CUDA_SUCCESS);
    uint64_t short_ns = 1'000'000;
    void* short_params[] = {&short_ns};
    FGPU_REQUIRE_CU(cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, consumer, short_params, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamWriteValue32(consumer, result, 7, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuEventRecord(consumed, consumer), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamQuery(consumer), CUDA_ERROR_NOT_READY);
    FGPU_REQUIRE_CU(cuEventQuery(consumed), CUDA_ERROR_NOT_READY);
    FGPU_REQUIRE(ReadWord32(result) == 0);

    const uint64_t start = SharedDevices::NowNs();
    uint64_t long_ns = 30'000'000;
    void* long_params[] = {&long_ns};
    FGPU_REQUIRE_CU(cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, producer, long_params, nullptr), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamWriteValue32_v2(producer, flag, 1, 0), CUDA_SUCCESS);
    FGPU_REQUIRE(ReadWord32(flag) == 0);  // not before the producer's kernel ends

    FGPU_REQUIRE_CU(cuStreamSynchronize(consumer), CUDA_SUCCESS);
    const uint64_t waited = SharedDevices::NowNs() - start;
    FGPU_REQUIRE(waited >= 31'000'000);  // the producer's kernel, then the consumer's
    FGPU_REQUIRE(ReadWord32(flag) == 1 && ReadWord32(result) == 7);
    FGPU_REQUIRE_CU(cuEventSynchronize(consumed), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuEventQuery(consumed), CUDA_SUCCESS);

    // The host as the producer: a word in pinned memory, stored by another thread, with a
    // stream waiting on the event of a held stream in between.
    void* host = nullptr;
    FGPU_REQUIRE_CU(cuMemAllocHost_v2(&host, 4096), CUDA_SUCCESS);
    auto* word = static_cast<uint64_t*>(host);
    *word = 0;
    CUevent gate = nullptr;
    FGPU_REQUIRE_CU(cuEventCreate(&gate, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamWaitValue64(consumer, reinterpret_cast<CUdeviceptr>(host), 42, CU_STREAM_WAIT_VALUE_EQ),
                    CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuEventRecord(gate, consumer), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamWaitEvent(producer, gate, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamWriteValue32(producer, result, 8, 0), CUDA_SUCCESS);
    std::thread writer([word] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      __atomic_store_n(word, 42, __ATOMIC_RELEASE);
    });
    FGPU_REQUIRE_CU(cuStreamQuery(producer), CUDA_ERROR_NOT_READY);
    const CUresult synced = cuCtxSynchronize();
    writer.join();
    FGPU_REQUIRE_CU(synced, CUDA_SUCCESS);
    FGPU_REQUIRE(ReadWord32(result) == 8);
    FGPU_REQUIRE_CU(cuStreamQuery(producer), CUDA_SUCCESS);

    // A stream destroyed while held lets go of what it kept.
    FGPU_REQUIRE_CU(cuStreamWaitValue32(consumer, flag, 5, CU_STREAM_WAIT_VALUE_EQ), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamWriteValue32(consumer, result, 9, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(consumer), CUDA_SUCCESS);
    FGPU_REQUIRE(ReadWord32(result) == 8);

    FGPU_REQUIRE_CU(cuEventDestroy_v2(gate), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuEventDestroy_v2(consumed), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(producer), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFreeHost(host), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(flag), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(result), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuModuleUnload(module), CUDA_SUCCESS);
    return std::string();
  }), "");
}

TEST(SimStreamMemOps, RefusalsAreTheDriversErrors) {
  EXPECT_EQ(RunMemOpSim([] {
    FGPU_REQUIRE_CU(cuStreamWriteValue32(nullptr, 0, 0, 0), CUDA_ERROR_NOT_INITIALIZED);
    PrimaryContext ctx;
    FGPU_REQUIRE(ctx.ok());
    int supported = 0;
    for (CUdevice_attribute attribute : {CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1,
                                         CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS,
                                         CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR,
                                         CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES}) {
      FGPU_REQUIRE_CU(cuDeviceGetAttribute(&supported, attribute, 0), CUDA_SUCCESS);
      FGPU_REQUIRE(supported == 1);
    }
    CUdeviceptr words = 0, managed = 0;
    FGPU_REQUIRE_CU(cuMemAlloc_v2(&words, 4096), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemAllocManaged(&managed, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    CUstream stream = nullptr;
    FGPU_REQUIRE_CU(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
    const auto bogus = reinterpret_cast<CUstream>(&words);
    FGPU_REQUIRE_CU(cuStreamWaitValue32(bogus, words, 0, 0), CUDA_ERROR_INVALID_HANDLE);
    // Words: aligned, device-accessible, not managed, known.
    FGPU_REQUIRE_CU(cuStreamWriteValue32(stream, words + 2, 0, 0), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuStreamWriteValue64(stream, words + 4, 0, 0), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuStreamWriteValue32(stream, managed, 0, 0), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuStreamWaitValue32(stream, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuStreamWaitValue32(stream, words + 4096, 0, 0), CUDA_ERROR_INVALID_VALUE);
    // Flags: conditions and FLUSH for waits; NO_MEMORY_BARRIER for v1 writes only.
    FGPU_REQUIRE_CU(cuStreamWaitValue32(stream, words, 0, 0x10), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuStreamWriteValue32_v2(stream, words, 0, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER),
                    CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuStreamWriteValue32(stream, words, 0, 2), CUDA_ERROR_INVALID_VALUE);
    // Batches: fewer than 256, an array, flags 0, known operations, barriers in v2 only; nothing
    // of a bad batch is done.
    CUstreamBatchMemOpParams ops[2] = {};
    ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    ops[0].writeValue.address = words;
    ops[0].writeValue.value = 77;
    ops[1].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
    FGPU_REQUIRE_CU(cuStreamBatchMemOp(stream, 2, ops, 0), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuStreamBatchMemOp_v2(stream, 256, ops, 0), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuStreamBatchMemOp_v2(stream, 1, nullptr, 0), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuStreamBatchMemOp_v2(stream, 1, ops, 1), CUDA_ERROR_INVALID_VALUE);
    ops[1].flushRemoteWrites.operation = CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES;
    ops[1].flushRemoteWrites.flags = 1;
    FGPU_REQUIRE_CU(cuStreamBatchMemOp_v2_ptsz(stream, 2, ops, 0), CUDA_ERROR_INVALID_VALUE);
    FGPU_REQUIRE_CU(cuStreamSynchronize(stream), CUDA_SUCCESS);
    FGPU_REQUIRE(ReadWord32(words) != 77);
    ops[1].flushRemoteWrites.flags = 0;
    FGPU_REQUIRE_CU(cuStreamBatchMemOp_ptsz(stream, 2, ops, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamBatchMemOp(stream, 0, nullptr, 0), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamSynchronize(stream), CUDA_SUCCESS);
    FGPU_REQUIRE(ReadWord32(words) == 77);
    // Not into a graph being captured.
    FGPU_REQUIRE_CU(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamWriteValue32(stream, words, 1, 0), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUgraph graph = nullptr;
    FGPU_REQUIRE_CU(cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuGraphDestroy(graph), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuStreamDestroy_v2(stream), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(words), CUDA_SUCCESS);
    FGPU_REQUIRE_CU(cuMemFree_v2(managed), CUDA_SUCCESS);
    return std::string();
  }), "");
}

}  // namespace
}  // namespace fgpu::sim::testing
