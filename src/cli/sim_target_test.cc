#include "cli/sim_target.h"

#include <gtest/gtest.h>

#include <map>

#include "cli/test_scratch_dir.h"

namespace fgpu::cli {
namespace {

constexpr const char* kSmallGpu = R"({"devices": [{"name": "Test GPU", "memory": "16GiB"}]})";

std::map<std::string, std::string> AsMap(const EnvironmentChanges& changes) {
  return {changes.begin(), changes.end()};
}

TEST(ResolveSimTargetTest, NothingGivenMeansTheDefaultConfigAndSegment) {
  Result<SimTarget> target = ResolveSimTarget("", "", nullptr, "");
  ASSERT_TRUE(target.ok()) << target.status().message();
  EXPECT_TRUE(target->config_path.empty());
  EXPECT_EQ(target->config.devices.size(), 1u);
  EXPECT_EQ(target->segment, sim::SharedDevices::DefaultSegmentName(sim::DefaultSimConfig()));
  EXPECT_TRUE(target->segment_is_default);
}

TEST(ResolveSimTargetTest, ConfigFlagIsLoadedAndMadeAbsolute) {
  ScratchDir dir;
  dir.Write("gpu.json", kSmallGpu);
  const std::filesystem::path previous = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  Result<SimTarget> target = ResolveSimTarget("gpu.json", "", nullptr, nullptr);
  std::filesystem::current_path(previous);
  ASSERT_TRUE(target.ok()) << target.status().message();
  EXPECT_EQ(target->config_path, (dir.path() / "gpu.json").string());
  EXPECT_EQ(target->config.devices.at(0).name, "Test GPU");
  EXPECT_EQ(target->segment, sim::SharedDevices::DefaultSegmentName(target->config));
}

TEST(ResolveSimTargetTest, FlagsWinOverTheEnvironment) {
  ScratchDir dir;
  const std::string flag_config = dir.Write("flag.json", kSmallGpu);
  const std::string env_config = dir.Write("env.json", "not json");
  Result<SimTarget> target = ResolveSimTarget(flag_config, "/from-flag", env_config.c_str(), "/from-env");
  ASSERT_TRUE(target.ok()) << target.status().message();
  EXPECT_EQ(target->config_path, flag_config);
  EXPECT_EQ(target->segment, "/from-flag");
  EXPECT_FALSE(target->segment_is_default);
}

TEST(ResolveSimTargetTest, EnvironmentIsUsedWithoutFlags) {
  ScratchDir dir;
  const std::string env_config = dir.Write("env.json", kSmallGpu);
  Result<SimTarget> target = ResolveSimTarget("", "", env_config.c_str(), "/from-env");
  ASSERT_TRUE(target.ok()) << target.status().message();
  EXPECT_EQ(target->config_path, env_config);
  EXPECT_EQ(target->segment, "/from-env");
}

TEST(ResolveSimTargetTest, InvalidConfigNamesItsSource) {
  ScratchDir dir;
  const std::string bad = dir.Write("bad.json", R"({"devices": [{"memroy": "16GiB"}]})");
  Result<SimTarget> from_flag = ResolveSimTarget(bad, "", nullptr, nullptr);
  ASSERT_FALSE(from_flag.ok());
  EXPECT_EQ(from_flag.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(from_flag.status().message().find("--config " + bad), std::string::npos);

  Result<SimTarget> from_env = ResolveSimTarget("", "", bad.c_str(), nullptr);
  ASSERT_FALSE(from_env.ok());
  EXPECT_NE(from_env.status().message().find("FGPU_SIM_CONFIG=" + bad), std::string::npos);
}

TEST(ResolveSimTargetTest, MissingConfigFileIsNotFound) {
  ScratchDir dir;
  Result<SimTarget> target = ResolveSimTarget((dir.path() / "absent.json").string(), "", nullptr, nullptr);
  ASSERT_FALSE(target.ok());
  EXPECT_EQ(target.status().code(), StatusCode::kNotFound);
}

TEST(ResolveSimTargetTest, BadSegmentNameIsRejectedNamingItsSource) {
  Result<SimTarget> from_flag = ResolveSimTarget("", "no-slash", nullptr, nullptr);
  ASSERT_FALSE(from_flag.ok());
  EXPECT_NE(from_flag.status().message().find("--segment"), std::string::npos);
  Result<SimTarget> from_env = ResolveSimTarget("", "", nullptr, "/a/b");
  ASSERT_FALSE(from_env.ok());
  EXPECT_NE(from_env.status().message().find("FGPU_SIM_SEGMENT"), std::string::npos);
}

TEST(ValidateSegmentNameTest, AcceptsOnlyPosixShmNames) {
  EXPECT_TRUE(ValidateSegmentName("/fgpu-sim-test").ok());
  EXPECT_TRUE(ValidateSegmentName("/x").ok());
  EXPECT_TRUE(ValidateSegmentName("/" + std::string(254, 'a')).ok());
  EXPECT_FALSE(ValidateSegmentName("/" + std::string(255, 'a')).ok());
  EXPECT_FALSE(ValidateSegmentName("").ok());
  EXPECT_FALSE(ValidateSegmentName("/").ok());
  EXPECT_FALSE(ValidateSegmentName("name").ok());
  EXPECT_FALSE(ValidateSegmentName("/dir/name").ok());
}

TEST(SimEnvironmentTest, PutsTheSimulatedDriverFirstOnTheLibraryPath) {
  SimTarget target;
  EXPECT_EQ(AsMap(SimEnvironment(target, "/sim", "/usr/lib:/opt/lib"))["LD_LIBRARY_PATH"],
            "/sim:/usr/lib:/opt/lib");
}

TEST(SimEnvironmentTest, AddsNoEmptyLibraryPathEntry) {
  SimTarget target;
  EXPECT_EQ(AsMap(SimEnvironment(target, "/sim", nullptr))["LD_LIBRARY_PATH"], "/sim");
  EXPECT_EQ(AsMap(SimEnvironment(target, "/sim", ""))["LD_LIBRARY_PATH"], "/sim");
}

TEST(SimEnvironmentTest, SetsConfigAndSegmentOnlyWhenChosen) {
  SimTarget defaults;
  defaults.segment = "/fgpu-sim-default";
  auto plain = AsMap(SimEnvironment(defaults, "/sim", nullptr));
  EXPECT_EQ(plain.count("FGPU_SIM_CONFIG"), 0u);
  EXPECT_EQ(plain.count("FGPU_SIM_SEGMENT"), 0u);

  SimTarget chosen;
  chosen.config_path = "/etc/gpu.json";
  chosen.segment = "/mine";
  chosen.segment_is_default = false;
  auto set = AsMap(SimEnvironment(chosen, "/sim", nullptr));
  EXPECT_EQ(set["FGPU_SIM_CONFIG"], "/etc/gpu.json");
  EXPECT_EQ(set["FGPU_SIM_SEGMENT"], "/mine");
}

}  // namespace
}  // namespace fgpu::cli
