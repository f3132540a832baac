// RTLD_DEEPBIND cannot take a library past libfgpu (deep_bind.h, entry_dlopen.cc): the flag
// rule as a unit, and processes on the simulated GPU that open, with RTLD_DEEPBIND, a library
// linking the driver itself (testdata/deepbind_library.cc) from a helper that does not
// (testdata/deepbind_helper.cc).
#include "hook/interpose/deep_bind.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "core/units.h"
#include "hook/interpose/process_test_support.h"
#include "slice/slice.h"

namespace fgpu::hook {
namespace {

using testing::HookEnvironment;
using testing::Lines;
using testing::Preload;
using testing::ProcessResult;

constexpr uint64_t kDeepBindCap = 512 * kMiB;  // the environment's context takes 100 MiB of it
constexpr int kOutOfMemory = 2;        // CUDA_ERROR_OUT_OF_MEMORY

TEST(DeepBindModeTest, ClearsDeepBindAndKeepsEveryOtherBit) {
  for (const int mode : {RTLD_NOW | RTLD_DEEPBIND, RTLD_LAZY | RTLD_GLOBAL | RTLD_DEEPBIND | RTLD_NODELETE,
                         RTLD_NOW | RTLD_NOLOAD | RTLD_DEEPBIND, RTLD_LAZY | RTLD_LOCAL | RTLD_DEEPBIND}) {
    EXPECT_EQ(OpenModeFor(mode, /*pass_through=*/false), mode & ~RTLD_DEEPBIND) << mode;
    EXPECT_EQ(OpenModeFor(mode, /*pass_through=*/true), mode) << mode;
  }
  EXPECT_EQ(OpenModeFor(RTLD_NOW | RTLD_GLOBAL, false), RTLD_NOW | RTLD_GLOBAL);
}

// What the helper printed.
struct HelperRun {
  int exit_code = -1;
  std::string err;
  bool opened = false;
  std::string open_error;
  int global = -1;
  std::string bound;
  int start = -1;
  uint64_t total = 0;
  std::vector<int> allocs;  // CUresult of each allocation, up to the first failure
};

HelperRun Parse(const ProcessResult& result) {
  HelperRun run;
  run.exit_code = result.exit_code;
  run.err = result.err;
  for (const std::string& line : Lines(result.out)) {
    std::istringstream in(line);
    std::string step;
    in >> step;
    if (step == "open") {
      int ok = 0;
      in >> ok;
      run.opened = ok == 1;
      std::getline(in >> std::ws, run.open_error);
    } else if (step == "global") {
      in >> run.global;
    } else if (step == "bound") {
      in >> run.bound;
    } else if (step == "start") {
      in >> run.start;
    } else if (step == "total") {
      in >> run.total;
    } else if (step == "alloc") {
      int index = 0, rc = 0;
      in >> index >> rc;
      run.allocs.push_back(rc);
    }
  }
  return run;
}

class DeepBindTest : public ::testing::Test {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "LD_PRELOAD of a ThreadSanitizer-instrumented libfgpu.so is not supported";
#endif
  }
  HelperRun Helper(const std::string& library, const std::string& open, const std::string& flags,
                   const std::vector<std::string>& env, int count = 16) {
    return Parse(sim_.Run({FGPU_HOOK_DEEPBIND_HELPER_PATH, library, open, flags, "128", std::to_string(count)}, env));
  }
  std::vector<std::string> Enforcing() const { return {Preload(), "FGPU_SLICE=" + slice_}; }
  slice::LedgerCounters Counters() const {
    Result<slice::SliceAdmin> admin = slice::SliceAdmin::Open(slice_);
    EXPECT_TRUE(admin.ok()) << admin.status().message();
    if (!admin.ok()) return {};
    Result<slice::LedgerCounters> counters = admin->Counters();
    EXPECT_TRUE(counters.ok()) << counters.status().message();
    return counters.ok() ? *counters : slice::LedgerCounters{};
  }

  HookEnvironment sim_;
  std::string slice_ = sim_.CreateSlice(kDeepBindCap);
};

// The escape this closes: the library's own driver would have let it allocate the whole GPU.
TEST_F(DeepBindTest, ALibraryOpenedWithDeepBindIsChargedAndStoppedAtTheCap) {
  uint64_t oom_refusals = 0;
  for (const char* open : {"dlopen", "dlmopen"}) {
    SCOPED_TRACE(open);
    const HelperRun run = Helper(FGPU_HOOK_DEEPBIND_LIBRARY_PATH, open, "now,deepbind", Enforcing());
    ASSERT_EQ(run.exit_code, 0) << run.err;
    ASSERT_TRUE(run.opened) << run.open_error;
    EXPECT_EQ(run.bound, "libfgpu.so") << "the library's cuMemAlloc_v2 must bind to the wrapper";
    EXPECT_EQ(run.start, 0);
    EXPECT_EQ(run.total, kDeepBindCap) << "the slice's view, not the device's";
    // 100 MiB of context, then 3 × 128 MiB fit in 512 MiB; the 4th is refused by the slice.
    EXPECT_EQ(run.allocs, (std::vector<int>{0, 0, 0, kOutOfMemory}));
    EXPECT_EQ(run.err, "");
    EXPECT_EQ(Counters().oom_refusals, ++oom_refusals);
  }
}

TEST_F(DeepBindTest, EveryOtherFlagIsKept) {
  // RTLD_GLOBAL kept: the library's symbols join the global scope; RTLD_LOCAL: they do not.
  HelperRun run = Helper(FGPU_HOOK_DEEPBIND_LIBRARY_PATH, "dlopen", "lazy,global,deepbind", Enforcing(), 1);
  ASSERT_TRUE(run.opened) << run.open_error;
  EXPECT_EQ(run.global, 1);
  EXPECT_EQ(run.bound, "libfgpu.so");
  run = Helper(FGPU_HOOK_DEEPBIND_LIBRARY_PATH, "dlopen", "now,local,nodelete,deepbind", Enforcing(), 1);
  ASSERT_TRUE(run.opened) << run.open_error;
  EXPECT_EQ(run.global, 0);
  // RTLD_NOLOAD kept: a library not loaded yet is not loaded, as without fgpu.
  run = Helper(FGPU_HOOK_DEEPBIND_LIBRARY_PATH, "dlopen", "now,noload,deepbind", Enforcing());
  const HelperRun baseline = Helper(FGPU_HOOK_DEEPBIND_LIBRARY_PATH, "dlopen", "now,noload", {});
  EXPECT_FALSE(baseline.opened);
  EXPECT_FALSE(run.opened);
  EXPECT_EQ(run.open_error, baseline.open_error);
}

// The override jumps to the real function, so glibc still sees the helper as the caller: its
// RUNPATH (the only place the library is) finds a bare name, for dlopen and dlmopen alike.
TEST_F(DeepBindTest, TheCallersSearchPathStillFindsTheLibrary) {
  const HelperRun baseline = Helper(FGPU_HOOK_DEEPBIND_LIBRARY_NAME, "dlopen", "now", {}, 1);
#if defined(__SANITIZE_ADDRESS__)
  // Without fgpu, the sanitizer runtime's own dlopen interceptor calls the real dlopen, which
  // then takes the runtime for the caller and misses the helper's RUNPATH. The override binds
  // glibc's versioned dlopen (docs/hook.md), past that interceptor, so with fgpu it is found.
  EXPECT_FALSE(baseline.opened);
#else
  ASSERT_TRUE(baseline.opened) << "the helper's RUNPATH must find it: " << baseline.open_error;
#endif
  for (const char* open : {"dlopen", "dlmopen"}) {
    for (const char* flags : {"now", "now,deepbind"}) {
      SCOPED_TRACE(std::string(open) + " " + flags);
      const HelperRun run = Helper(FGPU_HOOK_DEEPBIND_LIBRARY_NAME, open, flags, Enforcing(), 1);
      EXPECT_TRUE(run.opened) << run.open_error;
      EXPECT_EQ(run.bound, "libfgpu.so");
    }
  }
}

TEST_F(DeepBindTest, AFailedOpenReturnsTheRealDlerror) {
  const HelperRun baseline = Helper("libfgpu-no-such-library.so", "dlopen", "now", {});
  ASSERT_FALSE(baseline.opened);
  EXPECT_NE(baseline.open_error.find("libfgpu-no-such-library.so"), std::string::npos) << baseline.open_error;
  for (const char* open : {"dlopen", "dlmopen"}) {
    const HelperRun run = Helper("libfgpu-no-such-library.so", open, "now,deepbind", Enforcing());
    EXPECT_EQ(run.exit_code, 0) << run.err;
    EXPECT_FALSE(run.opened) << open;
    EXPECT_EQ(run.open_error, baseline.open_error) << open;
  }
}

// FGPU_DISABLE=1 promises a process as if fgpu were absent: the flag reaches the C library.
TEST_F(DeepBindTest, PassThroughKeepsDeepBind) {
  const HelperRun run =
      Helper(FGPU_HOOK_DEEPBIND_LIBRARY_PATH, "dlopen", "now,deepbind", {Preload(), "FGPU_DISABLE=1"}, 1);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  ASSERT_TRUE(run.opened) << run.open_error;
  EXPECT_EQ(run.bound, "libcuda.so.1") << "deep-bound: the library's own driver";
  EXPECT_GT(run.total, kDeepBindCap) << "the device, not the slice";
}

}  // namespace
}  // namespace fgpu::hook
