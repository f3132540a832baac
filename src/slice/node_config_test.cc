// The node configuration (node_config.h): every parse error with its message, whether a node is
// managed, when an override is honoured, and which slice directories a managed node accepts —
// owners, modes, sticky directories, symbolic links, `..`, slices outside slice_root.
//
// Files owned by another user need chown: those cases run only as root (the usual case here);
// otherwise the trusted owner is this test's own uid (TrustRules), and they are skipped.
#include "slice/node_config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/units.h"
#include "slice/slice.h"
#include "slice/test_support.h"

namespace fgpu::slice {
namespace {

using testing::OneDeviceSpec;
using testing::ScratchDir;

constexpr uid_t kNobody = 65534;

void ExpectParseError(const std::string& text, const std::string& fragment) {
  Result<NodeConfig> config = ParseNodeConfig(text, "node.conf");
  ASSERT_FALSE(config.ok()) << "accepted: " << text;
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(config.status().message().find(fragment), std::string::npos)
      << "message: " << config.status().message() << "\nexpected: " << fragment;
}

TEST(NodeConfigParse, ReadsBothKeysAroundCommentsBlanksAndSpaces) {
  const std::string text =
      "# this node's policy\n"
      "\n"
      "   # indented comment\n"
      "slice_root = /var/lib/fgpu/slices\n"
      "\tcompute_dir\t=\t/dev/shm/fgpu-compute\r\n"
      "  \n";
  Result<NodeConfig> config = ParseNodeConfig(text, "node.conf");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->slice_root, "/var/lib/fgpu/slices");
  EXPECT_EQ(config->compute_dir, "/dev/shm/fgpu-compute");
  // No spaces and no final newline; '#' inside a value is part of the path.
  config = ParseNodeConfig("slice_root=/a#b\ncompute_dir=/c", "node.conf");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->slice_root, "/a#b");
  EXPECT_EQ(config->compute_dir, "/c");
}

TEST(NodeConfigParse, EveryErrorNamesTheLineAndTheProblem) {
  const std::string ok_compute = "compute_dir = /c\n";
  ExpectParseError("", "node.conf: slice_root is not set");
  ExpectParseError("# only comments\n\n", "node.conf: slice_root is not set");
  ExpectParseError("slice_root = /s\n", "node.conf: compute_dir is not set");
  ExpectParseError(ok_compute + "slice_root /s\n", "node.conf:2: expected 'key = value', got 'slice_root /s'");
  ExpectParseError(ok_compute + " = /s\n", "node.conf:2: a value without a key");
  ExpectParseError(ok_compute + "slice_roots = /s\n", "node.conf:2: unknown key 'slice_roots'; did you mean slice_root?");
  ExpectParseError("computedir = /s\n", "node.conf:1: unknown key 'computedir'; did you mean compute_dir?");
  ExpectParseError("gpus = 4\n", "node.conf:1: unknown key 'gpus' (the keys are slice_root, compute_dir, pass_through, board_socket and strict_priority)");
  ExpectParseError("Slice_Root = /s\n", "unknown key 'Slice_Root'; did you mean slice_root?");
  ExpectParseError(ok_compute + "slice_root = /a\n# again\nslice_root = /b\n",
                   "node.conf:4: slice_root is set twice (first at line 2)");
  ExpectParseError(ok_compute + "slice_root =\n", "node.conf:2: slice_root has no value");
  ExpectParseError(ok_compute + "slice_root = var/lib/fgpu\n",
                   "node.conf:2: slice_root must be an absolute path, got 'var/lib/fgpu'");
  ExpectParseError(ok_compute + "slice_root = ./slices\n", "must be an absolute path, got './slices'");
  ExpectParseError(ok_compute + "slice_root = /s # the slices\n",
                   "node.conf:2: slice_root = '/s # the slices' has a blank or control character");
  ExpectParseError(ok_compute + "slice_root = /a\x01" "b\n", "has a blank or control character");
  ExpectParseError(ok_compute + std::string("slice_root = /s\n\0", 17), "contains a NUL byte");
  ExpectParseError(ok_compute + "slice_root = /s\n#" + std::string(kNodeConfigMaxBytes, 'x') + "\n",
                   "bytes; a node configuration is at most 4096");
}

// A scratch tree that only this test's trusted owner can change: the stand-in for /etc/fgpu
// and /var/lib/fgpu. mkdtemp makes it 0700; 0755 is what a node has.
class NodeTrustTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::chmod(scratch_.path().c_str(), 0755), 0);
    root_ = Resolved(scratch_.path());
    rules_.owner = ::geteuid();
    slices_ = root_ + "/slices";
    MakeDir(slices_, 0755);
    config_.slice_root = slices_;
    config_.compute_dir = root_ + "/compute";
  }

  static std::string Resolved(const std::string& path) {
    char resolved[PATH_MAX];
    EXPECT_NE(::realpath(path.c_str(), resolved), nullptr) << path;
    return resolved;
  }
  static void MakeDir(const std::string& path, mode_t mode) {
    ASSERT_EQ(::mkdir(path.c_str(), 0700), 0) << path;
    ASSERT_EQ(::chmod(path.c_str(), mode), 0) << path;
  }
  static void WriteFile(const std::string& path, const std::string& text, mode_t mode = 0644) {
    std::ofstream(path) << text;
    ASSERT_EQ(::chmod(path.c_str(), mode), 0) << path;
  }
  std::string GoodConfig() const { return "slice_root = " + slices_ + "\ncompute_dir = " + config_.compute_dir + "\n"; }
  // A slice as the agent makes it: root's 0755 directory (whatever the umask), root's 0644 limits.
  std::string MakeSlice(const std::string& dir) {
    Result<SliceAdmin> admin = SliceAdmin::Create(dir, OneDeviceSpec(kGiB));
    EXPECT_TRUE(admin.ok()) << admin.status().message();
    EXPECT_EQ(::chmod(dir.c_str(), 0755), 0) << dir;
    return dir;
  }
  static bool Root() { return ::geteuid() == 0; }

  void ExpectRefused(const std::string& slice_dir, const std::string& fragment, StatusCode code = StatusCode::kUnavailable) {
    Result<TrustedSlice> slice = OpenTrustedSlice(config_, slice_dir.c_str(), rules_);
    ASSERT_FALSE(slice.ok()) << "accepted: " << slice_dir;
    EXPECT_EQ(slice.status().code(), code) << slice.status().message();
    EXPECT_NE(slice.status().message().find(fragment), std::string::npos)
        << "message: " << slice.status().message() << "\nexpected: " << fragment;
  }
  void ExpectAccepted(const std::string& slice_dir, const std::string& real_path) {
    Result<TrustedSlice> slice = OpenTrustedSlice(config_, slice_dir.c_str(), rules_);
    ASSERT_TRUE(slice.ok()) << slice_dir << ": " << slice.status().message();
    EXPECT_EQ(slice->real_path(), real_path);
  }
  void ExpectPolicyError(const std::string& override_path, const std::string& fragment, StatusCode code) {
    Result<NodePolicy> policy = LoadNodePolicy(override_path.c_str(), "/nonexistent/node.conf", rules_);
    ASSERT_FALSE(policy.ok()) << "accepted: " << override_path;
    EXPECT_EQ(policy.status().code(), code) << policy.status().message();
    EXPECT_NE(policy.status().message().find(fragment), std::string::npos)
        << "message: " << policy.status().message() << "\nexpected: " << fragment;
  }

  ScratchDir scratch_;
  std::string root_;
  std::string slices_;
  NodeConfig config_;
  TrustRules rules_;
};

TEST_F(NodeTrustTest, NoFileAtTheFixedPathAndNoOverrideIsAnUnmanagedNode) {
  for (const char* override_path : {static_cast<const char*>(nullptr), ""}) {
    Result<NodePolicy> policy = LoadNodePolicy(override_path, (root_ + "/etc/node.conf").c_str(), rules_);
    ASSERT_TRUE(policy.ok()) << policy.status().message();
    EXPECT_FALSE(policy->managed);
    EXPECT_EQ(policy->source, "");
  }
}

TEST_F(NodeTrustTest, TheFileAtTheFixedPathMakesTheNodeManaged) {
  MakeDir(root_ + "/etc", 0755);
  const std::string fixed = root_ + "/etc/node.conf";
  WriteFile(fixed, GoodConfig());
  Result<NodePolicy> policy = LoadNodePolicy(nullptr, fixed.c_str(), rules_);
  ASSERT_TRUE(policy.ok()) << policy.status().message();
  EXPECT_TRUE(policy->managed);
  EXPECT_EQ(policy->source, fixed);
  EXPECT_EQ(policy->config.slice_root, slices_);
  EXPECT_EQ(policy->config.compute_dir, config_.compute_dir);

  // Unparsable or untrusted: an error, never "unmanaged".
  WriteFile(fixed, "slice_root = relative\n");
  policy = LoadNodePolicy(nullptr, fixed.c_str(), rules_);
  ASSERT_FALSE(policy.ok());
  EXPECT_NE(policy.status().message().find(fixed + ":1: slice_root must be an absolute path"), std::string::npos)
      << policy.status().message();
  WriteFile(fixed, GoodConfig(), 0666);
  policy = LoadNodePolicy(nullptr, fixed.c_str(), rules_);
  ASSERT_FALSE(policy.ok());
  EXPECT_NE(policy.status().message().find(fixed + " is writable by group or others (mode 0666)"), std::string::npos)
      << policy.status().message();
}

TEST_F(NodeTrustTest, OnlyNothingAtTheFixedPathIsUnmanaged) {
  // A regular file where /etc/fgpu should be: lstat says ENOTDIR, not ENOENT.
  WriteFile(root_ + "/etc", "x");
  Result<NodePolicy> policy = LoadNodePolicy(nullptr, (root_ + "/etc/node.conf").c_str(), rules_);
  ASSERT_FALSE(policy.ok());
  EXPECT_NE(policy.status().message().find("Not a directory"), std::string::npos) << policy.status().message();
}

TEST_F(NodeTrustTest, AnOverrideThatRootAloneCanChangeReplacesTheFixedFile) {
  MakeDir(root_ + "/etc", 0755);
  const std::string fixed = root_ + "/etc/node.conf";
  WriteFile(fixed, "slice_root = /fixed\ncompute_dir = /fixed\n");
  const std::string other = root_ + "/other.conf";
  WriteFile(other, GoodConfig());
  Result<NodePolicy> policy = LoadNodePolicy(other.c_str(), fixed.c_str(), rules_);
  ASSERT_TRUE(policy.ok()) << policy.status().message();
  EXPECT_TRUE(policy->managed);
  EXPECT_EQ(policy->source, other);
  EXPECT_EQ(policy->config.slice_root, slices_);
  // `..` and a symbolic link are resolved first; then the real path is what is checked.
  MakeDir(root_ + "/sub", 0755);
  EXPECT_TRUE(LoadNodePolicy((root_ + "/sub/../other.conf").c_str(), fixed.c_str(), rules_).ok());
  ASSERT_EQ(::symlink(other.c_str(), (root_ + "/link.conf").c_str()), 0);
  EXPECT_TRUE(LoadNodePolicy((root_ + "/link.conf").c_str(), fixed.c_str(), rules_).ok());
}

TEST_F(NodeTrustTest, AnOverrideThatIsMissingUnparsableOrRelativeFailsClosed) {
  ExpectPolicyError(root_ + "/missing.conf", "FGPU_NODE_CONFIG=" + root_ + "/missing.conf: no such file",
                    StatusCode::kNotFound);
  ExpectPolicyError("node.conf", "FGPU_NODE_CONFIG=node.conf: must be an absolute path", StatusCode::kInvalidArgument);
  WriteFile(root_ + "/bad.conf", "slice_root = /s\nslice_root = /t\n");
  ExpectPolicyError(root_ + "/bad.conf", "FGPU_NODE_CONFIG=" + root_ + "/bad.conf:2: slice_root is set twice",
                    StatusCode::kInvalidArgument);
  WriteFile(root_ + "/big.conf", GoodConfig() + "#" + std::string(kNodeConfigMaxBytes, 'x') + "\n");
  ExpectPolicyError(root_ + "/big.conf", "a node configuration is at most 4096", StatusCode::kInvalidArgument);
  MakeDir(root_ + "/a-directory", 0755);
  ExpectPolicyError(root_ + "/a-directory", "a-directory is not a regular file", StatusCode::kUnavailable);
  // A FIFO must be refused without hanging the reader.
  ASSERT_EQ(::mkfifo((root_ + "/fifo.conf").c_str(), 0644), 0);
  ExpectPolicyError(root_ + "/fifo.conf", "fifo.conf is not a regular file", StatusCode::kUnavailable);
}

TEST_F(NodeTrustTest, AnOverrideSomeoneElseCouldChangeFailsClosed) {
  // Writable by group or others: anyone could have written this policy.
  WriteFile(root_ + "/group.conf", GoodConfig(), 0664);
  ExpectPolicyError(root_ + "/group.conf", root_ + "/group.conf is writable by group or others (mode 0664)",
                    StatusCode::kUnavailable);
  // In a directory where anyone may replace it.
  MakeDir(root_ + "/open", 0777);
  WriteFile(root_ + "/open/node.conf", GoodConfig());
  ExpectPolicyError(root_ + "/open/node.conf", root_ + "/open is writable by group or others (mode 0777, not sticky)",
                    StatusCode::kUnavailable);
  // A symbolic link is followed, and its target must pass too.
  ASSERT_EQ(::symlink((root_ + "/group.conf").c_str(), (root_ + "/link.conf").c_str()), 0);
  ExpectPolicyError(root_ + "/link.conf", root_ + "/group.conf is writable by group or others",
                    StatusCode::kUnavailable);
}

TEST_F(NodeTrustTest, AStickyDirectoryIsSafeOnlyWhenItsOwnerIsTrusted) {
  MakeDir(root_ + "/tmp", 01777);
  WriteFile(root_ + "/tmp/node.conf", GoodConfig());
  Result<NodePolicy> policy = LoadNodePolicy((root_ + "/tmp/node.conf").c_str(), nullptr, rules_);
  ASSERT_TRUE(policy.ok()) << policy.status().message();
  EXPECT_TRUE(policy->managed);
  if (!Root()) GTEST_SKIP() << "chown needs root";
  ASSERT_EQ(::chown((root_ + "/tmp").c_str(), kNobody, kNobody), 0);
  ExpectPolicyError(root_ + "/tmp/node.conf", root_ + "/tmp is owned by uid 65534, not root", StatusCode::kUnavailable);
}

TEST_F(NodeTrustTest, AnOverrideOwnedByAnotherUserFailsClosed) {
  if (!Root()) GTEST_SKIP() << "chown needs root";
  WriteFile(root_ + "/mine.conf", GoodConfig());
  ASSERT_EQ(::chown((root_ + "/mine.conf").c_str(), kNobody, kNobody), 0);
  ExpectPolicyError(root_ + "/mine.conf",
                    "FGPU_NODE_CONFIG=" + root_ + "/mine.conf is not trusted: " + root_ +
                        "/mine.conf is owned by uid 65534, not root (only a file that root alone can change is)",
                    StatusCode::kUnavailable);
  // A directory above it owned by another user: they could swap the file.
  MakeDir(root_ + "/home", 0755);
  WriteFile(root_ + "/home/node.conf", GoodConfig());
  ASSERT_EQ(::chown((root_ + "/home").c_str(), kNobody, kNobody), 0);
  ExpectPolicyError(root_ + "/home/node.conf", root_ + "/home is owned by uid 65534, not root", StatusCode::kUnavailable);
}

TEST_F(NodeTrustTest, ASliceDirectlyUnderSliceRootIsAccepted) {
  const std::string slice = MakeSlice(slices_ + "/a");
  Result<TrustedSlice> trusted = OpenTrustedSlice(config_, slice.c_str(), rules_);
  ASSERT_TRUE(trusted.ok()) << trusted.status().message();
  EXPECT_EQ(trusted->real_path(), slice);
  // The path through the descriptor reaches the very same files.
  EXPECT_TRUE(trusted->path().starts_with("/proc/self/fd/")) << trusted->path();
  struct stat through {}, direct {};
  ASSERT_EQ(::stat((trusted->path() + "/limits").c_str(), &through), 0);
  ASSERT_EQ(::stat((slice + "/limits").c_str(), &direct), 0);
  EXPECT_EQ(through.st_ino, direct.st_ino);
  EXPECT_EQ(trusted->Describe(trusted->path() + "/ledger: bad magic"), slice + "/ledger: bad magic");
  // Ledger::Attach through it works (what the interposer does).
  Result<Ledger*> ledger = Ledger::Attach(trusted->path().c_str());
  ASSERT_TRUE(ledger.ok()) << ledger.status().message();
  EXPECT_EQ((*ledger)->Cap(0), kGiB);

  // `..` and symbolic links are resolved before the check.
  ExpectAccepted(slices_ + "/a/../a", slice);
  ExpectAccepted(root_ + "/slices//a/", slice);
  ASSERT_EQ(::symlink(slice.c_str(), (root_ + "/link-to-a").c_str()), 0);
  ExpectAccepted(root_ + "/link-to-a", slice);
  // slice_root is resolved too.
  ASSERT_EQ(::symlink(slices_.c_str(), (root_ + "/slices-link").c_str()), 0);
  config_.slice_root = root_ + "/slices-link";
  ExpectAccepted(slice, slice);
}

TEST_F(NodeTrustTest, ASliceAnywhereElseIsRefused) {
  const std::string elsewhere = MakeSlice(root_ + "/elsewhere");
  MakeSlice(slices_ + "/a");
  const std::string outside = "not a slice of this node: ";
  ExpectRefused(elsewhere, outside + elsewhere + " is not a directory directly under slice_root " + slices_);
  ExpectRefused(slices_ + "/../elsewhere", outside + elsewhere);
  ExpectRefused(slices_, outside + slices_);
  ExpectRefused(slices_ + "/a/..", outside + slices_);
  // Nested below a slice: not *directly* under slice_root.
  MakeSlice(slices_ + "/a/nested");
  ExpectRefused(slices_ + "/a/nested", outside + slices_ + "/a/nested");
  // A link inside slice_root to a slice outside it.
  ASSERT_EQ(::symlink(elsewhere.c_str(), (slices_ + "/link").c_str()), 0);
  ExpectRefused(slices_ + "/link", outside + elsewhere);
  // A sibling whose name merely starts like slice_root.
  const std::string lookalike = MakeSlice(root_ + "/slices-evil");
  ExpectRefused(lookalike, outside + lookalike);
  ExpectRefused(slices_ + "/missing", slices_ + "/missing: no such directory", StatusCode::kNotFound);
}

TEST_F(NodeTrustTest, ASliceDirectoryOthersCanWriteIsRefused) {
  const std::string slice = MakeSlice(slices_ + "/a");
  ASSERT_EQ(::chmod(slice.c_str(), 0775), 0);
  ExpectRefused(slice, slice + " is writable by group or others (mode 0775)");
  // No sticky exception for a slice: whoever may add entries could plant a limits file.
  ASSERT_EQ(::chmod(slice.c_str(), 01777), 0);
  ExpectRefused(slice, slice + " is writable by group or others (mode 1777)");
  ASSERT_EQ(::chmod(slice.c_str(), 0755), 0);
  ExpectAccepted(slice, slice);
}

TEST_F(NodeTrustTest, ALimitsFileOthersCanWriteIsRefusedAndCounted) {
  const std::string slice = MakeSlice(slices_ + "/a");
  ASSERT_EQ(::chmod((slice + "/limits").c_str(), 0664), 0);
  ExpectRefused(slice, slice + "/limits is writable by group or others (mode 0664)");
  EXPECT_TRUE(CountRefusedNodeSlice(config_, slice.c_str()));
  Result<SliceAdmin> admin = SliceAdmin::Open(slice);
  ASSERT_TRUE(admin.ok()) << admin.status().message();
  Result<LedgerCounters> counters = admin->Counters();
  ASSERT_TRUE(counters.ok()) << counters.status().message();
  EXPECT_EQ(counters->fail_closed_refusals, 1u);

  // Not the node's slice: nothing to count in.
  const std::string elsewhere = MakeSlice(root_ + "/elsewhere");
  EXPECT_FALSE(CountRefusedNodeSlice(config_, elsewhere.c_str()));
  Result<SliceAdmin> other = SliceAdmin::Open(elsewhere);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->Counters()->fail_closed_refusals, 0u);
}

TEST_F(NodeTrustTest, ALimitsFileThatIsALinkOrMissingIsRefused) {
  const std::string slice = MakeSlice(slices_ + "/a");
  const std::string elsewhere = MakeSlice(root_ + "/elsewhere");
  ASSERT_EQ(::unlink((slice + "/limits").c_str()), 0);
  ExpectRefused(slice, slice + "/limits: no such file", StatusCode::kNotFound);
  ASSERT_EQ(::symlink((elsewhere + "/limits").c_str(), (slice + "/limits").c_str()), 0);
  ExpectRefused(slice, slice + "/limits is a symbolic link");
}

TEST_F(NodeTrustTest, FilesOwnedByAnotherUserAreRefused) {
  if (!Root()) GTEST_SKIP() << "chown needs root";
  const std::string slice = MakeSlice(slices_ + "/a");
  ASSERT_EQ(::chown((slice + "/limits").c_str(), kNobody, kNobody), 0);
  ExpectRefused(slice, slice + "/limits is owned by uid 65534, not root");
  ASSERT_EQ(::chown((slice + "/limits").c_str(), 0, 0), 0);
  ASSERT_EQ(::chown(slice.c_str(), kNobody, kNobody), 0);
  ExpectRefused(slice, slice + " is owned by uid 65534, not root");
  ASSERT_EQ(::chown(slice.c_str(), 0, 0), 0);
  ExpectAccepted(slice, slice);
  // The ledger is the workload's: its owner does not matter here.
  ASSERT_EQ(::chown((slice + "/ledger").c_str(), kNobody, kNobody), 0);
  ExpectAccepted(slice, slice);
}

TEST_F(NodeTrustTest, ASliceRootSomeoneElseCouldSwapIsRefused) {
  MakeSlice(slices_ + "/a");
  ASSERT_EQ(::chmod(slices_.c_str(), 0777), 0);
  ExpectRefused(slices_ + "/a", "slice_root " + slices_ + " is not trusted: " + slices_ +
                                    " is writable by group or others (mode 0777, not sticky)");
  // Sticky, like /tmp: others may add their own entries, which the owner check then refuses.
  ASSERT_EQ(::chmod(slices_.c_str(), 01777), 0);
  ExpectAccepted(slices_ + "/a", slices_ + "/a");
  ASSERT_EQ(::chmod(slices_.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(root_.c_str(), 0775), 0);
  ExpectRefused(slices_ + "/a", root_ + " is writable by group or others (mode 0775, not sticky)");
  config_.slice_root = root_ + "/no-such-root";
  ASSERT_EQ(::chmod(root_.c_str(), 0755), 0);
  ExpectRefused(slices_ + "/a", "slice_root " + root_ + "/no-such-root: no such file or directory");
}

}  // namespace
}  // namespace fgpu::slice

namespace fgpu::slice {
namespace {

TEST(NodeConfigParse, StrictPriorityNamesAllOrSomeGpus) {
  const std::string base = "slice_root = /var/lib/fgpu/slices\ncompute_dir = /run/fgpu/compute\n";
  Result<NodeConfig> config = ParseNodeConfig(base, "node.conf");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_FALSE(StrictPriorityFor(*config, "GPU-a"));
  config = ParseNodeConfig(base + "strict_priority = all\n", "node.conf");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_TRUE(StrictPriorityFor(*config, "GPU-a"));
  config = ParseNodeConfig(base + "strict_priority = GPU-a,MIG-b\n", "node.conf");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_TRUE(StrictPriorityFor(*config, "GPU-a"));
  EXPECT_TRUE(StrictPriorityFor(*config, "MIG-b"));
  EXPECT_FALSE(StrictPriorityFor(*config, "GPU-ab"));
  EXPECT_FALSE(StrictPriorityFor(*config, "GPU-"));
  for (const char* bad : {"strict_priority = yes\n", "strict_priority = GPU-a,\n", "strict_priority = GPU-a,,GPU-b\n",
                          "strict_priority =\n", "strict_priority = all\nstrict_priority = all\n"}) {
    const Result<NodeConfig> refused = ParseNodeConfig(base + bad, "node.conf");
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.status().message().find("strict_priority"), std::string::npos) << refused.status().message();
  }
  const Result<NodeConfig> misspelt = ParseNodeConfig(base + "strict_priorty = all\n", "node.conf");
  ASSERT_FALSE(misspelt.ok());
  EXPECT_NE(misspelt.status().message().find("did you mean strict_priority?"), std::string::npos);
}

TEST(NodeConfigParse, PassThroughIsDeniedUnlessAllowed) {
  const std::string base = "slice_root = /var/lib/fgpu/slices\ncompute_dir = /run/fgpu/compute\n";
  Result<NodeConfig> config = ParseNodeConfig(base, "node.conf");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_FALSE(config->allow_pass_through);
  config = ParseNodeConfig(base + "pass_through = allow\n", "node.conf");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_TRUE(config->allow_pass_through);
  config = ParseNodeConfig(base + "pass_through = deny\n", "node.conf");
  ASSERT_TRUE(config.ok());
  EXPECT_FALSE(config->allow_pass_through);
  for (const char* bad : {"pass_through = yes\n", "pass_through = allow\npass_through = deny\n", "pass_through =\n"}) {
    const Result<NodeConfig> refused = ParseNodeConfig(base + bad, "node.conf");
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.status().message().find("pass_through"), std::string::npos) << refused.status().message();
  }
}

TEST(NodeConfigParse, BoardSocketIsAnOptionalAbsolutePath) {
  const std::string base = "slice_root = /var/lib/fgpu/slices\ncompute_dir = /run/fgpu/compute\n";
  Result<NodeConfig> config = ParseNodeConfig(base, "node.conf");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->board_socket, "") << "unset: the boards are files in compute_dir, as before";
  config = ParseNodeConfig(base + "board_socket = /var/lib/fgpu/boards.sock\n", "node.conf");
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->board_socket, "/var/lib/fgpu/boards.sock");
  ExpectParseError(base + "board_socket = boards.sock\n",
                   "node.conf:3: board_socket must be an absolute path, got 'boards.sock'");
  ExpectParseError(base + "board_socket = /a\nboard_socket = /b\n", "node.conf:4: board_socket is set twice (first at line 3)");
  ExpectParseError(base + "board_socket =\n", "node.conf:3: board_socket has no value");
  ExpectParseError(base + "board_socket = /a b\n", "has a blank or control character");
  ExpectParseError(base + "boards_socket = /a\n", "node.conf:3: unknown key 'boards_socket'; did you mean board_socket?");
}

}  // namespace
}  // namespace fgpu::slice
