#include "hook/interpose/options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fgpu::hook {
namespace {

Options Read(std::initializer_list<const char*> entries) {
  std::vector<const char*> env(entries);
  env.push_back(nullptr);
  Options options;
  ReadOptions(env.data(), &options);
  return options;
}

TEST(OptionsTest, EmptyEnvironmentEnforcesWithoutSlice) {
  const Options options = Read({"PATH=/bin", "HOME=/root"});
  EXPECT_FALSE(options.disabled);
  EXPECT_FALSE(options.slice_set);
  EXPECT_FALSE(options.slice_too_long);
  Options from_null;
  from_null.disabled = true;
  ReadOptions(nullptr, &from_null);
  EXPECT_FALSE(from_null.disabled);
}

TEST(OptionsTest, DisableAcceptsOnlyYesWords) {
  for (const char* yes : {"FGPU_DISABLE=1", "FGPU_DISABLE=true", "FGPU_DISABLE=TRUE", "FGPU_DISABLE=Yes",
                          "FGPU_DISABLE=on"}) {
    EXPECT_TRUE(Read({yes}).disabled) << yes;
  }
  for (const char* no : {"FGPU_DISABLE=", "FGPU_DISABLE=0", "FGPU_DISABLE=false", "FGPU_DISABLE=2",
                         "FGPU_DISABLE=1 ", "FGPU_DISABLE=yess", "FGPU_DISABLED=1", "XFGPU_DISABLE=1",
                         "FGPU_DISABLE"}) {
    EXPECT_FALSE(Read({no}).disabled) << no;
  }
}

TEST(OptionsTest, SliceDirectoryIsCopied) {
  std::string entry = "FGPU_SLICE=/run/fgpu/slices/a";
  const char* env[] = {"FGPU_SLICEX=/wrong", entry.c_str(), nullptr};
  Options options;
  ReadOptions(env, &options);
  entry.assign(entry.size(), 'x');  // the application rewriting its environment later
  EXPECT_TRUE(options.slice_set);
  EXPECT_STREQ(options.slice_dir, "/run/fgpu/slices/a");
}

TEST(OptionsTest, FirstDefinitionWinsAsGetenvWould) {
  const Options options = Read({"FGPU_SLICE=/first", "FGPU_DISABLE=0", "FGPU_SLICE=/second", "FGPU_DISABLE=1"});
  EXPECT_STREQ(options.slice_dir, "/first");
  EXPECT_FALSE(options.disabled);
}

TEST(OptionsTest, EmptySliceIsUnset) {
  const Options options = Read({"FGPU_SLICE="});
  EXPECT_FALSE(options.slice_set);
  EXPECT_FALSE(options.slice_too_long);
}

TEST(OptionsTest, OverlongSliceIsReportedNotTruncated) {
  const std::string fits = "FGPU_SLICE=" + std::string(PATH_MAX - 1, 'a');
  const Options ok = Read({fits.c_str()});
  EXPECT_TRUE(ok.slice_set);
  EXPECT_EQ(std::string(ok.slice_dir).size(), static_cast<size_t>(PATH_MAX - 1));

  const std::string too_long = "FGPU_SLICE=" + std::string(PATH_MAX, 'a');
  const Options bad = Read({too_long.c_str()});
  EXPECT_FALSE(bad.slice_set);
  EXPECT_TRUE(bad.slice_too_long);
  EXPECT_STREQ(bad.slice_dir, "");
}

}  // namespace
}  // namespace fgpu::hook

namespace fgpu::hook {
namespace {

TEST(OptionsTest, ComputeDirDefaultsAndCanBeSet) {
  EXPECT_STREQ(Read({"PATH=/bin"}).compute_dir, kDefaultComputeDir);
  EXPECT_STREQ(Read({"FGPU_COMPUTE_DIR="}).compute_dir, kDefaultComputeDir);
  EXPECT_STREQ(Read({"FGPU_COMPUTE_DIR=/tmp/boards", "FGPU_COMPUTE_DIR=/other"}).compute_dir, "/tmp/boards");
}

TEST(OptionsTest, NodeConfigIsCopiedAndAnOverlongOneReported) {
  const Options unset = Read({"FGPU_NODE_CONFIG="});
  EXPECT_FALSE(unset.node_config_set);
  EXPECT_FALSE(unset.node_config_too_long);
  const Options set = Read({"FGPU_NODE_CONFIG=/etc/fgpu/other.conf", "FGPU_NODE_CONFIG=/second"});
  EXPECT_TRUE(set.node_config_set);
  EXPECT_STREQ(set.node_config, "/etc/fgpu/other.conf");
  const std::string too_long = "FGPU_NODE_CONFIG=" + std::string(PATH_MAX, 'a');
  const Options bad = Read({too_long.c_str()});
  EXPECT_FALSE(bad.node_config_set);
  EXPECT_TRUE(bad.node_config_too_long);
}

TEST(OptionsTest, DisabledInReadsFgpuDisableAsReadOptionsDoes) {
  for (const char* yes : {"FGPU_DISABLE=1", "FGPU_DISABLE=On"}) {
    const char* env[] = {"PATH=/bin", yes, "FGPU_DISABLE=0", nullptr};
    EXPECT_TRUE(DisabledIn(env)) << yes;
  }
  const char* first_wins[] = {"FGPU_DISABLE=0", "FGPU_DISABLE=1", nullptr};
  EXPECT_FALSE(DisabledIn(first_wins));
  const char* unset[] = {"FGPU_DISABLED=1", nullptr};
  EXPECT_FALSE(DisabledIn(unset));
  EXPECT_FALSE(DisabledIn(nullptr));
}

}  // namespace
}  // namespace fgpu::hook
