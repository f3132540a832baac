// Attaching: creation, validation of existing segments, names, environment.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "sim/state/segment_layout.h"
#include "sim/state/shared_devices.h"
#include "sim/state/test_support.h"

namespace fgpu::sim {
namespace {

using testing::ScopedSegment;
using testing::SmallConfig;

// Writes `bytes` at `offset` of an existing segment, as a stray writer would.
void PokeSegment(const std::string& name, size_t offset, const void* bytes, size_t size) {
  const int fd = ::shm_open(name.c_str(), O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, bytes, size, static_cast<off_t>(offset)), static_cast<ssize_t>(size));
  ::close(fd);
}

// Creates a segment file of `size` bytes with the given contents, bypassing the library.
void CreateRawSegment(const std::string& name, const std::string& contents) {
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, contents.data(), contents.size()), static_cast<ssize_t>(contents.size()));
  ::close(fd);
}

TEST(SharedDevicesAttach, CreatesTheSegmentAndReportsTheConfig) {
  ScopedSegment segment;
  SimConfig config = SmallConfig(2, 128ull << 20);
  config.devices[1].name = "NVIDIA A100-SXM4-40GB";
  Result<std::unique_ptr<SharedDevices>> devices = SharedDevices::Attach(config, segment.name());
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  SharedDevices& d = **devices;
  EXPECT_EQ(d.device_count(), 2);
  EXPECT_EQ(d.segment_name(), segment.name());
  EXPECT_EQ(d.spec(1).name, "NVIDIA A100-SXM4-40GB");
  EXPECT_FALSE(d.spec(0).uuid.empty());  // derived
  EXPECT_NE(d.spec(0).uuid, d.spec(1).uuid);
  EXPECT_NE(d.spec(0).pci_bus_id, d.spec(1).pci_bus_id);
  MemoryInfo memory = d.Memory(1);
  EXPECT_EQ(memory.total, 128ull << 20);
  EXPECT_EQ(memory.used, 0u);
  EXPECT_EQ(memory.free, 128ull << 20);
  EXPECT_GE(d.TEST_OwnSlot(), 0);
}

TEST(SharedDevicesAttach, SecondAttachSharesTheSegmentAndTheSlot) {
  ScopedSegment segment;
  auto a = SharedDevices::Attach(SmallConfig(), segment.name());
  auto b = SharedDevices::Attach(SmallConfig(), segment.name());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)->TEST_OwnSlot(), (*b)->TEST_OwnSlot());
  ASSERT_TRUE((*a)->TryCharge(0, 4 << 20));
  EXPECT_EQ((*b)->ChargedByThisProcess(0), 4u << 20);
  EXPECT_EQ((*b)->Memory(0).used, 4u << 20);
  a->reset();  // unmapping does not release this process's charges
  EXPECT_EQ((*b)->Memory(0).used, 4u << 20);
}

TEST(SharedDevicesAttach, ReattachAfterDestroyKeepsTheSlot) {
  ScopedSegment segment;
  int slot = -1;
  {
    auto a = SharedDevices::Attach(SmallConfig(), segment.name());
    ASSERT_TRUE(a.ok());
    ASSERT_TRUE((*a)->TryCharge(0, 2 << 20));
    slot = (*a)->TEST_OwnSlot();
  }
  auto b = SharedDevices::Attach(SmallConfig(), segment.name());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)->TEST_OwnSlot(), slot);
  EXPECT_EQ((*b)->ChargedByThisProcess(0), 2u << 20);
}

TEST(SharedDevicesAttach, OtherLayoutVersionIsRefusedWithAHint) {
  ScopedSegment segment;
  ASSERT_TRUE(SharedDevices::Attach(SmallConfig(), segment.name()).ok());
  const uint32_t other_version = layout::kSegmentVersion + 1;
  PokeSegment(segment.name(), offsetof(layout::SegmentHeader, layout_version), &other_version, sizeof(other_version));
  auto again = SharedDevices::Attach(SmallConfig(), segment.name());
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kVersionMismatch);
  const std::string expected = "segment " + segment.name() + " has layout version " + std::to_string(other_version) +
                               ", this library expects " + std::to_string(layout::kSegmentVersion) +
                               "; remove it with `fgpu sim reset` or use another FGPU_SIM_SEGMENT";
  EXPECT_EQ(again.status().message(), expected);
}

TEST(SharedDevicesAttach, OldVersionWithASmallerHeaderIsStillAVersionMismatch) {
  ScopedSegment segment;
  std::string header(64, '\0');
  std::memcpy(header.data(), layout::kMagic, 8);
  const uint32_t old_version = 0;
  std::memcpy(header.data() + 8, &old_version, 4);
  CreateRawSegment(segment.name(), header);
  auto devices = SharedDevices::Attach(SmallConfig(), segment.name());
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.status().code(), StatusCode::kVersionMismatch) << devices.status().message();
}

TEST(SharedDevicesAttach, GarbageIsCorrupt) {
  ScopedSegment segment;
  std::string garbage(1 << 16, '\0');
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>((i * 7919 + 13) % 251 + 1);
  CreateRawSegment(segment.name(), garbage);
  auto devices = SharedDevices::Attach(SmallConfig(), segment.name());
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.status().code(), StatusCode::kCorrupt) << devices.status().message();
  EXPECT_NE(devices.status().message().find(segment.name()), std::string::npos);
}

TEST(SharedDevicesAttach, TinyNonZeroFileIsCorrupt) {
  ScopedSegment segment;
  CreateRawSegment(segment.name(), "FGPU");
  auto devices = SharedDevices::Attach(SmallConfig(), segment.name());
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.status().code(), StatusCode::kCorrupt);
}

TEST(SharedDevicesAttach, TruncatedSegmentIsCorrupt) {
  ScopedSegment segment;
  ASSERT_TRUE(SharedDevices::Attach(SmallConfig(), segment.name()).ok());
  const int fd = ::shm_open(segment.name().c_str(), O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(sizeof(layout::SegmentPrefix))), 0);
  ::close(fd);
  auto devices = SharedDevices::Attach(SmallConfig(), segment.name());
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.status().code(), StatusCode::kCorrupt) << devices.status().message();
}

TEST(SharedDevicesAttach, BadDeviceCountInHeaderIsCorrupt) {
  ScopedSegment segment;
  ASSERT_TRUE(SharedDevices::Attach(SmallConfig(), segment.name()).ok());
  const uint32_t count = 4000;
  PokeSegment(segment.name(), offsetof(layout::SegmentHeader, device_count), &count, sizeof(count));
  auto devices = SharedDevices::Attach(SmallConfig(), segment.name());
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.status().code(), StatusCode::kCorrupt);
}

TEST(SharedDevicesAttach, OtherConfigurationIsInvalidArgument) {
  ScopedSegment segment;
  ASSERT_TRUE(SharedDevices::Attach(SmallConfig(1, 64ull << 20), segment.name()).ok());
  auto other = SharedDevices::Attach(SmallConfig(1, 128ull << 20), segment.name());
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(other.status().message().find("another device configuration"), std::string::npos);
  auto more_devices = SharedDevices::Attach(SmallConfig(2, 64ull << 20), segment.name());
  ASSERT_FALSE(more_devices.ok());
  EXPECT_EQ(more_devices.status().code(), StatusCode::kInvalidArgument);
}

TEST(SharedDevicesAttach, ConfigDifferingOnlyInKernelTimesSharesTheSegment) {
  ScopedSegment segment;
  SimConfig a = SmallConfig();
  SimConfig b = SmallConfig();
  b.kernel_wave_ns["gemm"] = 250'000;
  b.utilization_period_ns = 500'000'000;
  ASSERT_TRUE(SharedDevices::Attach(a, segment.name()).ok());
  EXPECT_TRUE(SharedDevices::Attach(b, segment.name()).ok());
}

TEST(SharedDevicesAttach, CreatorKilledBeforeTheMagicIsReinitialised) {
  ScopedSegment segment;
  // What a creator leaves when killed after sizing the file but before the magic.
  CreateRawSegment(segment.name(), std::string(layout::SegmentSize(1), '\0'));
  auto devices = SharedDevices::Attach(SmallConfig(), segment.name());
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  ASSERT_TRUE((*devices)->TryCharge(0, 1 << 20));
  EXPECT_EQ((*devices)->Memory(0).used, 1u << 20);
}

TEST(SharedDevicesAttach, EmptyFileIsInitialised) {
  ScopedSegment segment;
  CreateRawSegment(segment.name(), "");
  auto devices = SharedDevices::Attach(SmallConfig(), segment.name());
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  EXPECT_EQ((*devices)->Memory(0).total, 64u << 20);
}

TEST(SharedDevicesAttach, InvalidConfigIsRefusedBeforeTouchingTheSegment) {
  ScopedSegment segment;
  SimConfig config = SmallConfig();
  config.devices[0].granularity = 3000;
  auto devices = SharedDevices::Attach(config, segment.name());
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(devices.status().message().find("devices[0].granularity"), std::string::npos);
  EXPECT_FALSE(SharedDevices::Attach(SimConfig{}, segment.name()).ok());  // no devices
}

TEST(SharedDevicesAttach, BadSegmentNamesAreInvalidArgument) {
  const std::string too_long = "/" + std::string(300, 'x');
  for (const std::string& name : std::vector<std::string>{"", "/", "noslash", "/a/b", "/with space", too_long}) {
    auto devices = SharedDevices::Attach(SmallConfig(), name);
    ASSERT_FALSE(devices.ok()) << name;
    EXPECT_EQ(devices.status().code(), StatusCode::kInvalidArgument) << name;
    EXPECT_EQ(SharedDevices::Remove(name).code(), StatusCode::kInvalidArgument) << name;
  }
}

TEST(SharedDevicesAttach, RemoveOfAMissingSegmentIsOk) {
  ScopedSegment segment;
  EXPECT_TRUE(SharedDevices::Remove(segment.name()).ok());
  ASSERT_TRUE(SharedDevices::Attach(SmallConfig(), segment.name()).ok());
  EXPECT_TRUE(SharedDevices::Remove(segment.name()).ok());
  EXPECT_TRUE(SharedDevices::Remove(segment.name()).ok());
}

TEST(SharedDevicesAttach, DefaultSegmentNameIsPerUserAndConfig) {
  const std::string a = SharedDevices::DefaultSegmentName(DefaultSimConfig());
  const std::string b = SharedDevices::DefaultSegmentName(SmallConfig());
  EXPECT_EQ(a.rfind("/fgpu-sim-" + std::to_string(::getuid()) + "-", 0), 0u) << a;
  EXPECT_EQ(a.size(), std::string("/fgpu-sim-").size() + std::to_string(::getuid()).size() + 1 + 16);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, SharedDevices::DefaultSegmentName(DefaultSimConfig()));
}

// Sets or unsets an environment variable for a scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_old_ = old != nullptr;
    if (had_old_) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_old_) {
      ::setenv(name_, old_.c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  bool had_old_ = false;
  std::string old_;
};

TEST(AttachFromEnvironment, UsesTheConfigAndSegmentNamed) {
  ScopedSegment segment;
  char path[] = "/tmp/fgpu-sim-config-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string json = R"({"devices": [{"memory": "256MiB", "context_overhead": "8MiB", "count": 3}]})";
  ASSERT_EQ(::write(fd, json.data(), json.size()), static_cast<ssize_t>(json.size()));
  ::close(fd);
  {
    ScopedEnv config(kConfigEnv, path);
    ScopedEnv name(kSegmentEnv, segment.name().c_str());
    auto devices = AttachFromEnvironment();
    ASSERT_TRUE(devices.ok()) << devices.status().message();
    EXPECT_EQ((*devices)->device_count(), 3);
    EXPECT_EQ((*devices)->segment_name(), segment.name());
    EXPECT_EQ((*devices)->Memory(2).total, 256u << 20);
  }
  ::unlink(path);
}

TEST(AttachFromEnvironment, MissingConfigFileIsAnError) {
  ScopedEnv config(kConfigEnv, "/nonexistent/fgpu-sim.json");
  auto devices = AttachFromEnvironment();
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.status().code(), StatusCode::kNotFound);
  EXPECT_NE(devices.status().message().find("/nonexistent/fgpu-sim.json"), std::string::npos);
}

TEST(AttachFromEnvironment, UnsetMeansDefaults) {
  ScopedEnv config(kConfigEnv, nullptr);
  ScopedSegment segment;
  ScopedEnv name(kSegmentEnv, segment.name().c_str());
  auto devices = AttachFromEnvironment();
  ASSERT_TRUE(devices.ok()) << devices.status().message();
  EXPECT_EQ((*devices)->device_count(), 1);
  EXPECT_EQ((*devices)->spec(0).total_bytes, DefaultSimConfig().devices[0].total_bytes);
}

}  // namespace
}  // namespace fgpu::sim
