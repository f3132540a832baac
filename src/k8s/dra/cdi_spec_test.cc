#include "k8s/dra/cdi_spec.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace fgpu::k8s {
namespace {

class CdiSpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("fgpu-cdi-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(CdiSpecTest, TheSpecCarriesTheSlicesEnvironmentMountsAndDevices) {
  CdiDevice device;
  device.name = "uid-1-gpu-aaaa";
  device.env = {{"FGPU_SLICE", "/run/fgpu/slices/s1"}, {"CUDA_VISIBLE_DEVICES", "GPU-aaaa"}};
  device.mounts = {{"/run/fgpu/slices/s1", true}, {"/run/fgpu/slices/s1/ledger", false}};
  device.device_nodes = {"/dev/nvidia0"};
  const auto spec = BuildCdiSpec({device});
  EXPECT_EQ(spec["cdiVersion"], "0.6.0");
  EXPECT_EQ(spec["kind"], "gpu.fgpu.io/slice");
  const auto& edits = spec["devices"][0]["containerEdits"];
  EXPECT_EQ(spec["devices"][0]["name"], "uid-1-gpu-aaaa");
  EXPECT_EQ(edits["env"][0], "FGPU_SLICE=/run/fgpu/slices/s1");
  EXPECT_EQ(edits["env"][1], "CUDA_VISIBLE_DEVICES=GPU-aaaa");
  EXPECT_EQ(edits["mounts"][0]["containerPath"], "/run/fgpu/slices/s1");
  EXPECT_EQ(edits["mounts"][0]["options"][0], "ro");
  EXPECT_EQ(edits["mounts"][1]["options"][0], "rw");
  EXPECT_EQ(edits["deviceNodes"][0]["path"], "/dev/nvidia0");
  EXPECT_EQ(CdiIdOf("uid-1-gpu-aaaa"), "gpu.fgpu.io/slice=uid-1-gpu-aaaa");
}

TEST_F(CdiSpecTest, WrittenAtomicallyReadableByTheRuntimeAndListedByClaim) {
  const std::string path = CdiSpecPath(dir_.string(), "uid-1");
  ASSERT_TRUE(WriteCdiSpec(path, BuildCdiSpec({})).ok());
  ASSERT_TRUE(WriteCdiSpec(CdiSpecPath(dir_.string(), "uid-2"), BuildCdiSpec({})).ok());
  std::ofstream(dir_ / "nvidia.com-gpu.json") << "{}";
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0644u);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::vector<std::string> claims = ListCdiSpecClaims(dir_.string());
  std::sort(claims.begin(), claims.end());
  EXPECT_EQ(claims, (std::vector<std::string>{"uid-1", "uid-2"}));
  EXPECT_TRUE(RemoveCdiSpec(path).ok());
  EXPECT_TRUE(RemoveCdiSpec(path).ok());  // gone already: fine
  EXPECT_FALSE(WriteCdiSpec((dir_ / "missing" / "x.json").string(), BuildCdiSpec({})).ok());
}

}  // namespace
}  // namespace fgpu::k8s
