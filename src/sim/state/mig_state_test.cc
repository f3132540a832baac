// MIG in the shared state: capability, mode rules, GI/CI placement, per-instance memory, and
// a bound process that dies.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "core/units.h"
#include "sim/state/mig_state.h"
#include "sim/state/shared_devices.h"
#include "sim/state/test_support.h"

namespace fgpu::sim {
namespace {

using testing::ForkChild;
using testing::ScopedSegment;
using testing::SmallConfig;
using testing::WaitChild;

constexpr uint32_t k3g = 9, k2g = 14, k1g = 19, k7g = 0;

std::unique_ptr<SharedDevices> AttachH100(const std::string& name) {
  auto devices = SharedDevices::Attach(DefaultSimConfig(), name);  // one H100 80GB HBM3
  EXPECT_TRUE(devices.ok()) << devices.status().message();
  return devices.ok() ? std::move(devices).value() : nullptr;
}

TEST(MigStateTest, OnlyMigModelsAreCapable) {
  ScopedSegment segment;
  auto small = SharedDevices::Attach(SmallConfig(), segment.name());
  ASSERT_TRUE(small.ok());
  EXPECT_EQ((*small)->MigModel(0), nullptr);
  EXPECT_EQ((*small)->SetMigMode(0, true), MigResult::kNotSupported);
  EXPECT_EQ((*small)->Mig(0).model, nullptr);
}

// A config's "mig" list: the GPU starts in MIG mode with those instances, placed in order as
// the driver places them, each with one compute instance spanning it.
TEST(MigStateTest, AConfiguredGeometryIsThereFromTheStart) {
  ScopedSegment segment;
  SimConfig config = DefaultSimConfig();
  config.devices[0].mig = {"3g.40gb", "2g.20gb", "2g.20gb"};
  auto devices = SharedDevices::Attach(config, segment.name());
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  const MigSnapshot mig = (*devices)->Mig(0);
  EXPECT_TRUE(mig.enabled);
  ASSERT_EQ(mig.gpu_instances.size(), 3u);
  EXPECT_EQ(mig.gpu_instances[0].profile_id, k3g);
  EXPECT_EQ(mig.gpu_instances[0].start, 4);
  EXPECT_EQ(mig.gpu_instances[1].start, 2);
  EXPECT_EQ(mig.gpu_instances[2].start, 0);
  for (const GpuInstanceState& gi : mig.gpu_instances) {
    ASSERT_EQ(gi.compute.size(), 1u);
    EXPECT_EQ(gi.compute[0].id, 0u);
    EXPECT_EQ(gi.compute[0].size, gi.profile_id == k3g ? 3 : 2);
  }
  // The geometry is part of the config's identity: another list is another segment.
  SimConfig other = config;
  other.devices[0].mig = {"7g.80gb"};
  EXPECT_NE(ConfigFingerprint(other), ConfigFingerprint(config));
}

TEST(MigStateTest, AConfiguredGeometryMustBePlaceable) {
  SimConfig config = DefaultSimConfig();
  config.devices[0].mig = {"7g.80gb", "1g.10gb"};
  Status bad = ValidateSimConfig(config);
  EXPECT_NE(bad.message().find("'1g.10gb' does not fit beside the instances before it"), std::string::npos)
      << bad.message();
  config.devices[0].mig = {"5g.50gb"};
  EXPECT_NE(ValidateSimConfig(config).message().find("not a MIG profile of the H100-80GB"), std::string::npos);
  config = SmallConfig();
  config.devices[0].mig = {"1g.10gb"};
  EXPECT_NE(ValidateSimConfig(config).message().find("has no MIG"), std::string::npos);
  Result<SimConfig> parsed = ParseSimConfig(R"({"devices": [{"mig": "3g.40gb"}]})");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("must be an array of MIG profile names"), std::string::npos);
  parsed = ParseSimConfig(R"({"devices": [{"mig": ["3g.40gb", "4g.40gb"]}]})");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->devices[0].mig, (std::vector<std::string>{"3g.40gb", "4g.40gb"}));
}

TEST(MigStateTest, PlacesInstancesAsTheDriver) {
  ScopedSegment segment;
  auto gpu = AttachH100(segment.name());
  ASSERT_NE(gpu, nullptr);
  ASSERT_NE(gpu->MigModel(0), nullptr);
  uint32_t gi = 0;
  EXPECT_EQ(gpu->CreateGpuInstance(0, k3g, -1, &gi), MigResult::kNotSupported);  // MIG disabled
  ASSERT_EQ(gpu->SetMigMode(0, true), MigResult::kOk);
  // cuda.md §4.4: `-cgi 19,19,14,9` fails and `-cgi 9,19,14,19` succeeds when the driver places.
  uint32_t a = 0, b = 0, c = 0, d = 0;
  ASSERT_EQ(gpu->CreateGpuInstance(0, k1g, -1, &a), MigResult::kOk);
  ASSERT_EQ(gpu->CreateGpuInstance(0, k1g, -1, &b), MigResult::kOk);
  ASSERT_EQ(gpu->CreateGpuInstance(0, k2g, -1, &c), MigResult::kOk);
  EXPECT_EQ(gpu->CreateGpuInstance(0, k3g, -1, &d), MigResult::kInsufficientResources);
  for (uint32_t id : {a, b, c}) ASSERT_EQ(gpu->DestroyGpuInstance(0, id), MigResult::kOk);
  ASSERT_EQ(gpu->CreateGpuInstance(0, k3g, -1, &a), MigResult::kOk);
  ASSERT_EQ(gpu->CreateGpuInstance(0, k1g, -1, &b), MigResult::kOk);
  ASSERT_EQ(gpu->CreateGpuInstance(0, k2g, -1, &c), MigResult::kOk);
  ASSERT_EQ(gpu->CreateGpuInstance(0, k1g, -1, &d), MigResult::kOk);
  const MigSnapshot snapshot = gpu->Mig(0);
  ASSERT_EQ(snapshot.gpu_instances.size(), 4u);
  EXPECT_EQ(snapshot.FindGpu(a)->start, 4);
  EXPECT_EQ(snapshot.FindGpu(b)->start, 3);
  EXPECT_EQ(snapshot.FindGpu(c)->start, 0);
  EXPECT_EQ(snapshot.FindGpu(d)->start, 2);
  EXPECT_EQ(gpu->CreateGpuInstance(0, k7g, -1, &gi), MigResult::kInsufficientResources);
  EXPECT_EQ(gpu->CreateGpuInstance(0, 12345, -1, &gi), MigResult::kInvalidArgument);
  EXPECT_EQ(gpu->SetMigMode(0, false), MigResult::kInUse);  // instances exist
}

TEST(MigStateTest, ChargesCountAgainstTheBoundInstance) {
  ScopedSegment segment;
  auto gpu = AttachH100(segment.name());
  ASSERT_NE(gpu, nullptr);
  ASSERT_EQ(gpu->SetMigMode(0, true), MigResult::kOk);
  uint32_t gi = 0, ci = 0;
  ASSERT_EQ(gpu->CreateGpuInstance(0, k1g, -1, &gi), MigResult::kOk);
  ASSERT_EQ(gpu->CreateComputeInstance(0, gi, 0, -1, &ci), MigResult::kOk);
  const pid_t child = ForkChild([&] {
    auto mine = AttachH100(segment.name());
    if (mine == nullptr || !mine->BindMigInstance(0, gi, ci)) return 1;
    const uint64_t limit = mine->GpuInstanceMemory(0, gi).total;
    if (limit != 9984 * kMiB) return 2;
    if (!mine->TryCharge(0, limit - 2 * kMiB)) return 3;
    if (mine->TryCharge(0, 4 * kMiB)) return 4;  // past the instance, though the GPU has room
    if (mine->DestroyComputeInstance(0, gi, ci) != MigResult::kInUse) return 5;
    if (mine->DestroyGpuInstance(0, gi) != MigResult::kInUse) return 6;
    ::kill(::getpid(), SIGKILL);  // dies bound and charged
    return 7;
  });
  EXPECT_EQ(WaitChild(child), 128 + SIGKILL);
  // The dead process no longer holds the instances.
  EXPECT_EQ(gpu->GpuInstanceMemory(0, gi).used, 0u);
  EXPECT_EQ(gpu->DestroyGpuInstance(0, gi), MigResult::kInUse);  // its CI still exists
  EXPECT_EQ(gpu->DestroyComputeInstance(0, gi, ci), MigResult::kOk);
  EXPECT_EQ(gpu->DestroyGpuInstance(0, gi), MigResult::kOk);
  EXPECT_EQ(gpu->SetMigMode(0, false), MigResult::kOk);
}

TEST(MigStateTest, ModeChangeWaitsForIdleDevice) {
  ScopedSegment segment;
  auto gpu = AttachH100(segment.name());
  ASSERT_NE(gpu, nullptr);
  ASSERT_TRUE(gpu->TryCharge(0, 10 * kMiB));
  EXPECT_EQ(gpu->SetMigMode(0, true), MigResult::kInUse);
  MigSnapshot snapshot = gpu->Mig(0);
  EXPECT_FALSE(snapshot.enabled);
  EXPECT_TRUE(snapshot.pending_enabled);
  gpu->Credit(0, 10 * kMiB);
  EXPECT_EQ(gpu->SetMigMode(0, true), MigResult::kOk);
  EXPECT_TRUE(gpu->Mig(0).enabled);
}

TEST(MigStateTest, ComputeInstanceRules) {
  EXPECT_TRUE(ComputeInstanceCanStartAt(1, 2, 3));
  EXPECT_FALSE(ComputeInstanceCanStartAt(2, 2, 3));
  EXPECT_TRUE(ComputeInstanceCanStartAt(3, 4, 7));
  EXPECT_FALSE(ComputeInstanceCanStartAt(3, 3, 7));
  EXPECT_EQ(ComputeProfileSlices(4), 7);
  EXPECT_EQ(ComputeProfileSlices(7), 0);
  const mig::ModelInfo& h100 = mig::InfoOf(mig::Model::kH100_80GB);
  EXPECT_EQ(ComputeInstanceSms(h100, *mig::FindProfile(h100, k3g), 1), 16);
  EXPECT_EQ(ComputeInstanceSms(h100, *mig::FindProfile(h100, k3g), 3), 60);
  EXPECT_EQ(MigDeviceName("NVIDIA H100 80GB HBM3", *mig::FindProfile(h100, k3g), 3), "NVIDIA H100 80GB HBM3 MIG 3g.40gb");
  EXPECT_EQ(MigDeviceName("NVIDIA H100 80GB HBM3", *mig::FindProfile(h100, k3g), 1),
            "NVIDIA H100 80GB HBM3 MIG 1c.3g.40gb");
  const std::string uuid = MigUuid("GPU-00000000-0000-0000-0000-000000000000", 1, 0);
  EXPECT_EQ(uuid.size(), 40u);
  EXPECT_EQ(uuid.rfind("MIG-", 0), 0u);
  EXPECT_EQ(uuid, MigUuid("GPU-00000000-0000-0000-0000-000000000000", 1, 0));
  EXPECT_NE(uuid, MigUuid("GPU-00000000-0000-0000-0000-000000000000", 1, 1));
}

}  // namespace
}  // namespace fgpu::sim
