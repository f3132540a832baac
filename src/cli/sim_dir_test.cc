#include "cli/sim_dir.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "cli/test_scratch_dir.h"

namespace fgpu::cli {
namespace {

namespace fs = std::filesystem;

void Touch(const ScratchDir& root, const std::string& relative) { root.Write(relative, ""); }

TEST(SimLibDirBesideTest, IsLibFgpuSimNextToTheBinDirectory) {
  EXPECT_EQ(SimLibDirBeside("/opt/fgpu/bin/fgpu"), "/opt/fgpu/lib/fgpu/sim");
  EXPECT_EQ(SimLibDirBeside("/work/build/dev/bin/fgpu"), "/work/build/dev/lib/fgpu/sim");
  EXPECT_EQ(SimLibDirBeside("/usr/bin/fgpu"), "/usr/lib/fgpu/sim");
}

TEST(SimLibDirBesideTest, NormalisesDotsInTheExecutablePath) {
  EXPECT_EQ(SimLibDirBeside("/opt/./fgpu/bin/../bin/fgpu"), "/opt/fgpu/lib/fgpu/sim");
}

TEST(SelfExecutablePathTest, NamesThisTestBinary) {
  Result<std::string> self = SelfExecutablePath();
  ASSERT_TRUE(self.ok()) << self.status().message();
  EXPECT_TRUE(fs::path(*self).is_absolute());
  EXPECT_EQ(fs::path(*self).filename(), "fgpu_cli_test");
}

TEST(ResolveSimLibDirTest, FindsTheLibraryBesideTheExecutable) {
  ScratchDir root;
  Touch(root, "lib/fgpu/sim/libcuda.so.1");
  Result<std::string> dir = ResolveSimLibDir((root.path() / "bin/fgpu").string(), "");
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  EXPECT_EQ(*dir, (root.path() / "lib/fgpu/sim").string());
}

TEST(ResolveSimLibDirTest, MissingLibraryIsNotFoundNamingThePathAndTheFix) {
  ScratchDir root;
  Result<std::string> dir = ResolveSimLibDir((root.path() / "bin/fgpu").string(), "");
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), StatusCode::kNotFound);
  EXPECT_NE(dir.status().message().find((root.path() / "lib/fgpu/sim/libcuda.so.1").string()),
            std::string::npos);
  EXPECT_NE(dir.status().message().find("FGPU_SIM_LIBDIR"), std::string::npos);
}

TEST(ResolveSimLibDirTest, OverrideWinsOverTheExecutableLocation) {
  ScratchDir root;
  Touch(root, "lib/fgpu/sim/libcuda.so.1");
  Touch(root, "elsewhere/libcuda.so.1");
  Result<std::string> dir =
      ResolveSimLibDir((root.path() / "bin/fgpu").string(), (root.path() / "elsewhere/").string());
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  EXPECT_EQ(*dir, (root.path() / "elsewhere").string());
}

TEST(ResolveSimLibDirTest, OverrideWithoutTheLibraryIsAnErrorEvenIfTheDefaultHasIt) {
  ScratchDir root;
  Touch(root, "lib/fgpu/sim/libcuda.so.1");
  fs::create_directories(root.path() / "empty");
  Result<std::string> dir =
      ResolveSimLibDir((root.path() / "bin/fgpu").string(), (root.path() / "empty").string());
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("FGPU_SIM_LIBDIR"), std::string::npos);
}

TEST(ResolveSimLibDirTest, RelativeOverrideBecomesAbsolute) {
  ScratchDir root;
  Touch(root, "sim/libcuda.so.1");
  const fs::path previous = fs::current_path();
  fs::current_path(root.path());
  Result<std::string> dir = ResolveSimLibDir("/nowhere/bin/fgpu", "sim");
  fs::current_path(previous);
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  EXPECT_EQ(*dir, (root.path() / "sim").string());
}

TEST(ResolveSimLibDirTest, ADirectoryNamedLikeTheLibraryDoesNotCount) {
  ScratchDir root;
  fs::create_directories(root.path() / "lib/fgpu/sim/libcuda.so.1");
  EXPECT_FALSE(ResolveSimLibDir((root.path() / "bin/fgpu").string(), "").ok());
}

}  // namespace
}  // namespace fgpu::cli
