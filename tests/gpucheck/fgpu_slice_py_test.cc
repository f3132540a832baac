// scripts/gpu-check.d/fgpu_slice.py (the slice writer of the GPU check machine, which cannot
// build the fgpu CLI) against src/slice: a slice the script creates must open with
// SliceAdmin::Open and Ledger::Attach with every field as given, its `set-compute` must be
// SliceAdmin::SetCompute (same bytes, generation bumped, seen live by an attached Ledger), its
// `usage` must parse what SliceAdmin::Create writes, and both writers must produce identical files.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "core/units.h"
#include "slice/slice.h"

namespace fgpu::slice {
namespace {

constexpr const char* kUuid0 = "GPU-298eb0a9-0382-508d-f53d-1d6b45754293";
constexpr const char* kUuid1 = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";

std::string FindPython() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/python3";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

struct ScriptRun {
  int exit_code = -1;
  std::string out;
};

// python3 fgpu_slice.py ARGS...: exit status and stdout (stderr passes through to the test log).
ScriptRun RunScript(const std::string& python, const std::vector<std::string>& args) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipe_fds[1], 1);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    std::vector<std::string> argv_strings = {python, FGPU_SLICE_PY};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& arg : argv_strings) argv.push_back(arg.data());
    argv.push_back(nullptr);
    ::setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
    ::execv(python.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  ScriptRun run;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(pipe_fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    run.out.append(buffer, static_cast<size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  if (pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  return run;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class FgpuSlicePy : public ::testing::Test {
 protected:
  void SetUp() override {
    python_ = FindPython();
    if (python_.empty()) GTEST_SKIP() << "python3 not found on PATH";
    std::string pattern = (std::filesystem::temp_directory_path() / "fgpu-gpucheck-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    scratch_ = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    if (!scratch_.empty()) std::filesystem::remove_all(scratch_, ignored);
  }

  ScriptRun Script(const std::vector<std::string>& args) { return RunScript(python_, args); }

  std::string python_;
  std::string scratch_;
};

// A two-device spec with distinct compute settings on each device.
SliceSpec TwoDevices() {
  SliceSpec spec;
  spec.id = "gpucheck-two";
  spec.devices.push_back(DeviceLimit{kUuid0, 4 * kGiB, 30, ComputeMode::kCap, Tier::kLatency});
  spec.devices.push_back(DeviceLimit{kUuid1, 6 * kGiB, 70, ComputeMode::kCap, Tier::kLatency});
  return spec;
}

TEST_F(FgpuSlicePy, CreatedSliceOpensInCppWithEveryField) {
  const std::string dir = scratch_ + "/py";
  const ScriptRun created = Script({"create", dir, "--id", "py-slice", "--uuid", kUuid0, "--cap", std::to_string(4 * kGiB),
                              "--uuid", kUuid1, "--cap", std::to_string(6 * kGiB), "--share", "30", "--mode", "cap",
                              "--tier", "latency"});
  ASSERT_EQ(created.exit_code, 0);

  Result<SliceAdmin> admin = SliceAdmin::Open(dir);
  ASSERT_TRUE(admin.ok()) << admin.status().message();
  const SliceSpec& spec = admin->spec();
  EXPECT_EQ(spec.id, "py-slice");
  ASSERT_EQ(spec.devices.size(), 2u);
  EXPECT_EQ(spec.devices[0].uuid, kUuid0);
  EXPECT_EQ(spec.devices[1].uuid, kUuid1);
  EXPECT_EQ(spec.devices[0].memory_cap, 4 * kGiB);
  EXPECT_EQ(spec.devices[1].memory_cap, 6 * kGiB);
  for (const DeviceLimit& device : spec.devices) {
    EXPECT_EQ(device.compute_share, 30u);
    EXPECT_EQ(device.compute_mode, ComputeMode::kCap);
    EXPECT_EQ(device.tier, Tier::kLatency);
  }
  EXPECT_EQ(std::filesystem::status(dir + "/limits").permissions() & std::filesystem::perms::all,
            std::filesystem::perms(0644));
  EXPECT_EQ(std::filesystem::status(dir + "/ledger").permissions() & std::filesystem::perms::all,
            std::filesystem::perms(0666));

  // The workload side (the hook's view): the same fields, and the ledger takes charges.
  Result<Ledger*> ledger = Ledger::Attach(dir.c_str());
  ASSERT_TRUE(ledger.ok()) << ledger.status().message();
  Ledger& hook = **ledger;
  ASSERT_EQ(hook.device_count(), 2);
  EXPECT_EQ(hook.FindDevice(kUuid1), 1);
  EXPECT_EQ(hook.Cap(0), 4 * kGiB);
  EXPECT_EQ(hook.ComputeShare(1), 30u);
  EXPECT_EQ(hook.GetComputeMode(1), ComputeMode::kCap);
  EXPECT_EQ(hook.GetTier(1), Tier::kLatency);
  EXPECT_EQ(hook.LimitsGeneration(), 1u);
  ASSERT_TRUE(hook.Reserve(1, 3 * kGiB));
  EXPECT_FALSE(hook.Reserve(1, 4 * kGiB)) << "past the 6 GiB cap";

  // The script's usage reads the charge back: device word and this process's slot lanes.
  const ScriptRun usage = Script({"usage", dir});
  ASSERT_EQ(usage.exit_code, 0);
  EXPECT_NE(usage.out.find("\"id\": \"py-slice\", \"generation\": 1"), std::string::npos) << usage.out;
  EXPECT_NE(usage.out.find(std::string("{\"uuid\": \"") + kUuid1 + "\", \"cap\": " + std::to_string(6 * kGiB) +
                           ", \"share\": 30, \"mode\": \"cap\", \"tier\": \"latency\", \"used\": " +
                           std::to_string(3 * kGiB) + "}"),
            std::string::npos)
      << usage.out;
  EXPECT_NE(usage.out.find("\"state\": 2, \"pid\": " + std::to_string(::getpid())), std::string::npos) << usage.out;
  EXPECT_NE(usage.out.find("\"charged\": [0, " + std::to_string(3 * kGiB) + "]"), std::string::npos) << usage.out;

  // A live compute change by the script: the attached Ledger sees it and the generation moved.
  const ScriptRun changed = Script({"set-compute", dir, "--device", "1", "--share", "70", "--mode", "share", "--tier", "batch"});
  ASSERT_EQ(changed.exit_code, 0);
  EXPECT_NE(changed.out.find("\"generation_before\": 1, \"generation\": 2"), std::string::npos) << changed.out;
  EXPECT_EQ(hook.LimitsGeneration(), 2u);
  EXPECT_EQ(hook.ComputeShare(1), 70u);
  EXPECT_EQ(hook.GetComputeMode(1), ComputeMode::kShare);
  EXPECT_EQ(hook.GetTier(1), Tier::kBatch);
  EXPECT_EQ(hook.ComputeShare(0), 30u) << "device 0 untouched";
  EXPECT_EQ(hook.GetTier(0), Tier::kLatency);
  EXPECT_EQ(hook.Cap(1), 6 * kGiB);

  Result<SliceAdmin> reopened = SliceAdmin::Open(dir);
  ASSERT_TRUE(reopened.ok()) << reopened.status().message();
  EXPECT_EQ(reopened->spec().devices[1].compute_share, 70u);
  EXPECT_EQ(reopened->spec().devices[1].compute_mode, ComputeMode::kShare);
  EXPECT_EQ(reopened->spec().devices[1].tier, Tier::kBatch);
  hook.Release(1, 3 * kGiB);
}

TEST_F(FgpuSlicePy, DefaultsAreShareHundredStandard) {
  const std::string dir = scratch_ + "/py";
  ASSERT_EQ(Script({"create", dir, "--id", "plain", "--uuid", kUuid0, "--cap", "1048576"}).exit_code, 0);
  Result<SliceAdmin> admin = SliceAdmin::Open(dir);
  ASSERT_TRUE(admin.ok()) << admin.status().message();
  EXPECT_EQ(admin->spec().devices[0].compute_share, 100u);
  EXPECT_EQ(admin->spec().devices[0].compute_mode, ComputeMode::kShare);
  EXPECT_EQ(admin->spec().devices[0].tier, Tier::kStandard);
}

TEST_F(FgpuSlicePy, BothWritersProduceIdenticalFiles) {
  const SliceSpec spec = TwoDevices();
  const std::string cpp = scratch_ + "/cpp";
  const std::string py = scratch_ + "/py";
  ASSERT_TRUE(SliceAdmin::Create(cpp, spec).ok());
  ASSERT_EQ(Script({"create", py, "--id", spec.id, "--uuid", kUuid0, "--cap", std::to_string(4 * kGiB), "--uuid",
                    kUuid1, "--cap", std::to_string(6 * kGiB), "--share", "30", "--mode", "cap", "--tier", "latency"})
                .exit_code,
            0);
  // Per-device shares differ in TwoDevices(); the script sets one share for all, so align them
  // the way each side changes a live slice, which also compares SetCompute with set-compute.
  Result<SliceAdmin> admin = SliceAdmin::Open(cpp);
  ASSERT_TRUE(admin.ok()) << admin.status().message();
  ASSERT_TRUE(admin->SetCompute(1, 45, ComputeMode::kShare, Tier::kBatch).ok());
  ASSERT_EQ(Script({"set-compute", py, "--device", "1", "--share", "45", "--mode", "share", "--tier", "batch"}).exit_code,
            0);
  EXPECT_TRUE(ReadFile(cpp + "/ledger") == ReadFile(py + "/ledger")) << "ledger files differ";
  const std::string cpp_limits = ReadFile(cpp + "/limits");
  const std::string py_limits = ReadFile(py + "/limits");
  ASSERT_EQ(cpp_limits.size(), 104u + 2 * 64u);
  ASSERT_EQ(py_limits.size(), cpp_limits.size());
  for (size_t i = 0; i < cpp_limits.size(); ++i) {
    EXPECT_EQ(static_cast<int>(static_cast<unsigned char>(py_limits[i])),
              static_cast<int>(static_cast<unsigned char>(cpp_limits[i])))
        << "limits byte " << i;
  }
}

TEST_F(FgpuSlicePy, UsageParsesACppSlice) {
  SliceSpec spec = TwoDevices();
  spec.devices[1].compute_share = 70;
  spec.devices[1].compute_mode = ComputeMode::kShare;
  spec.devices[1].tier = Tier::kBatch;
  const std::string dir = scratch_ + "/cpp";
  Result<SliceAdmin> admin = SliceAdmin::Create(dir, spec);
  ASSERT_TRUE(admin.ok()) << admin.status().message();
  ASSERT_TRUE(admin->SetMemoryCap(0, 2 * kGiB).ok());  // generation 2

  const ScriptRun usage = Script({"usage", dir});
  ASSERT_EQ(usage.exit_code, 0);
  const std::string expected =
      std::string("{\"id\": \"gpucheck-two\", \"generation\": 2, \"devices\": [") + "{\"uuid\": \"" + kUuid0 +
      "\", \"cap\": " + std::to_string(2 * kGiB) + ", \"share\": 30, \"mode\": \"cap\", \"tier\": \"latency\", " +
      "\"used\": 0}, {\"uuid\": \"" + kUuid1 + "\", \"cap\": " + std::to_string(6 * kGiB) +
      ", \"share\": 70, \"mode\": \"share\", \"tier\": \"batch\", \"used\": 0}], \"processes\": []}\n";
  EXPECT_EQ(usage.out, expected);

  // set-compute on the C++ slice: seen by the admin's next Open, generation 3.
  ASSERT_EQ(Script({"set-compute", dir, "--share", "55"}).exit_code, 0);
  Result<SliceAdmin> reopened = SliceAdmin::Open(dir);
  ASSERT_TRUE(reopened.ok()) << reopened.status().message();
  EXPECT_EQ(reopened->spec().devices[0].compute_share, 55u);
  EXPECT_EQ(reopened->spec().devices[0].compute_mode, ComputeMode::kCap) << "mode unchanged when not given";
  EXPECT_EQ(reopened->spec().devices[0].tier, Tier::kLatency) << "tier unchanged when not given";
  EXPECT_NE(Script({"usage", dir}).out.find("\"generation\": 3"), std::string::npos);
}

TEST_F(FgpuSlicePy, RefusedChangesLeaveTheSliceAlone) {
  const std::string dir = scratch_ + "/cpp";
  ASSERT_TRUE(SliceAdmin::Create(dir, TwoDevices()).ok());
  const std::string before = ReadFile(dir + "/limits");
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"set-compute", dir, "--share", "0"},
           {"set-compute", dir, "--share", "101"},
           {"set-compute", dir, "--device", "2", "--share", "50"},
           {"set-compute", dir, "--share", "50", "--tier", "vip"}}) {
    EXPECT_NE(Script(args).exit_code, 0) << args[2] << " " << args[3];
  }
  EXPECT_TRUE(ReadFile(dir + "/limits") == before) << "a refused set-compute changed the limits file";
}

TEST_F(FgpuSlicePy, RefusesAnotherFormatVersion) {
  const std::string dir = scratch_ + "/cpp";
  ASSERT_TRUE(SliceAdmin::Create(dir, TwoDevices()).ok());
  {
    std::fstream limits(dir + "/limits", std::ios::in | std::ios::out | std::ios::binary);
    const uint32_t version = 1;
    limits.seekp(8);
    limits.write(reinterpret_cast<const char*>(&version), sizeof(version));
  }
  EXPECT_NE(Script({"usage", dir}).exit_code, 0);
  EXPECT_NE(Script({"set-compute", dir, "--share", "50"}).exit_code, 0);
}

}  // namespace
}  // namespace fgpu::slice
