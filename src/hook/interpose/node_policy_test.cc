// The interposer on a managed node (slice_policy.h, docs/hook.md "Managed nodes"): fgpu-probe on
// the simulated GPU under LD_PRELOAD=libfgpu.so with FGPU_NODE_CONFIG naming a root-owned
// configuration in a root-owned 0755 scratch tree. Only a slice directly under slice_root that
// root made is used; anything else fails closed at cuInit with one line on stderr; the
// configuration's compute_dir is used and FGPU_COMPUTE_DIR ignored. The same checks run with the
// workload as an unprivileged user (uid 65534), who can neither point the interposer at a
// configuration it wrote nor at a slice it made.
//
// The trust rules are root's files, so these tests run only as root (GTEST_SKIP otherwise); they
// never touch the node's real /etc/fgpu/node.conf.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
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

constexpr uint64_t kPolicyCap = 1024 * kMiB;
constexpr uid_t kNobody = 65534;
constexpr gid_t kNoGroup = 65534;

slice::LedgerCounters PolicyCounters(const std::string& slice_dir) {
  Result<slice::SliceAdmin> admin = slice::SliceAdmin::Open(slice_dir);
  EXPECT_TRUE(admin.ok()) << admin.status().message();
  if (!admin.ok()) return {};
  Result<slice::LedgerCounters> counters = admin->Counters();
  EXPECT_TRUE(counters.ok()) << counters.status().message();
  return counters.ok() ? *counters : slice::LedgerCounters{};
}

nlohmann::json Event(const ProcessResult& result, const std::string& name) {
  for (const std::string& line : Lines(result.out)) {
    nlohmann::json parsed = nlohmann::json::parse(line, nullptr, false);
    if (!parsed.is_discarded() && parsed.value("event", "") == name) return parsed;
  }
  return nullptr;
}

class NodePolicyTest : public ::testing::Test {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "LD_PRELOAD of a ThreadSanitizer-instrumented libfgpu.so is not supported";
#endif
    if (::geteuid() != 0) GTEST_SKIP() << "a managed node's configuration and slices are root's: run as root";
    ASSERT_EQ(::chmod(sim_.dir().c_str(), 0755), 0);
    MakeDir(slices_);
    MakeDir(boards_);
    WriteConfig(config_, "slice_root = " + slices_ + "\ncompute_dir = " + boards_ + "\n");
    node_slice_ = sim_.CreateSliceAt(slices_ + "/a", kPolicyCap);
  }

  static void MakeDir(const std::string& path, mode_t mode = 0755) {
    ASSERT_EQ(::mkdir(path.c_str(), mode), 0) << path;
    ASSERT_EQ(::chmod(path.c_str(), mode), 0) << path;
  }
  static void WriteConfig(const std::string& path, const std::string& text, mode_t mode = 0644) {
    std::ofstream(path) << text;
    ASSERT_EQ(::chmod(path.c_str(), mode), 0) << path;
  }
  std::vector<std::string> Managed(const std::string& slice_dir, const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> env = {Preload(), "FGPU_NODE_CONFIG=" + config_, "FGPU_SLICE=" + slice_dir};
    env.insert(env.end(), extra.begin(), extra.end());
    return env;
  }
  std::string Advice() const { return "; this node runs CUDA only in its own slices, under " + slices_ + " (" + config_ + ")"; }

  // fgpu-probe `args` (as `uid` when not root); its result.
  ProcessResult Probe(const std::vector<std::string>& args, const std::vector<std::string>& env, uid_t uid = 0) {
    std::vector<std::string> argv = {FGPU_PROBE_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    if (uid == 0) return sim_.Run(argv, env);
    sim_.ShareWith(uid, kNoGroup);
    return sim_.RunAs(uid, kNoGroup, argv, env);
  }

  // cuInit fails closed (every lookup door) with exactly one stderr line, `line`.
  void ExpectRefused(const std::vector<std::string>& env, const std::string& line, uid_t uid = 0) {
    for (const char* mode : {"direct", "dlsym", "procaddress", "procaddress_v2"}) {
      SCOPED_TRACE(mode);
      const ProcessResult result = Probe({"--lookup", mode, "info"}, env, uid);
      EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
      const std::vector<std::string> lines = Lines(result.err);
      ASSERT_EQ(lines.size(), 1u) << result.err;
      EXPECT_EQ(lines[0], line);
      const nlohmann::json error = Event(result, "error");
      ASSERT_TRUE(error.is_object()) << result.out;
      EXPECT_EQ(error["call"], "cuInit");
      EXPECT_EQ(error["name"], "CUDA_ERROR_NOT_INITIALIZED");
    }
  }
  void ExpectWorks(const std::string& slice_dir, uid_t uid = 0) {
    ProcessResult result = Probe({"info"}, Managed(slice_dir), uid);
    EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
    EXPECT_EQ(result.err, "");
    EXPECT_EQ(Event(result, "info")["total_mem"], kPolicyCap) << result.out;
    // Enforced: past the cap is refused by the slice.
    result = Probe({"alloc", "--bytes", "2GiB"}, Managed(slice_dir), uid);
    EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
    EXPECT_EQ(Event(result, "alloc")["result"], "CUDA_ERROR_OUT_OF_MEMORY") << result.out;
  }

  HookEnvironment sim_;
  std::string slices_ = sim_.dir() + "/slices";
  std::string boards_ = sim_.dir() + "/boards";
  std::string config_ = sim_.dir() + "/node.conf";
  std::string node_slice_;
};

TEST_F(NodePolicyTest, ASliceUnderSliceRootIsEnforced) {
  ExpectWorks(node_slice_);
  EXPECT_EQ(PolicyCounters(node_slice_).oom_refusals, 1u);
  // Named through a symbolic link or with `..`: what counts is where it really is.
  ASSERT_EQ(::symlink(node_slice_.c_str(), (sim_.dir() + "/link").c_str()), 0);
  ExpectWorks(sim_.dir() + "/link");
  ExpectWorks(slices_ + "/../slices/a");
}

TEST_F(NodePolicyTest, ASliceOutsideSliceRootFailsClosed) {
  // A valid slice, root's own, but not one of this node's.
  const std::string elsewhere = sim_.CreateSliceAt(sim_.dir() + "/elsewhere", 64 * kPolicyCap);
  ExpectRefused(Managed(elsewhere), "fgpu: cannot use slice " + elsewhere + ": not a slice of this node: " + elsewhere +
                                        " is not a directory directly under slice_root " + slices_ + Advice());
  EXPECT_EQ(PolicyCounters(elsewhere).fail_closed_refusals, 0u) << "not the node's slice: nobody reads its counters";
  ExpectRefused(Managed(slices_ + "/a/.."), "fgpu: cannot use slice " + slices_ + "/a/..: not a slice of this node: " +
                                                slices_ + " is not a directory directly under slice_root " + slices_ +
                                                Advice());
  ExpectRefused(Managed(slices_ + "/missing"),
                "fgpu: cannot use slice " + slices_ + "/missing: " + slices_ + "/missing: no such directory" + Advice());
  ExpectRefused({Preload(), "FGPU_NODE_CONFIG=" + config_}, "fgpu: FGPU_SLICE is not set" + Advice());
}

TEST_F(NodePolicyTest, ANodeSliceOthersCouldChangeFailsClosedAndIsCounted) {
  const std::string slice = sim_.CreateSliceAt(slices_ + "/b", kPolicyCap);
  ASSERT_EQ(::chmod((slice + "/limits").c_str(), 0664), 0);
  ExpectRefused(Managed(slice), "fgpu: cannot use slice " + slice + ": " + slice +
                                    "/limits is writable by group or others (mode 0664)" + Advice());
  EXPECT_EQ(PolicyCounters(slice).fail_closed_refusals, 4u) << "once per refused process (4 lookup modes)";
  ASSERT_EQ(::chmod((slice + "/limits").c_str(), 0644), 0);
  ASSERT_EQ(::chmod(slice.c_str(), 0777), 0);
  ExpectRefused(Managed(slice), "fgpu: cannot use slice " + slice + ": " + slice +
                                    " is writable by group or others (mode 0777)" + Advice());
  EXPECT_EQ(PolicyCounters(slice).fail_closed_refusals, 8u);
}

TEST_F(NodePolicyTest, AConfigurationThatCannotBeTrustedOrReadFailsClosed) {
  const std::string prefix = "fgpu: cannot read the node configuration: FGPU_NODE_CONFIG=";
  const auto with_config = [&](const std::string& file) {
    return std::vector<std::string>{Preload(), "FGPU_SLICE=" + node_slice_, "FGPU_NODE_CONFIG=" + file};
  };
  // Named but missing: refused, not taken for an unmanaged node.
  ExpectRefused(with_config(sim_.dir() + "/missing.conf"), prefix + sim_.dir() + "/missing.conf: no such file");
  const std::string writable = sim_.dir() + "/writable.conf";
  WriteConfig(writable, "slice_root = " + slices_ + "\ncompute_dir = " + boards_ + "\n", 0666);
  ExpectRefused(with_config(writable),
                prefix + writable + " is not trusted: " + writable +
                    " is writable by group or others (mode 0666) (only a file that root alone can change is)");
  const std::string garbage = sim_.dir() + "/garbage.conf";
  WriteConfig(garbage, "slice_root = " + slices_ + "\nslice-root = /tmp\n");
  ExpectRefused(with_config(garbage), prefix + garbage + ":2: unknown key 'slice-root'; did you mean slice_root?");
}

// The boards are where the configuration says: a workload cannot point its compute gate at a
// directory of its own (or at nothing) with FGPU_COMPUTE_DIR.
TEST_F(NodePolicyTest, ComputeDirComesFromTheConfigurationNotTheEnvironment) {
  const std::string shared = sim_.CreateSliceAt(slices_ + "/shared", kPolicyCap, 30);
  const std::vector<std::string> spin = {"spin", "--duty", "100", "--seconds", "0.2", "--kernel-us", "1000"};
  const std::string blocker = sim_.dir() + "/not-a-directory";
  std::ofstream(blocker) << "x";
  // An unusable FGPU_COMPUTE_DIR is ignored: the configuration's boards are used, enforced.
  ProcessResult result = Probe(spin, Managed(shared, {"FGPU_COMPUTE_DIR=" + blocker + "/boards"}));
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(result.err, "");
  EXPECT_EQ(PolicyCounters(shared).compute_unenforced, 0u);
  EXPECT_FALSE(std::filesystem::is_empty(boards_)) << "the GPU's board is in the configuration's compute_dir";
  // And the other way round: a usable FGPU_COMPUTE_DIR does not replace an unusable compute_dir.
  const std::string other = sim_.dir() + "/other.conf";
  WriteConfig(other, "slice_root = " + slices_ + "\ncompute_dir = " + blocker + "/boards\n");
  const std::string own_boards = sim_.dir() + "/own-boards";
  result = Probe(spin, {Preload(), "FGPU_NODE_CONFIG=" + other, "FGPU_SLICE=" + shared, "FGPU_COMPUTE_DIR=" + own_boards});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.err.find("compute shares are not enforced"), std::string::npos) << result.err;
  EXPECT_EQ(PolicyCounters(shared).compute_unenforced, 1u);
  EXPECT_FALSE(std::filesystem::exists(own_boards));
}

// A managed node denies pass-through unless its configuration allows it: FGPU_DISABLE=1 cannot
// switch a user's own caps off (docs/hook.md "Managed nodes").
TEST_F(NodePolicyTest, DisableIsIgnoredUnlessTheNodeAllowsIt) {
  ProcessResult result = Probe({"alloc", "--bytes", "2GiB"}, Managed(node_slice_, {"FGPU_DISABLE=1"}));
  EXPECT_NE(result.exit_code, 0) << "the 1 GiB cap holds: " << result.out;
  EXPECT_EQ(Event(result, "alloc")["result"], "CUDA_ERROR_OUT_OF_MEMORY") << result.out;
  EXPECT_NE(result.err.find("FGPU_DISABLE is not honoured on this node"), std::string::npos) << result.err;
  EXPECT_EQ(PolicyCounters(node_slice_).pass_through, 0u);
  WriteConfig(config_, "slice_root = " + slices_ + "\ncompute_dir = " + boards_ + "\npass_through = allow\n");
  result = Probe({"alloc", "--bytes", "2GiB"}, Managed(node_slice_, {"FGPU_DISABLE=1"}));
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(result.err, "");
  EXPECT_EQ(PolicyCounters(node_slice_).pass_through, 1u) << "allowed: pass-through, counted in the slice it names";
}

// A tenant's process: uid 65534, no groups. It may use the node's slice that is its own (the
// ledger chowned to it, as the agent gives a slice to its workload user), and nothing it made.
class UnprivilegedNodePolicyTest : public NodePolicyTest {
 protected:
  void SetUp() override {
    NodePolicyTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_EQ(::chown((node_slice_ + "/ledger").c_str(), kNobody, kNoGroup), 0);
    ASSERT_EQ(::chmod((node_slice_ + "/ledger").c_str(), 0600), 0);
    // Where the tenant may write: a directory of its own.
    MakeDir(home_);
    ASSERT_EQ(::chown(home_.c_str(), kNobody, kNoGroup), 0);
  }
  std::string home_ = sim_.dir() + "/home";
};

TEST_F(UnprivilegedNodePolicyTest, ItsSliceUnderSliceRootIsEnforced) { ExpectWorks(node_slice_, kNobody); }

TEST_F(UnprivilegedNodePolicyTest, AConfigurationItWroteIsNotTrusted) {
  // Its own policy, naming its own directory as slice_root: refused, whatever it says.
  const std::string own = home_ + "/node.conf";
  WriteConfig(own, "slice_root = " + home_ + "\ncompute_dir = " + home_ + "\n");
  ASSERT_EQ(::chown(own.c_str(), kNobody, kNoGroup), 0);
  ExpectRefused({Preload(), "FGPU_NODE_CONFIG=" + own, "FGPU_SLICE=" + node_slice_},
                "fgpu: cannot read the node configuration: FGPU_NODE_CONFIG=" + own + " is not trusted: " + home_ +
                    " is owned by uid 65534, not root (only a file that root alone can change is)",
                kNobody);
}

TEST_F(UnprivilegedNodePolicyTest, ASliceItMadeIsNotUsed) {
  // A slice with a cap of its choosing, made by the tenant in its own directory.
  const std::string own = sim_.CreateSliceAt(home_ + "/big", 64 * kPolicyCap);
  for (const char* file : {"", "/limits", "/ledger"}) {
    ASSERT_EQ(::chown((own + file).c_str(), kNobody, kNoGroup), 0) << file;
  }
  ExpectRefused(Managed(own), "fgpu: cannot use slice " + own + ": not a slice of this node: " + own +
                                  " is not a directory directly under slice_root " + slices_ + Advice(),
                kNobody);
  // A link to it from inside slice_root is no better (root's mistake, or a race): resolved first.
  ASSERT_EQ(::symlink(own.c_str(), (slices_ + "/tenant-link").c_str()), 0);
  ExpectRefused(Managed(slices_ + "/tenant-link"), "fgpu: cannot use slice " + slices_ +
                                                       "/tenant-link: not a slice of this node: " + own +
                                                       " is not a directory directly under slice_root " + slices_ +
                                                       Advice(),
                kNobody);
  // Moved under slice_root by someone who could (root), but still the tenant's: refused by owner.
  const std::string moved = slices_ + "/moved";
  ASSERT_EQ(::rename(own.c_str(), moved.c_str()), 0);
  ExpectRefused(Managed(moved), "fgpu: cannot use slice " + moved + ": " + moved + " is owned by uid 65534, not root" +
                                    Advice(),
                kNobody);
}

}  // namespace
}  // namespace fgpu::hook
