#include "core/mig_profiles.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "core/units.h"

namespace fgpu::mig {
namespace {

std::vector<int> StartsOf(const Profile& profile) {
  std::vector<int> starts;
  for (int slot = 0; slot < kMemorySlices; ++slot) {
    if (profile.CanStartAt(slot)) starts.push_back(slot);
  }
  return starts;
}

// nvidia-smi mig -lgipp on A100-40GB and H100-80GB (../shared/reference/cuda.md §4.3): every
// profile's valid starts and size, by profile id, the same on every model.
TEST(MigProfilesTest, EveryModelHasNvidiasPlacements) {
  const std::map<uint32_t, std::pair<std::vector<int>, int>> lgipp{
      {19, {{0, 1, 2, 3, 4, 5, 6}, 1}}, {20, {{0, 1, 2, 3, 4, 5, 6}, 1}}, {15, {{0, 2, 4, 6}, 2}},
      {14, {{0, 2, 4}, 2}},             {9, {{0, 4}, 4}},                 {5, {{0}, 4}},
      {0, {{0}, 8}}};
  for (const ModelInfo& model : Models()) {
    ASSERT_EQ(model.profiles.size(), lgipp.size()) << model.name;
    for (const Profile& profile : model.profiles) {
      const auto& [starts, size] = lgipp.at(profile.id);
      EXPECT_EQ(StartsOf(profile), starts) << model.name << " " << profile.name;
      EXPECT_EQ(profile.memory_slices, size) << model.name << " " << profile.name;
      EXPECT_LE(profile.compute_slices, profile.memory_slices);
      EXPECT_LE(profile.memory_bytes, model.memory_bytes);
      EXPECT_LE(profile.sms, model.sms);
    }
  }
}

// nvidia-smi mig -lgip: ids, NVML indices, names, SMs and usable memory (cuda.md §4.2).
TEST(MigProfilesTest, ProfilesMatchNvidiasTables) {
  const ModelInfo& h100 = InfoOf(Model::kH100_80GB);
  const Profile* three = FindProfileByName(h100, "3g.40gb");
  ASSERT_NE(three, nullptr);
  EXPECT_EQ(three->id, 9u);
  EXPECT_EQ(three->nvml_index, 0x2u);
  EXPECT_EQ(three->sms, 60);
  EXPECT_EQ(three->memory_bytes, 40448 * kMiB);  // 39.50 GiB
  EXPECT_EQ(three->max_instances, 2);
  EXPECT_EQ(FindProfile(h100, 15)->name, "1g.20gb");
  EXPECT_EQ(FindProfile(h100, 15)->sms, 26);
  EXPECT_EQ(FindProfileByNvmlIndex(h100, 0x7)->name, "1g.10gb+me");
  EXPECT_TRUE(FindProfileByNvmlIndex(h100, 0x7)->media);
  EXPECT_EQ(FindProfile(h100, 0)->memory_bytes, 81152 * kMiB);  // 79.25 GiB
  const ModelInfo& a100 = InfoOf(Model::kA100_40GB);
  EXPECT_EQ(FindProfile(a100, 19)->name, "1g.5gb");
  EXPECT_EQ(FindProfile(a100, 19)->memory_bytes, 4864 * kMiB);  // 4.75 GiB
  EXPECT_EQ(FindProfile(a100, 5)->sms, 56);
  EXPECT_EQ(FindProfile(a100, 0)->sms, 98);
  EXPECT_EQ(FindProfileByName(InfoOf(Model::kH200_141GB), "7g.141gb")->id, 0u);
  EXPECT_EQ(FindProfile(a100, 42), nullptr);
}

TEST(MigProfilesTest, ProductNamesFindTheirModel) {
  EXPECT_EQ(ModelOfProduct("NVIDIA H100 80GB HBM3", 81559 * kMiB), &InfoOf(Model::kH100_80GB));
  EXPECT_EQ(ModelOfProduct("NVIDIA A100-SXM4-40GB", 40960 * kMiB), &InfoOf(Model::kA100_40GB));
  EXPECT_EQ(ModelOfProduct("NVIDIA A100 80GB PCIe", 81920 * kMiB), &InfoOf(Model::kA100_80GB));
  EXPECT_EQ(ModelOfProduct("NVIDIA H200", 143771 * kMiB), &InfoOf(Model::kH200_141GB));
  EXPECT_EQ(ModelOfProduct("NVIDIA H100 NVL", 95830 * kMiB), nullptr);  // another table
  EXPECT_EQ(ModelOfProduct("NVIDIA L4", 23034 * kMiB), nullptr);
}

// The mixes of cuda.md §4.4 and NVIDIA's examples.
TEST(MigProfilesTest, ValidAndInvalidGeometries) {
  const ModelInfo& h100 = InfoOf(Model::kH100_80GB);
  using G = std::vector<Placed>;
  EXPECT_EQ(CheckGeometry(h100, G{{5, 0}, {9, 4}}), GeometryError::kNone);                   // 4g + 3g
  EXPECT_EQ(CheckGeometry(h100, G{{9, 4}, {14, 0}, {19, 2}, {19, 3}}), GeometryError::kNone);  // 3g+2g+1g+1g
  EXPECT_EQ(CheckGeometry(h100, G{{14, 0}, {14, 2}, {14, 4}, {19, 6}}), GeometryError::kNone);
  G seven;
  for (int slot = 0; slot < 7; ++slot) seven.push_back({19, slot});
  EXPECT_EQ(CheckGeometry(h100, seven), GeometryError::kNone);
  EXPECT_EQ(CheckGeometry(h100, G{{9, 4}, {14, 0}, {15, 2}}), GeometryError::kNone);  // 3g.40gb + 2 × 20gb
  EXPECT_EQ(CheckGeometry(h100, G{{19, 7}}), GeometryError::kBadStart);  // slot 7 hosts no 1g
  EXPECT_EQ(CheckGeometry(h100, G{{9, 2}}), GeometryError::kBadStart);
  EXPECT_EQ(CheckGeometry(h100, G{{9, 0}, {14, 2}}), GeometryError::kOverlap);
  EXPECT_EQ(CheckGeometry(h100, G{{20, 0}, {20, 1}}), GeometryError::kSecondMedia);
  EXPECT_EQ(CheckGeometry(h100, G{{15, 0}, {15, 2}, {15, 4}, {15, 6}}), GeometryError::kNone);
  EXPECT_EQ(CheckGeometry(h100, G{{42, 0}}), GeometryError::kUnknownProfile);
  EXPECT_TRUE(Fits(*FindProfile(h100, 9), 4, 0x01, false, 0));
  EXPECT_FALSE(Fits(*FindProfile(h100, 9), 0, 0x01, false, 0));
  EXPECT_FALSE(Fits(*FindProfile(h100, 9), 4, 0x00, false, 2));  // max 2
  EXPECT_EQ(FreeRuns(0x00), 1);
  EXPECT_EQ(FreeRuns(0xFF), 0);
  EXPECT_EQ(FreeRuns(0b00010001), 2);  // a 1g at slots 0 and 4: room split in two
}

// Exhaustive: every geometry the rule accepts (enumerated by adding instances in candidate
// order) keeps within 7 compute slices, as the reference says follows from the memory rule.
TEST(MigProfilesTest, EveryValidGeometryFitsInSevenComputeSlices) {
  const ModelInfo& h100 = InfoOf(Model::kH100_80GB);
  std::vector<Placed> candidates;
  for (const Profile& profile : h100.profiles) {
    for (int slot = 0; slot < kMemorySlices; ++slot) {
      if (profile.CanStartAt(slot)) candidates.push_back({profile.id, slot});
    }
  }
  std::vector<Placed> geometry;
  int valid = 0;
  const auto extend = [&](const auto& self, size_t from, int compute) -> void {
    ++valid;
    EXPECT_LE(compute, kComputeSlices);
    for (size_t i = from; i < candidates.size(); ++i) {
      geometry.push_back(candidates[i]);
      if (CheckGeometry(h100, geometry) == GeometryError::kNone) {
        self(self, i + 1, compute + FindProfile(h100, candidates[i].profile_id)->compute_slices);
      }
      geometry.pop_back();
    }
  };
  extend(extend, 0, 0);
  EXPECT_GT(valid, 100);
}

}  // namespace
}  // namespace fgpu::mig
