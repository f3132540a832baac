// Process-level tests of the interposition mechanism: real programs (fgpu-probe and
// fgpu_hook_lookup_helper) on the simulated driver, with and without LD_PRELOAD=libfgpu.so.
//
// Which object an entry point lies in is read with dladdr inside the helper: comparing
// addresses inside the process proves nothing, because the dlsym override answers both the
// lookup and the reference it would be compared with (the probe's `same_as` is such a
// comparison — useful to check that nothing else changed, not to tell wrapper from driver).
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "hook/interpose/process_test_support.h"

namespace fgpu::hook {
namespace {

using testing::HookEnvironment;
using testing::Lines;
using testing::Preload;
using testing::ProcessResult;

constexpr const char* kHookFile = "libfgpu.so";
constexpr const char* kCudaFile = "libcuda.so.1";
constexpr const char* kNvmlFile = "libnvidia-ml.so.1";
constexpr const char* kFailureSuffix = "; set FGPU_DISABLE=1 to run without fgpu";

const std::set<std::string>& HookedNames() {
  static const std::set<std::string> names = {
#define FGPU_HOOK(name) #name,
#include "hook/interpose/hooked_symbols.inc"
#undef FGPU_HOOK
#define FGPU_HOOK_NVML(name) #name,
#include "hook/interpose/hooked_nvml.inc"
#undef FGPU_HOOK_NVML
  };
  return names;
}

// One line of the helper: how a name was looked up and where the answer lies.
struct Lookup {
  std::string how, name, version, flags, rc, status, file, symbol;
  std::string Key() const { return how + " " + name + " " + version + " " + flags; }
  bool found() const { return file != "null"; }
};

std::map<std::string, Lookup> ParseHelper(const ProcessResult& result) {
  EXPECT_EQ(result.exit_code, 0) << result.err;
  std::map<std::string, Lookup> lookups;
  for (const std::string& line : Lines(result.out)) {
    std::istringstream in(line);
    Lookup lookup;
    in >> lookup.how >> lookup.name >> lookup.version >> lookup.flags >> lookup.rc >> lookup.status >> lookup.file >>
        lookup.symbol;
    EXPECT_FALSE(in.fail()) << line;
    lookups[lookup.Key()] = lookup;
  }
  return lookups;
}

class InterposeTest : public ::testing::Test {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_THREAD__)
    // A ThreadSanitizer runtime must start before anything else in the process, which a
    // preloaded instrumented library cannot arrange.
    GTEST_SKIP() << "LD_PRELOAD of a ThreadSanitizer-instrumented libfgpu.so is not supported";
#endif
  }
  std::map<std::string, Lookup> RunHelper(const std::vector<std::string>& args, const std::vector<std::string>& env,
                                          const char* helper = FGPU_HOOK_HELPER_PATH) {
    std::vector<std::string> argv = {helper};
    argv.insert(argv.end(), args.begin(), args.end());
    return ParseHelper(sim_.Run(argv, env));
  }
  std::vector<std::string> Enforcing() { return {Preload(), "FGPU_SLICE=" + slice_}; }

  HookEnvironment sim_;
  std::string slice_ = sim_.CreateSlice();
};

TEST_F(InterposeTest, WithoutThePreloadEverythingIsTheDriver) {
  const auto lookups = RunHelper({}, {});
  ASSERT_FALSE(lookups.empty());
  for (const auto& [key, lookup] : lookups) {
    if (lookup.how == "rtld_next") continue;
    EXPECT_NE(lookup.file, kHookFile) << key;
  }
  EXPECT_EQ(lookups.at("rtld_next dlsym - -").file, "libc.so.6");
}

TEST_F(InterposeTest, DlsymHandsOutWrappersForHookedNamesOnly) {
  for (const char* getter : {"dlsym", "direct"}) {
    SCOPED_TRACE(getter);
    const auto lookups = RunHelper({"--getter", getter}, Enforcing());
    for (const std::string& name : HookedNames()) {
      const Lookup& lookup = lookups.at("dlsym " + name + " - -");
      EXPECT_EQ(lookup.file, kHookFile) << name;
      EXPECT_EQ(lookup.symbol, name);
    }
    EXPECT_EQ(lookups.at("dlsym cuDeviceGet - -").file, kCudaFile);
    EXPECT_EQ(lookups.at("dlsym cuMemcpyHtoD_v2 - -").file, kCudaFile);
    EXPECT_EQ(lookups.at("dlsym cuStreamQuery_ptsz - -").file, kCudaFile);
    EXPECT_EQ(lookups.at("dlsym nvmlInit_v2 - -").file, kNvmlFile);
    // Names the library lacks stay NULL, hooked-looking or not.
    EXPECT_FALSE(lookups.at("dlsym cuMemAlloc_v3 - -").found());
    EXPECT_FALSE(lookups.at("dlsym cuNoSuchFunction - -").found());
    EXPECT_FALSE(lookups.at("dlsym nvmlDeviceGetMemoryInfo_v3 - -").found());
    EXPECT_FALSE(lookups.at("dlsym cublasCreate_v2 - -").found());
  }
}

// cuGetProcAddress[_v2] keep the driver's code, status and choice of variant (version and
// _ptsz), and replace exactly the hooked variants by our wrapper of the same name.
TEST_F(InterposeTest, GetProcAddressSubstitutesByAddressAndKeepsEverythingElse) {
  const auto baseline = RunHelper({"--getter", "direct"}, {});
  for (const char* getter : {"dlsym", "direct"}) {
    SCOPED_TRACE(getter);
    const auto lookups = RunHelper({"--getter", getter}, Enforcing());
    int wrapped = 0, per_thread = 0, not_found = 0;
    for (const auto& [key, lookup] : lookups) {
      if (lookup.how != "getter" && lookup.how != "getter_v2") continue;
      const Lookup& expected = baseline.at(key);
      EXPECT_EQ(lookup.rc, expected.rc) << key;
      EXPECT_EQ(lookup.status, expected.status) << key;
      EXPECT_EQ(lookup.symbol, expected.symbol) << key;
      EXPECT_EQ(lookup.found(), expected.found()) << key;
      if (!lookup.found()) {
        ++not_found;
        continue;
      }
      if (HookedNames().count(lookup.symbol) != 0) {
        EXPECT_EQ(lookup.file, kHookFile) << key;
        ++wrapped;
        if (lookup.symbol.ends_with("_ptsz")) ++per_thread;
      } else {
        EXPECT_EQ(lookup.file, kCudaFile) << key;
      }
    }
    EXPECT_GT(wrapped, 100);
    EXPECT_GT(per_thread, 4);
    EXPECT_GT(not_found, 10);  // unknown names, versions too old, and the 11.3 getter at 11030

    // The getter asked for itself is our getter, of the ABI the version selects.
    EXPECT_EQ(lookups.at("getter_v2 cuGetProcAddress 12000 0").symbol, "cuGetProcAddress_v2");
    EXPECT_EQ(lookups.at("getter_v2 cuGetProcAddress 12000 0").file, kHookFile);
    EXPECT_EQ(lookups.at("getter cuGetProcAddress 11030 0").symbol, "cuGetProcAddress");
    EXPECT_EQ(lookups.at("getter cuGetProcAddress 11030 0").file, kHookFile);
    // ... and what it returns is wrapped again.
    const Lookup& chained_v2 = lookups.at("chained cuMemAlloc 12000 0");
    EXPECT_EQ(chained_v2.rc, "0");
    EXPECT_EQ(chained_v2.file, kHookFile);
    EXPECT_EQ(chained_v2.symbol, "cuMemAlloc_v2");
    const Lookup& chained = lookups.at("chained cuLaunchKernel 11030 2");
    EXPECT_EQ(chained.file, kHookFile);
    EXPECT_EQ(chained.symbol, "cuLaunchKernel_ptsz");
  }
}

TEST_F(InterposeTest, RtldNextKeepsTheCallersIdentity) {
  const auto lookups = RunHelper({}, Enforcing());
  // Relative to the helper executable, the next "dlsym" is our override.
  const Lookup& next = lookups.at("rtld_next dlsym - -");
  EXPECT_EQ(next.file, kHookFile);
  EXPECT_EQ(next.symbol, "dlsym");
}

TEST_F(InterposeTest, RtldDefaultFindsOurExportOnlyWhereTheDriverIsGlobal) {
  {
    // libcuda.so.1 neither linked nor opened RTLD_GLOBAL: the global scope has no driver, and
    // our own export must not make a cu* name appear there.
    const auto lookups = RunHelper({"--open", "local"}, Enforcing(), FGPU_HOOK_UNLINKED_HELPER_PATH);
    EXPECT_FALSE(lookups.at("rtld_default cuInit - -").found());
    EXPECT_FALSE(lookups.at("rtld_default cuDeviceGet - -").found());
    // Lookups on the handle are unaffected.
    EXPECT_EQ(lookups.at("dlsym cuInit - -").file, kHookFile);
    EXPECT_EQ(lookups.at("getter_v2 cuMemAlloc 12000 0").file, kHookFile);
  }
  for (const char* helper : {FGPU_HOOK_UNLINKED_HELPER_PATH, FGPU_HOOK_HELPER_PATH}) {
    SCOPED_TRACE(helper);
    const auto lookups = RunHelper({"--open", "global"}, Enforcing(), helper);
    EXPECT_EQ(lookups.at("rtld_default cuInit - -").file, kHookFile);
    EXPECT_EQ(lookups.at("rtld_default cuInit - -").symbol, "cuInit");
    EXPECT_EQ(lookups.at("rtld_default cuDeviceGet - -").file, kCudaFile);
    const auto disabled = RunHelper({"--open", "global"}, {Preload(), "FGPU_DISABLE=1"}, helper);
    EXPECT_EQ(disabled.at("rtld_default cuInit - -").file, kCudaFile);
  }
}

TEST_F(InterposeTest, DisabledHandsOutTheDriversFunctions) {
  const auto baseline = RunHelper({"--getter", "direct"}, {});
  // FGPU_SLICE deliberately unset: pass-through needs no slice.
  const auto lookups = RunHelper({"--getter", "direct"}, {Preload(), "FGPU_DISABLE=1"});
  for (const auto& [key, lookup] : lookups) {
    if (lookup.how == "rtld_next") continue;  // our override is still the next dlsym
    if (lookup.how == "chained") continue;    // through the driver's own getter: see below
    const Lookup& expected = baseline.at(key);
    EXPECT_EQ(lookup.rc, expected.rc) << key;
    EXPECT_EQ(lookup.status, expected.status) << key;
    EXPECT_EQ(lookup.file, expected.file) << key;
    EXPECT_EQ(lookup.symbol, expected.symbol) << key;
  }
  // Through the driver's own getter (dlsym'd) the variant choice is the driver's. Which file
  // its answer lies in is the driver's business: the simulated libcuda takes the address of
  // its exports through the global scope, so under LD_PRELOAD it answers with our export.
  const auto via_driver = RunHelper({"--getter", "dlsym"}, {Preload(), "FGPU_DISABLE=1"});
  for (const auto& [key, lookup] : via_driver) {
    if (lookup.how == "dlsym") {
      EXPECT_NE(lookup.file, kHookFile) << key;
    }
    if (lookup.how != "getter" && lookup.how != "getter_v2" && lookup.how != "chained") continue;
    EXPECT_EQ(lookup.rc, baseline.at(key).rc) << key;
    EXPECT_EQ(lookup.symbol, baseline.at(key).symbol) << key;
  }
}

// fgpu-probe's own view of cuGetProcAddress, in every lookup mode, is unchanged by the hook:
// same codes, statuses, found flags and (consistently answered) variant names.
TEST_F(InterposeTest, ProbeSymbolsAreUnchangedInEveryLookupMode) {
  for (const char* mode : {"direct", "dlsym", "procaddress", "procaddress_v2"}) {
    SCOPED_TRACE(mode);
    const ProcessResult baseline = sim_.Run({FGPU_PROBE_PATH, "--lookup", mode, "symbols"}, {});
    const ProcessResult hooked = sim_.Run({FGPU_PROBE_PATH, "--lookup", mode, "symbols"}, Enforcing());
    ASSERT_EQ(baseline.exit_code, 0) << baseline.err;
    ASSERT_EQ(hooked.exit_code, 0) << hooked.err;
    EXPECT_EQ(hooked.err, "");  // quiet
    const std::vector<std::string> expected = Lines(baseline.out), actual = Lines(hooked.out);
    ASSERT_EQ(actual.size(), expected.size());
    ASSERT_GT(actual.size(), 100u);
    for (size_t i = 0; i < actual.size(); ++i) EXPECT_EQ(actual[i], expected[i]);
  }
}

TEST_F(InterposeTest, EnforcingProbeRunsInEveryLookupMode) {
  for (const char* mode : {"direct", "dlsym", "procaddress", "procaddress_v2"}) {
    const ProcessResult result = sim_.Run({FGPU_PROBE_PATH, "--lookup", mode, "info"}, Enforcing());
    EXPECT_EQ(result.exit_code, 0) << mode << ": " << result.out << result.err;
    EXPECT_EQ(result.err, "") << mode;
  }
}

// A slice that cannot be used fails cuInit closed with one line on stderr, in every lookup mode.
class FailClosedTest : public InterposeTest {
 protected:
  void ExpectRefused(const std::vector<std::string>& env, const std::string& reason_prefix) {
    for (const char* mode : {"direct", "dlsym", "procaddress", "procaddress_v2"}) {
      SCOPED_TRACE(mode);
      const ProcessResult result = sim_.Run({FGPU_PROBE_PATH, "--lookup", mode, "info"}, env);
      EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
      const std::vector<std::string> lines = Lines(result.err);
      ASSERT_EQ(lines.size(), 1u) << result.err;
      EXPECT_TRUE(lines[0].starts_with("fgpu: " + reason_prefix)) << lines[0];
      EXPECT_TRUE(lines[0].ends_with(kFailureSuffix)) << lines[0];
      const nlohmann::json error = nlohmann::json::parse(Lines(result.out).at(0));
      EXPECT_EQ(error["event"], "error");
      EXPECT_EQ(error["call"], "cuInit");
      EXPECT_EQ(error["name"], "CUDA_ERROR_NOT_INITIALIZED");
    }
  }
};

TEST_F(FailClosedTest, MissingSliceVariable) {
  ExpectRefused({Preload()}, "FGPU_SLICE is not set");
  ExpectRefused({Preload(), "FGPU_SLICE="}, "FGPU_SLICE is not set");
}

TEST_F(FailClosedTest, MissingSliceDirectory) {
  ExpectRefused({Preload(), "FGPU_SLICE=" + sim_.dir() + "/no-such-slice"},
                "cannot use slice " + sim_.dir() + "/no-such-slice: ");
}

TEST_F(FailClosedTest, GarbageSlice) {
  const std::string garbage = sim_.dir() + "/garbage";
  std::filesystem::create_directory(garbage);
  std::ofstream(garbage + "/limits") << std::string(4096, 'x');
  std::ofstream(garbage + "/ledger") << std::string(4096, 'y');
  ExpectRefused({Preload(), "FGPU_SLICE=" + garbage}, "cannot use slice " + garbage + ": ");
}

TEST_F(FailClosedTest, DisableNeedsNoSlice) {
  const ProcessResult result = sim_.Run({FGPU_PROBE_PATH, "info"}, {Preload(), "FGPU_DISABLE=1"});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(result.err, "");
}

}  // namespace
}  // namespace fgpu::hook
