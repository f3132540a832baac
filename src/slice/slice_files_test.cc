// Spec validation, creation/removal, and every way a slice file can be missing or damaged:
// each must be refused with the right Status and a message naming the file and the problem.
#include "slice/slice_files.h"

#include <sys/stat.h>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "core/units.h"
#include "slice/layout.h"
#include "slice/test_support.h"

namespace fgpu::slice {
namespace {

using testing::OneDeviceSpec;
using testing::Poke;
using testing::ScratchDir;
using testing::TwoDeviceSpec;

void ExpectInvalid(const SliceSpec& spec, const std::string& fragment) {
  const Status status = ValidateSpec(spec);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.message();
  EXPECT_NE(status.message().find(fragment), std::string::npos) << status.message();
}

TEST(SliceSpec, AcceptsAValidSpec) { EXPECT_TRUE(ValidateSpec(TwoDeviceSpec(kGiB, 2 * kGiB)).ok()); }

TEST(SliceSpec, RejectsBadIds) {
  SliceSpec spec = OneDeviceSpec(kGiB);
  spec.id = "";
  ExpectInvalid(spec, "slice id");
  spec.id = "has space";
  ExpectInvalid(spec, "character");
  spec.id = "slash/no";
  ExpectInvalid(spec, "character");
  spec.id = std::string(64, 'a');
  ExpectInvalid(spec, "1..63");
  spec.id = std::string(63, 'a');
  EXPECT_TRUE(ValidateSpec(spec).ok());
}

TEST(SliceSpec, RejectsBadDeviceLists) {
  SliceSpec spec = OneDeviceSpec(kGiB);
  spec.devices.clear();
  ExpectInvalid(spec, "1..16 devices");
  spec = OneDeviceSpec(kGiB);
  for (int i = 1; i <= kMaxDevices; ++i)
    spec.devices.push_back(DeviceLimit{"GPU-" + std::to_string(i), kGiB, 100});
  ExpectInvalid(spec, "got 17");
  spec = TwoDeviceSpec(kGiB, kGiB);
  spec.devices[1].uuid = "gpu-00000000-1111-2222-3333-444444444444";  // same as device 0 but case
  ExpectInvalid(spec, "appears twice");
}

TEST(SliceSpec, RejectsBadDeviceFields) {
  SliceSpec spec = OneDeviceSpec(0);
  ExpectInvalid(spec, "memory cap");
  spec = OneDeviceSpec((uint64_t{1} << 50) + 1);
  ExpectInvalid(spec, "memory cap");
  spec = OneDeviceSpec(kGiB);
  spec.devices[0].uuid = "";
  ExpectInvalid(spec, "uuid");
  spec.devices[0].uuid = std::string(48, 'x');
  ExpectInvalid(spec, "uuid");
  spec.devices[0].uuid = "GPU-\x01";
  ExpectInvalid(spec, "non-printable");
  spec = OneDeviceSpec(kGiB);
  spec.devices[0].compute_share = 0;
  ExpectInvalid(spec, "compute share");
  spec.devices[0].compute_share = 101;
  ExpectInvalid(spec, "compute share");
  spec = OneDeviceSpec(kGiB);
  spec.devices[0].compute_mode = static_cast<ComputeMode>(2);
  ExpectInvalid(spec, "device 0: compute mode must be cap (0) or share (1), got 2");
  spec = TwoDeviceSpec(kGiB, kGiB);
  spec.devices[1].tier = static_cast<Tier>(3);
  ExpectInvalid(spec, "device 1: tier must be batch (0), standard (1) or latency (2), got 3");
  spec = OneDeviceSpec(kGiB);
  spec.devices[0].compute_share = 1;
  spec.devices[0].compute_mode = ComputeMode::kCap;
  spec.devices[0].tier = Tier::kLatency;
  EXPECT_TRUE(ValidateSpec(spec).ok());
}

TEST(SliceFiles, CreateRefusesBadComputeFields) {
  ScratchDir scratch;
  SliceSpec spec = OneDeviceSpec(kGiB);
  spec.devices[0].tier = static_cast<Tier>(200);
  const Status status = SliceAdmin::Create(scratch.slice(), spec).status();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.message();
  EXPECT_NE(status.message().find("tier"), std::string::npos) << status.message();
  EXPECT_FALSE(std::filesystem::exists(scratch.slice()));
}

TEST(SliceFiles, TheComputeFieldsAreStoredWhereTheFormatSays) {
  ScratchDir scratch;
  SliceSpec spec = TwoDeviceSpec(kGiB, kGiB);
  spec.devices[1].compute_share = 42;
  spec.devices[1].compute_mode = ComputeMode::kCap;
  spec.devices[1].tier = Tier::kLatency;
  ASSERT_TRUE(SliceAdmin::Create(scratch.slice(), spec).ok());
  std::ifstream file(scratch.slice() + "/limits", std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  ASSERT_EQ(bytes.size(), layout::LimitsFileSize(2));
  const size_t device1 = 104 + 64;  // docs/slice-format.md: device d at 104 + 64·d
  uint32_t share = 0;
  std::memcpy(&share, &bytes[device1 + 56], 4);
  EXPECT_EQ(share, 42u);
  EXPECT_EQ(bytes[device1 + 60], 0);  // mode: cap
  EXPECT_EQ(bytes[device1 + 61], 2);  // tier: latency
  EXPECT_EQ(bytes[device1 + 62], 0);  // reserved
  EXPECT_EQ(bytes[device1 + 63], 0);
  EXPECT_EQ(bytes[104 + 60], 1);  // device 0: the defaults, share...
  EXPECT_EQ(bytes[104 + 61], 1);  // ...and standard
  uint32_t version = 0;
  std::memcpy(&version, &bytes[8], 4);
  EXPECT_EQ(version, 2u);
}

TEST(SliceFiles, CreateOpenRemove) {
  ScratchDir scratch;
  Result<SliceAdmin> created = SliceAdmin::Create(scratch.slice(), TwoDeviceSpec(kGiB, 3 * kGiB));
  ASSERT_TRUE(created.ok()) << created.status().message();
  EXPECT_EQ(created->spec().id, "test-slice");

  struct stat st {};
  ASSERT_EQ(::stat((scratch.slice() + "/limits").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), layout::LimitsFileSize(2));
  ASSERT_EQ(::stat((scratch.slice() + "/ledger").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "the workload user's alone";
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), layout::LedgerFileSize(2));
  ASSERT_EQ(::stat(scratch.slice().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u) << "only the creator adds, renames or removes files";
  EXPECT_FALSE(std::filesystem::exists(scratch.slice() + "/.limits.tmp"));

  Result<SliceAdmin> opened = SliceAdmin::Open(scratch.slice());
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  ASSERT_EQ(opened->spec().devices.size(), 2u);
  EXPECT_EQ(opened->spec().devices[1].uuid, testing::kUuid1);
  EXPECT_EQ(opened->spec().devices[1].memory_cap, 3 * kGiB);
  EXPECT_EQ(opened->spec().devices[1].compute_share, 50u);

  EXPECT_TRUE(opened->Remove().ok());
  EXPECT_FALSE(std::filesystem::exists(scratch.slice()));
  EXPECT_EQ(opened->Remove().code(), StatusCode::kNotFound);
}

TEST(SliceFiles, CreateRefusesAnExistingDirOrMissingParentOrBadSpec) {
  ScratchDir scratch;
  ASSERT_TRUE(SliceAdmin::Create(scratch.slice(), OneDeviceSpec(kGiB)).ok());
  EXPECT_EQ(SliceAdmin::Create(scratch.slice(), OneDeviceSpec(kGiB)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(SliceAdmin::Create(scratch.path() + "/no/such/parent", OneDeviceSpec(kGiB)).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(SliceAdmin::Create(scratch.path() + "/other", OneDeviceSpec(0)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(scratch.path() + "/other"));  // nothing left behind
}

// Fixture: a valid two-device slice whose files the test then damages; every opener (admin
// and hook) must refuse it the same way.
class DamagedSlice : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<SliceAdmin> created = SliceAdmin::Create(scratch_.slice(), TwoDeviceSpec(kGiB, kGiB));
    ASSERT_TRUE(created.ok()) << created.status().message();
  }
  std::string limits() const { return scratch_.slice() + "/limits"; }
  std::string ledger() const { return scratch_.slice() + "/ledger"; }

  // The hook refuses the slice with `code` and a message containing `file` and `fragment`; so
  // does the admin for damaged limits or a missing ledger. A ledger that is there but damaged is
  // its workload's business: the admin opens the slice and reports the ledger unreadable.
  void ExpectRefused(StatusCode code, const std::string& file, const std::string& fragment) {
    const Result<SliceAdmin> admin = SliceAdmin::Open(scratch_.slice());
    std::vector<Status> refusals = {Ledger::Attach(scratch_.slice().c_str()).status()};
    if (file == ledger() && code != StatusCode::kNotFound) {
      ASSERT_TRUE(admin.ok()) << admin.status().message();
      const UsageSnapshot usage = admin->Usage();
      EXPECT_TRUE(usage.used.empty());
      EXPECT_NE(usage.problem.find(file), std::string::npos) << usage.problem;
    } else {
      refusals.push_back(admin.status());
    }
    for (const Status& status : refusals) {
      EXPECT_EQ(status.code(), code) << status.message();
      EXPECT_NE(status.message().find(file), std::string::npos) << status.message();
      EXPECT_NE(status.message().find(fragment), std::string::npos) << status.message();
    }
  }

  ScratchDir scratch_;
};

TEST_F(DamagedSlice, MissingFilesAreNotFound) {
  std::filesystem::remove(ledger());
  ExpectRefused(StatusCode::kNotFound, ledger(), "no such file");
  std::filesystem::remove(limits());
  ExpectRefused(StatusCode::kNotFound, limits(), "no such file");
  EXPECT_EQ(Ledger::Attach((scratch_.path() + "/nothing").c_str()).status().code(), StatusCode::kNotFound);
}

TEST_F(DamagedSlice, TruncatedFilesAreCorrupt) {
  std::filesystem::resize_file(limits(), 20);
  ExpectRefused(StatusCode::kCorrupt, limits(), "truncated");
}

TEST_F(DamagedSlice, ShortenedLedgerIsCorrupt) {
  std::filesystem::resize_file(ledger(), layout::LedgerFileSize(2) - 64);
  ExpectRefused(StatusCode::kCorrupt, ledger(), "size mismatch");
}

TEST_F(DamagedSlice, GarbageIsCorrupt) {
  const std::string garbage(4096, '\x5a');
  { std::ofstream(limits(), std::ios::binary | std::ios::trunc) << garbage; }
  ExpectRefused(StatusCode::kCorrupt, limits(), "bad magic");
}

TEST_F(DamagedSlice, EmptyFileIsCorrupt) {
  std::filesystem::resize_file(ledger(), 0);
  ExpectRefused(StatusCode::kCorrupt, ledger(), "truncated");
}

TEST_F(DamagedSlice, LedgerMagicInLimitsIsCorrupt) {
  testing::PokeBytes(limits(), 0, layout::kLedgerMagic, 8);
  ExpectRefused(StatusCode::kCorrupt, limits(), "bad magic");
}

TEST_F(DamagedSlice, OtherVersionIsVersionMismatchNamingBoth) {
  Poke<uint32_t>(ledger(), offsetof(layout::LedgerHeader, version), 7);
  ExpectRefused(StatusCode::kVersionMismatch, ledger(), "format version 7, this build reads version 2");
  Poke<uint32_t>(limits(), offsetof(layout::LimitsHeader, version), 1);  // a version-1 slice
  ExpectRefused(StatusCode::kVersionMismatch, limits(), "format version 1, this build reads version 2");
}

TEST_F(DamagedSlice, WrongHeaderSizeIsCorrupt) {
  Poke<uint32_t>(limits(), offsetof(layout::LimitsHeader, header_size), 96);
  ExpectRefused(StatusCode::kCorrupt, limits(), "header size 96");
}

TEST_F(DamagedSlice, DeviceCountOutOfRangeIsCorrupt) {
  Poke<uint32_t>(limits(), offsetof(layout::LimitsHeader, device_count), 0);
  ExpectRefused(StatusCode::kCorrupt, limits(), "device count 0");
  Poke<uint32_t>(limits(), offsetof(layout::LimitsHeader, device_count), 0xffffffffu);  // "-1"
  ExpectRefused(StatusCode::kCorrupt, limits(), "device count 4294967295");
}

TEST_F(DamagedSlice, DeviceCountDisagreeingWithSizeIsCorrupt) {
  Poke<uint32_t>(limits(), offsetof(layout::LimitsHeader, device_count), 1);
  ExpectRefused(StatusCode::kCorrupt, limits(), "size mismatch");
}

TEST_F(DamagedSlice, FileSizeFieldMismatchIsCorrupt) {
  Poke<uint64_t>(limits(), offsetof(layout::LimitsHeader, file_size), ~uint64_t{0});
  ExpectRefused(StatusCode::kCorrupt, limits(), "size mismatch");
}

TEST_F(DamagedSlice, LedgerDisagreeingWithLimitsIsCorrupt) {
  Poke<uint32_t>(ledger(), offsetof(layout::LedgerHeader, device_count), 1);
  ExpectRefused(StatusCode::kCorrupt, ledger(), "the limits file has 2");
  Poke<uint32_t>(ledger(), offsetof(layout::LedgerHeader, device_count), 2);
  Poke<uint32_t>(ledger(), offsetof(layout::LedgerHeader, slot_count), 300);
  ExpectRefused(StatusCode::kCorrupt, ledger(), "slot geometry");
}

TEST_F(DamagedSlice, UnterminatedStringsAreCorrupt) {
  const std::string no_nul(64, 'x');
  testing::PokeBytes(limits(), offsetof(layout::LimitsHeader, id), no_nul.data(), 64);
  ExpectRefused(StatusCode::kCorrupt, limits(), "slice id");
}

TEST_F(DamagedSlice, UnterminatedUuidIsCorrupt) {
  const std::string no_nul(48, 'G');
  testing::PokeBytes(limits(), sizeof(layout::LimitsHeader) + sizeof(layout::LimitsDevice), no_nul.data(),
                     48);
  ExpectRefused(StatusCode::kCorrupt, limits(), "device 1: uuid");
}

TEST_F(DamagedSlice, OverflowingCapIsCorrupt) {
  Poke<uint64_t>(limits(), sizeof(layout::LimitsHeader) + offsetof(layout::LimitsDevice, memory_cap),
                 ~uint64_t{0});  // a "negative" cap
  ExpectRefused(StatusCode::kCorrupt, limits(), "exceeds 1 PiB");
}

TEST_F(DamagedSlice, ZeroComputeShareIsCorrupt) {
  Poke<uint32_t>(limits(), sizeof(layout::LimitsHeader) + offsetof(layout::LimitsDevice, compute_share), 0);
  ExpectRefused(StatusCode::kCorrupt, limits(), "compute share 0");
}

TEST_F(DamagedSlice, UnknownComputeModeIsCorrupt) {
  Poke<uint8_t>(limits(), sizeof(layout::LimitsHeader) + sizeof(layout::LimitsDevice) +
                              offsetof(layout::LimitsDevice, compute_mode), 2);
  ExpectRefused(StatusCode::kCorrupt, limits(), "device 1: compute mode 2 outside 0..1");
}

TEST_F(DamagedSlice, UnknownTierIsCorrupt) {
  Poke<uint8_t>(limits(), sizeof(layout::LimitsHeader) + offsetof(layout::LimitsDevice, tier), 3);
  ExpectRefused(StatusCode::kCorrupt, limits(), "device 0: tier 3 outside 0..2");
}

TEST_F(DamagedSlice, OverlargeComputeShareIsCorrupt) {
  Poke<uint32_t>(limits(), sizeof(layout::LimitsHeader) + offsetof(layout::LimitsDevice, compute_share), 101);
  ExpectRefused(StatusCode::kCorrupt, limits(), "compute share 101");
}

TEST_F(DamagedSlice, NegativeDeviceTotalIsCorrupt) {
  Poke<uint64_t>(ledger(), sizeof(layout::LedgerHeader) + sizeof(layout::DeviceWord), ~uint64_t{0} - 5);
  ExpectRefused(StatusCode::kCorrupt, ledger(), "device 1 has");
}

TEST_F(DamagedSlice, DirectoryInPlaceOfFileIsCorrupt) {
  std::filesystem::remove(ledger());
  std::filesystem::create_directory(ledger());
  const Status status = SliceAdmin::Open(scratch_.slice()).status();
  EXPECT_NE(status.code(), StatusCode::kOk);
  EXPECT_NE(status.message().find(ledger()), std::string::npos) << status.message();
}

}  // namespace
}  // namespace fgpu::slice
