#include "hook/graph_accounting.h"

#include <gtest/gtest.h>

#include "hook/memory_test_support.h"
#include "slice/slice.h"

namespace fgpu::hook {
namespace {

using testing::FakeDriver;
using testing::kMiB;
using testing::TestSlice;

// What the fake driver reports as reserved for graphs, per device; absent: the query fails.
std::map<CUdevice, uint64_t>* g_reported = nullptr;

CUresult FakeGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void* value) {
  if (attr != CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT || g_reported->count(device) == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *static_cast<cuuint64_t*>(value) = (*g_reported)[device];
  return CUDA_SUCCESS;
}

CUgraph Graph(uintptr_t n) { return reinterpret_cast<CUgraph>(n); }
CUgraphNode Node(uintptr_t n) { return reinterpret_cast<CUgraphNode>(n); }
CUgraphExec Exec(uintptr_t n) { return reinterpret_cast<CUgraphExec>(n); }

// Fake devices 0 and 1 in the slice (caps 100 MiB and 40 MiB), fake device 2 outside it.
class GraphAccountingTest : public ::testing::Test {
 protected:
  GraphAccountingTest()
      : slice_({0, 1}, {100 * kMiB, 40 * kMiB}),
        calls_(fake_.Calls()),
        devices_(DeviceMapSources{slice_.ledger(), calls_.device_get_uuid, calls_.allocation_granularity,
                                  calls_.nvml_device_get_uuid}),
        table_(10),
        memory_(slice_.ledger(), &devices_, &table_, &calls_),
        graphs_(&memory_, &FakeGraphMemAttribute) {
    fake_.device_count = 3;
    g_reported = &reported_;
  }
  ~GraphAccountingTest() override { g_reported = nullptr; }

  uint64_t Used(int slice_device = 0) const { return slice_.ledger()->Used(slice_device); }

  // A graph with one allocation node of `bytes` on `device` (at `dptr`), freed inside if `freed`.
  void AddGraph(uintptr_t graph, uint64_t bytes, CUdeviceptr dptr, bool freed, CUdevice device = 0) {
    graphs_.AddAllocNode(Graph(graph), Node(graph * 10), device, bytes, dptr);
    if (freed) graphs_.AddFreeNode(Graph(graph), dptr);
  }
  CUresult Instantiate(uintptr_t graph, uintptr_t exec, bool uploads = false, CUresult rc = CUDA_SUCCESS,
                       bool* called = nullptr) {
    return graphs_.Instantiate(Graph(graph), uploads, [&](CUgraphExec* out) {
      if (called != nullptr) *called = true;
      if (rc == CUDA_SUCCESS) *out = Exec(exec);
      return rc;
    });
  }
  CUresult Launch(uintptr_t exec, CUresult rc = CUDA_SUCCESS, bool* called = nullptr) {
    return graphs_.Launch(Exec(exec), [&] {
      if (called != nullptr) *called = true;
      return rc;
    });
  }
  CUresult Destroy(uintptr_t exec, CUresult rc = CUDA_SUCCESS) {
    return graphs_.ExecDestroy(Exec(exec), [&] { return rc; });
  }
  CUresult Trim(CUdevice device, CUresult rc = CUDA_SUCCESS) {
    return graphs_.Trim(device, [&] { return rc; });
  }

  FakeDriver fake_;
  TestSlice slice_;
  RealCalls calls_;
  DeviceMap devices_;
  PointerTable table_;
  MemoryAccounting memory_;
  GraphAccounting graphs_;
  std::map<CUdevice, uint64_t> reported_;
};

TEST_F(GraphAccountingTest, ChargedOnFirstLaunchRoundedPerNode) {
  graphs_.AddAllocNode(Graph(1), Node(10), 0, 3 * kMiB, 0x1000);
  graphs_.AddAllocNode(Graph(1), Node(11), 0, 1 * kMiB, 0x2000);
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u) << "instantiation reserves nothing";
  ASSERT_EQ(Launch(100), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 6 * kMiB) << "each node rounded up to the 2 MiB granularity";
  ASSERT_EQ(Launch(100), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 6 * kMiB) << "a relaunch of a resident exec charges nothing more";
  EXPECT_EQ(graphs_.ResidentBytes(0), 6 * kMiB);
}

TEST_F(GraphAccountingTest, UploadChargesLikeALaunch) {
  AddGraph(1, 10 * kMiB, 0x1000, true);
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  ASSERT_EQ(graphs_.Launch(Exec(100), [] { return CUDA_SUCCESS; }), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 10 * kMiB);
}

TEST_F(GraphAccountingTest, OverTheCapTheDriverIsNotCalled) {
  AddGraph(1, 60 * kMiB, 0x1000, true);
  AddGraph(2, 60 * kMiB, 0x2000, true);
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  ASSERT_EQ(Instantiate(2, 200), CUDA_SUCCESS);
  ASSERT_EQ(Launch(100), CUDA_SUCCESS);
  bool called = false;
  EXPECT_EQ(Launch(200, CUDA_SUCCESS, &called), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_FALSE(called);
  EXPECT_EQ(Used(), 60 * kMiB);
  ASSERT_EQ(Destroy(100), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
  EXPECT_EQ(Launch(200), CUDA_SUCCESS) << "room again after the first exec is destroyed";
  EXPECT_EQ(Used(), 60 * kMiB);
}

TEST_F(GraphAccountingTest, DriverErrorOnFirstLaunchRollsBack) {
  AddGraph(1, 10 * kMiB, 0x1000, true);
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  EXPECT_EQ(Launch(100, CUDA_ERROR_INVALID_HANDLE), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(Used(), 0u);
  EXPECT_EQ(Launch(100, CUDA_ERROR_OUT_OF_MEMORY), CUDA_ERROR_OUT_OF_MEMORY) << "the driver's own OOM";
  EXPECT_EQ(Used(), 0u);
  ASSERT_EQ(Launch(100), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 10 * kMiB) << "not resident after failures: the next success charges";
}

TEST_F(GraphAccountingTest, FailedDestroyKeepsTheCharge) {
  AddGraph(1, 10 * kMiB, 0x1000, true);
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  ASSERT_EQ(Launch(100), CUDA_SUCCESS);
  EXPECT_EQ(Destroy(100, CUDA_ERROR_INVALID_VALUE), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(Used(), 10 * kMiB);
  EXPECT_EQ(Destroy(100), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
  EXPECT_EQ(Destroy(100, CUDA_ERROR_INVALID_VALUE), CUDA_ERROR_INVALID_VALUE) << "forwarded, nothing to credit";
  EXPECT_EQ(Used(), 0u);
}

TEST_F(GraphAccountingTest, NeverLaunchedDestroyCreditsNothing) {
  AddGraph(1, 10 * kMiB, 0x1000, true);
  AddGraph(2, 10 * kMiB, 0x2000, true);
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  ASSERT_EQ(Instantiate(2, 200), CUDA_SUCCESS);
  ASSERT_EQ(Launch(200), CUDA_SUCCESS);
  ASSERT_EQ(Destroy(100), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 10 * kMiB);
}

TEST_F(GraphAccountingTest, UnknownGraphsAndExecsAreForwardedUntouched) {
  bool called = false;
  EXPECT_EQ(Instantiate(7, 700, false, CUDA_SUCCESS, &called), CUDA_SUCCESS);
  EXPECT_TRUE(called);
  called = false;
  EXPECT_EQ(Launch(700, CUDA_ERROR_INVALID_VALUE, &called), CUDA_ERROR_INVALID_VALUE);
  EXPECT_TRUE(called);
  EXPECT_EQ(Launch(700), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
  graphs_.AddFreeNode(Graph(8), 0x5000);  // a graph that only frees: nothing to charge
  called = false;
  EXPECT_EQ(Instantiate(8, 800, true, CUDA_SUCCESS, &called), CUDA_SUCCESS);
  EXPECT_TRUE(called);
  EXPECT_EQ(Used(), 0u);
}

TEST_F(GraphAccountingTest, InstantiateFailureLeavesNoExec) {
  AddGraph(1, 10 * kMiB, 0x1000, true);
  EXPECT_EQ(Instantiate(1, 100, false, CUDA_ERROR_INVALID_VALUE), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(Launch(100), CUDA_SUCCESS) << "unknown exec: forwarded";
  EXPECT_EQ(Used(), 0u);
}

TEST_F(GraphAccountingTest, UploadAtInstantiationReservesFirst) {
  AddGraph(1, 60 * kMiB, 0x1000, true);
  AddGraph(2, 60 * kMiB, 0x2000, true);
  ASSERT_EQ(Instantiate(1, 100, /*uploads=*/true), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 60 * kMiB);
  bool called = false;
  EXPECT_EQ(Instantiate(2, 200, true, CUDA_SUCCESS, &called), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_FALSE(called);
  EXPECT_EQ(Instantiate(2, 200, true, CUDA_ERROR_INVALID_VALUE), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(Destroy(100), CUDA_SUCCESS);
  EXPECT_EQ(Instantiate(2, 200, true, CUDA_ERROR_INVALID_VALUE), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(Used(), 0u) << "a failed instantiation rolls its upload back";
  ASSERT_EQ(Instantiate(2, 200, true), CUDA_SUCCESS);
  ASSERT_EQ(Launch(200), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 60 * kMiB) << "uploaded at instantiation: the launch charges nothing more";
}

TEST_F(GraphAccountingTest, DeviceOutsideTheSliceIsRefused) {
  AddGraph(1, 2 * kMiB, 0x1000, true, /*device=*/2);
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  bool called = false;
  EXPECT_EQ(Launch(100, CUDA_SUCCESS, &called), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_FALSE(called);
}

TEST_F(GraphAccountingTest, DevicesAreChargedAllOrNothing) {
  graphs_.AddAllocNode(Graph(1), Node(10), 0, 20 * kMiB, 0x1000);
  graphs_.AddAllocNode(Graph(1), Node(11), 1, 50 * kMiB, 0x2000);  // over device 1's 40 MiB
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  bool called = false;
  EXPECT_EQ(Launch(100, CUDA_SUCCESS, &called), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_FALSE(called);
  EXPECT_EQ(Used(0), 0u) << "device 0's part rolled back";
  EXPECT_EQ(Used(1), 0u);
  graphs_.AddAllocNode(Graph(2), Node(20), 0, 20 * kMiB, 0x3000);
  graphs_.AddAllocNode(Graph(2), Node(21), 1, 30 * kMiB, 0x4000);
  ASSERT_EQ(Instantiate(2, 200), CUDA_SUCCESS);
  ASSERT_EQ(Launch(200), CUDA_SUCCESS);
  EXPECT_EQ(Used(0), 20 * kMiB);
  EXPECT_EQ(Used(1), 30 * kMiB);
  ASSERT_EQ(Destroy(200), CUDA_SUCCESS);
  EXPECT_EQ(Used(0), 0u);
  EXPECT_EQ(Used(1), 0u);
}

TEST_F(GraphAccountingTest, TrimReleasesWhatTheDriverGaveBack) {
  AddGraph(1, 10 * kMiB, 0x1000, /*freed=*/true);
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  ASSERT_EQ(Launch(100), CUDA_SUCCESS);
  reported_[0] = 10 * kMiB;  // the launch has not completed: the driver kept it
  ASSERT_EQ(Trim(0), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 10 * kMiB);
  reported_[0] = 0;
  ASSERT_EQ(Trim(0), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u);
  ASSERT_EQ(Launch(100), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 10 * kMiB) << "trimmed: the next launch maps (and charges) it again";
  ASSERT_EQ(Destroy(100), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 0u) << "credited once";
}

TEST_F(GraphAccountingTest, TrimKeepsExecsThatDoNotFreeEverything) {
  AddGraph(1, 10 * kMiB, 0x1000, /*freed=*/false);
  graphs_.AddAllocNode(Graph(2), Node(20), 0, 4 * kMiB, 0x2000);
  graphs_.AddAllocNode(Graph(2), Node(21), 0, 4 * kMiB, 0x3000);
  graphs_.AddFreeNode(Graph(2), 0x2000);  // one of two freed inside
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  ASSERT_EQ(Instantiate(2, 200), CUDA_SUCCESS);
  ASSERT_EQ(Launch(100), CUDA_SUCCESS);
  ASSERT_EQ(Launch(200), CUDA_SUCCESS);
  reported_[0] = 0;  // even if the driver claims otherwise
  ASSERT_EQ(Trim(0), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 18 * kMiB);
}

TEST_F(GraphAccountingTest, TrimReleasesNothingWhenTheDriverCannotSayOrFails) {
  AddGraph(1, 10 * kMiB, 0x1000, true);
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  ASSERT_EQ(Launch(100), CUDA_SUCCESS);
  ASSERT_EQ(Trim(0), CUDA_SUCCESS) << "no attribute for device 0";
  EXPECT_EQ(Used(), 10 * kMiB);
  reported_[0] = 0;
  EXPECT_EQ(Trim(0, CUDA_ERROR_INVALID_DEVICE), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(Used(), 10 * kMiB);
  ASSERT_EQ(Trim(1), CUDA_SUCCESS) << "another device";
  EXPECT_EQ(Used(), 10 * kMiB);
}

TEST_F(GraphAccountingTest, TrimReleasesOldestLaunchesFirstDownToTheDriversNumber) {
  AddGraph(1, 10 * kMiB, 0x1000, true);
  AddGraph(2, 10 * kMiB, 0x2000, true);
  AddGraph(3, 10 * kMiB, 0x3000, true);
  for (uintptr_t g : {1, 2, 3}) ASSERT_EQ(Instantiate(g, g * 100), CUDA_SUCCESS);
  ASSERT_EQ(Launch(200), CUDA_SUCCESS);
  ASSERT_EQ(Launch(100), CUDA_SUCCESS);
  ASSERT_EQ(Launch(300), CUDA_SUCCESS);
  reported_[0] = 10 * kMiB;  // one launch still running
  ASSERT_EQ(Trim(0), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 10 * kMiB);
  bool called = false;
  ASSERT_EQ(Launch(300, CUDA_SUCCESS, &called), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 10 * kMiB) << "the newest launch is the one kept resident";
  ASSERT_EQ(Launch(200), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 20 * kMiB) << "an older one was trimmed and is charged again";
}

TEST_F(GraphAccountingTest, GraphDestroyDoesNotTouchItsExecs) {
  AddGraph(1, 10 * kMiB, 0x1000, true);
  ASSERT_EQ(Instantiate(1, 100), CUDA_SUCCESS);
  graphs_.GraphDestroyed(Graph(1));
  ASSERT_EQ(Launch(100), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 10 * kMiB);
  bool called = false;
  EXPECT_EQ(Instantiate(1, 101, false, CUDA_SUCCESS, &called), CUDA_SUCCESS);
  EXPECT_TRUE(called);
  ASSERT_EQ(Launch(101), CUDA_SUCCESS);
  EXPECT_EQ(Used(), 10 * kMiB) << "a forgotten graph (a reused handle) instantiates untracked";
}

}  // namespace
}  // namespace fgpu::hook
