// ParseSimConfig / LoadSimConfig / ValidateSimConfig / ConfigFingerprint.
#include <fcntl.h>
#include <unistd.h>

#include <regex>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "core/units.h"
#include "sim/state/shared_devices.h"

namespace fgpu::sim {
namespace {

SimConfig ParseOk(const std::string& json) {
  Result<SimConfig> config = ParseSimConfig(json);
  EXPECT_TRUE(config.ok()) << json << "\n-> " << config.status().message();
  return config.ok() ? *config : SimConfig{};
}

// Expects InvalidArgument whose message contains every fragment.
void ExpectInvalid(const std::string& json, std::initializer_list<std::string> fragments) {
  Result<SimConfig> config = ParseSimConfig(json);
  ASSERT_FALSE(config.ok()) << "accepted: " << json;
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument) << config.status().message();
  for (const std::string& fragment : fragments) {
    EXPECT_NE(config.status().message().find(fragment), std::string::npos)
        << "message \"" << config.status().message() << "\" lacks \"" << fragment << "\"";
  }
}

bool IsValidUuid(const std::string& uuid) {
  static const std::regex kForm("GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  return std::regex_match(uuid, kForm);
}

TEST(SimConfig, DefaultsMatchDeviceSpec) {
  const SimConfig config = DefaultSimConfig();
  ASSERT_EQ(config.devices.size(), 1u);
  const DeviceSpec& d = config.devices[0];
  EXPECT_EQ(d.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d.total_bytes, 81559 * kMiB);
  EXPECT_EQ(d.sm_count, 132);
  EXPECT_EQ(d.cc_major, 9);
  EXPECT_EQ(d.cc_minor, 0);
  EXPECT_EQ(d.granularity, 2 * kMiB);
  EXPECT_EQ(d.context_overhead, 500 * kMiB);
  EXPECT_TRUE(IsValidUuid(d.uuid)) << d.uuid;
  EXPECT_EQ(d.pci_bus_id.size(), 16u);
  EXPECT_TRUE(config.kernel_wave_ns.empty());
  EXPECT_EQ(config.default_kernel_wave_ns, 10'000u);
  EXPECT_EQ(config.utilization_period_ns, 1'000'000'000u);
  EXPECT_TRUE(ValidateSimConfig(config).ok());
}

TEST(SimConfig, EmptyObjectAndEmptyDeviceAreTheDefault) {
  const SimConfig defaults = DefaultSimConfig();
  for (const char* json : {"{}", R"({"devices": [{}]})", " \n{ }\n"}) {
    const SimConfig config = ParseOk(json);
    ASSERT_EQ(config.devices.size(), 1u);
    EXPECT_EQ(config.devices[0].uuid, defaults.devices[0].uuid);
    EXPECT_EQ(config.devices[0].pci_bus_id, defaults.devices[0].pci_bus_id);
    EXPECT_EQ(config.devices[0].total_bytes, defaults.devices[0].total_bytes);
    EXPECT_EQ(ConfigFingerprint(config), ConfigFingerprint(defaults));
  }
}

TEST(SimConfig, EveryKeyIsRead) {
  const SimConfig config = ParseOk(R"({
    "devices": [
      { "name": "NVIDIA A100-SXM4-40GB", "count": 1, "uuid": "GPU-0123ABCD-4567-89ab-cdef-0123456789AB",
        "pci_bus_id": "00000000:3b:00.0", "memory": "40GiB", "sm_count": 108, "compute_capability": "8.0",
        "granularity": "64KiB", "context_overhead": "300MiB" }
    ],
    "kernels": { "my_kernel": { "wave_us": 250 }, "tiny": { "wave_us": 0.5 }, "unset": {} },
    "default_kernel_wave_us": 12,
    "utilization_period_ms": 500
  })");
  ASSERT_EQ(config.devices.size(), 1u);
  const DeviceSpec& d = config.devices[0];
  EXPECT_EQ(d.name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(d.uuid, "GPU-0123abcd-4567-89ab-cdef-0123456789ab");  // normalised to lowercase
  EXPECT_EQ(d.pci_bus_id, "00000000:3B:00.0");                     // NVML's uppercase form
  EXPECT_EQ(d.total_bytes, 40ull << 30);
  EXPECT_EQ(d.sm_count, 108);
  EXPECT_EQ(d.cc_major, 8);
  EXPECT_EQ(d.cc_minor, 0);
  EXPECT_EQ(d.granularity, 64u << 10);
  EXPECT_EQ(d.context_overhead, 300 * kMiB);
  EXPECT_EQ(config.kernel_wave_ns.at("my_kernel"), 250'000u);
  EXPECT_EQ(config.kernel_wave_ns.at("tiny"), 500u);
  EXPECT_EQ(config.kernel_wave_ns.at("unset"), 12'000u);  // falls back to the default
  EXPECT_EQ(config.default_kernel_wave_ns, 12'000u);
  EXPECT_EQ(config.utilization_period_ns, 500'000'000u);
}

TEST(SimConfig, SizesMayBeIntegersAndCudaStylePciIdsAreAccepted) {
  const SimConfig config = ParseOk(
      R"({"devices": [{"memory": 1073741824, "granularity": 4096, "context_overhead": 0,
                       "pci_bus_id": "0000:19:00.0", "compute_capability": "12.1"}]})");
  EXPECT_EQ(config.devices[0].total_bytes, 1ull << 30);
  EXPECT_EQ(config.devices[0].granularity, 4096u);
  EXPECT_EQ(config.devices[0].context_overhead, 0u);
  EXPECT_EQ(config.devices[0].pci_bus_id, "00000000:19:00.0");
  EXPECT_EQ(config.devices[0].cc_major, 12);
  EXPECT_EQ(config.devices[0].cc_minor, 1);
}

TEST(SimConfig, CountReplicatesWithDistinctDeterministicIdentities) {
  const std::string json = R"({"devices": [
      {"count": 3, "memory": "24GiB", "context_overhead": "1GiB"},
      {"uuid": "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", "pci_bus_id": "00000000:18:00.0"},
      {"count": 2, "name": "NVIDIA L4"}]})";
  const SimConfig config = ParseOk(json);
  ASSERT_EQ(config.devices.size(), 6u);
  std::set<std::string> uuids, pci_ids;
  for (const DeviceSpec& d : config.devices) {
    EXPECT_TRUE(IsValidUuid(d.uuid)) << d.uuid;
    uuids.insert(d.uuid);
    pci_ids.insert(d.pci_bus_id);
  }
  EXPECT_EQ(uuids.size(), 6u);
  EXPECT_EQ(pci_ids.size(), 6u);  // derived ids avoid the given 18:00.0
  EXPECT_EQ(config.devices[2].total_bytes, 24ull << 30);
  EXPECT_EQ(config.devices[4].name, "NVIDIA L4");
  const SimConfig again = ParseOk(json);
  for (size_t i = 0; i < config.devices.size(); ++i) {
    EXPECT_EQ(config.devices[i].uuid, again.devices[i].uuid);
    EXPECT_EQ(config.devices[i].pci_bus_id, again.devices[i].pci_bus_id);
  }
  // Derived from the index: the first device of any config gets the same UUID.
  EXPECT_EQ(config.devices[0].uuid, DefaultSimConfig().devices[0].uuid);
}

TEST(SimConfig, SixteenDevicesAreTheLimit) {
  EXPECT_EQ(ParseOk(R"({"devices": [{"count": 16}]})").devices.size(), 16u);
  ExpectInvalid(R"({"devices": [{"count": 17}]})", {"devices[0].count", "16"});
  ExpectInvalid(R"({"devices": [{"count": 10}, {"count": 7}]})", {"devices[1].count", "more than 16"});
}

TEST(SimConfig, UnknownKeysAreNamedWithTheirPath) {
  ExpectInvalid(R"({"devices": [{"memroy": "1GiB"}]})", {"devices[0].memroy", "unknown key", "did you mean \"memory\""});
  ExpectInvalid(R"({"devices": [{}, {"sm": 3}]})", {"devices[1].sm", "unknown key"});
  ExpectInvalid(R"({"device": []})", {"device:", "did you mean \"devices\""});
  ExpectInvalid(R"({"kernels": {"k": {"wave": 3}}})", {"kernels.k.wave", "unknown key"});
  ExpectInvalid(R"({"zzzzzzzzzz": 1})", {"zzzzzzzzzz", "valid keys"});
}

TEST(SimConfig, SizeRulesAreEnforced) {
  ExpectInvalid(R"({"devices": [{"memory": "1MiB"}]})", {"devices[0].memory", "granularity"});
  ExpectInvalid(R"({"devices": [{"memory": 0}]})", {"devices[0].memory"});
  ExpectInvalid(R"({"devices": [{"granularity": "3KiB"}]})", {"devices[0].granularity", "power of two"});
  ExpectInvalid(R"({"devices": [{"granularity": "2KiB"}]})", {"devices[0].granularity", "4 KiB"});
  ExpectInvalid(R"({"devices": [{"granularity": "6MiB"}]})", {"devices[0].granularity"});
  ExpectInvalid(R"({"devices": [{"memory": "1GiB", "context_overhead": "1GiB"}]})",
                {"devices[0].context_overhead", "less than"});
  ExpectInvalid(R"({"devices": [{"memory": "2PiB"}]})", {"devices[0].memory", "1 PiB"});
  ExpectInvalid(R"({"devices": [{"memory": "-1GiB"}]})", {"devices[0].memory", "negative"});
  ExpectInvalid(R"({"devices": [{"memory": -5}]})", {"devices[0].memory", "negative"});
  ExpectInvalid(R"({"devices": [{"memory": "lots"}]})", {"devices[0].memory", "lots"});
  ExpectInvalid(R"({"devices": [{"memory": 1.5}]})", {"devices[0].memory", "whole number"});
  ExpectInvalid(R"({"devices": [{"memory": "99999999999999999999GiB"}]})", {"devices[0].memory"});
  ExpectInvalid(R"({"devices": [{"memory": 184467440737095516160}]})", {"devices[0].memory"});
}

TEST(SimConfig, DeviceFieldRulesAreEnforced) {
  ExpectInvalid(R"({"devices": [{"sm_count": 0}]})", {"devices[0].sm_count", "1..1024"});
  ExpectInvalid(R"({"devices": [{"sm_count": 1025}]})", {"devices[0].sm_count"});
  ExpectInvalid(R"({"devices": [{"sm_count": "132"}]})", {"devices[0].sm_count", "integer"});
  ExpectInvalid(R"({"devices": [{"sm_count": 13.5}]})", {"devices[0].sm_count"});
  for (const char* cc : {"\"9\"", "\"9.\"", "\".0\"", "\"9.00\"", "\"x.y\"", "\"100.0\"", "9.0", "\"9.0 \""}) {
    ExpectInvalid(std::string(R"({"devices": [{"compute_capability": )") + cc + "}]}",
                  {"devices[0].compute_capability"});
  }
  ExpectInvalid(R"({"devices": [{"name": ""}]})", {"devices[0].name", "empty"});
  ExpectInvalid(R"({"devices": [{"name": 5}]})", {"devices[0].name", "string"});
  ExpectInvalid(R"({"devices": [{"name": ")" + std::string(96, 'x') + R"("}]})", {"devices[0].name", "95"});
  ExpectInvalid(R"({"devices": [{"count": 0}]})", {"devices[0].count"});
  ExpectInvalid(R"({"devices": [{"count": 2, "uuid": "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"}]})",
                {"devices[0]", "only when \"count\" is 1"});
  ExpectInvalid(R"({"devices": [{"count": 2, "pci_bus_id": "00000000:19:00.0"}]})", {"devices[0]", "count"});
  ExpectInvalid(R"({"devices": "H100"})", {"devices", "array"});
  ExpectInvalid(R"({"devices": []})", {"devices", "at least one"});
  ExpectInvalid(R"({"devices": [3]})", {"devices[0]", "object"});
}

TEST(SimConfig, IdentityRulesAreEnforced) {
  ExpectInvalid(R"({"devices": [{"uuid": "GPU-1234"}]})", {"devices[0].uuid", "GPU-1234"});
  ExpectInvalid(R"({"devices": [{"uuid": "0123abcd-4567-89ab-cdef-0123456789ab"}]})", {"devices[0].uuid"});
  ExpectInvalid(R"({"devices": [{"uuid": "GPU-0123abcg-4567-89ab-cdef-0123456789ab"}]})", {"devices[0].uuid"});
  ExpectInvalid(R"({"devices": [{"uuid": ""}]})", {"devices[0].uuid", "empty"});
  ExpectInvalid(R"({"devices": [{"uuid": "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"},
                                {"uuid": "GPU-AAAAAAAA-bbbb-cccc-dddd-eeeeeeeeeeee"}]})",
                {"devices[1].uuid", "duplicate UUID"});
  ExpectInvalid(R"({"devices": [{"pci_bus_id": "19:00.0"}]})", {"devices[0].pci_bus_id", "19:00.0"});
  ExpectInvalid(R"({"devices": [{"pci_bus_id": "0000:19:00.0"}, {"pci_bus_id": "00000000:19:00.0"}]})",
                {"devices[1].pci_bus_id", "duplicate"});
}

TEST(SimConfig, TimingRulesAreEnforced) {
  ExpectInvalid(R"({"kernels": {"k": {"wave_us": -1}}})", {"kernels.k.wave_us", "negative"});
  ExpectInvalid(R"({"kernels": {"k": {"wave_us": "250"}}})", {"kernels.k.wave_us"});
  ExpectInvalid(R"({"kernels": {"k": {"wave_us": 4e9}}})", {"kernels.k.wave_us", "hour"});
  ExpectInvalid(R"({"kernels": {"k": 250}})", {"kernels.k", "object"});
  ExpectInvalid(R"({"kernels": {"": {"wave_us": 1}}})", {"kernels", "empty"});
  ExpectInvalid(R"({"kernels": []})", {"kernels", "object"});
  ExpectInvalid(R"({"default_kernel_wave_us": -0.5})", {"default_kernel_wave_us"});
  ExpectInvalid(R"({"utilization_period_ms": 0})", {"utilization_period_ms"});
  ExpectInvalid(R"({"utilization_period_ms": 10001})", {"utilization_period_ms"});
  ExpectInvalid(R"({"utilization_period_ms": 2.5})", {"utilization_period_ms", "integer"});
}

TEST(SimConfig, BrokenJsonIsInvalidArgumentWithAPosition) {
  ExpectInvalid("", {"invalid JSON"});
  ExpectInvalid("{", {"invalid JSON", "column"});
  ExpectInvalid(R"({"devices": [{"memory": "1GiB"})", {"invalid JSON"});
  ExpectInvalid("not json at all", {"invalid JSON"});
  ExpectInvalid("{\"devices\": [}]", {"invalid JSON"});
  ExpectInvalid(std::string("{\"a\0\": 1}", 9), {"invalid JSON"});
  ExpectInvalid("[]", {"top level", "object"});
  ExpectInvalid("42", {"top level"});
  ExpectInvalid(R"({"devices": [{"memory": "1GiB", "memory": "2GiB"}]})", {"\"memory\"", "twice"});
  ExpectInvalid("{} trailing", {"invalid JSON"});
}

TEST(SimConfig, ValidateSimConfigChecksConfigsBuiltInCode) {
  SimConfig config = DefaultSimConfig();
  EXPECT_TRUE(ValidateSimConfig(config).ok());
  config.devices[0].uuid.clear();  // derived later; fine
  EXPECT_TRUE(ValidateSimConfig(config).ok());
  config.devices.push_back(config.devices[0]);
  config.devices[1].uuid = "GPU-bad";
  Status s = ValidateSimConfig(config);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("devices[1].uuid"), std::string::npos) << s.message();
  config.devices[1].uuid.clear();
  config.devices[1].sm_count = 0;
  EXPECT_NE(ValidateSimConfig(config).message().find("devices[1].sm_count"), std::string::npos);
  EXPECT_FALSE(ValidateSimConfig(SimConfig{}).ok());
  SimConfig many = DefaultSimConfig();
  many.devices.resize(17);
  EXPECT_FALSE(ValidateSimConfig(many).ok());
}

TEST(SimConfig, FingerprintCoversDevicesOnly) {
  const SimConfig base = ParseOk(R"({"devices": [{"memory": "16GiB"}]})");
  EXPECT_EQ(ConfigFingerprint(base), ConfigFingerprint(ParseOk(R"({"devices": [{"memory": "16GiB"}]})")));
  EXPECT_NE(ConfigFingerprint(base), ConfigFingerprint(ParseOk(R"({"devices": [{"memory": "32GiB"}]})")));
  EXPECT_NE(ConfigFingerprint(base), ConfigFingerprint(ParseOk(R"({"devices": [{"memory": "16GiB", "count": 2}]})")));
  EXPECT_NE(ConfigFingerprint(base), ConfigFingerprint(ParseOk(R"({"devices": [{"memory": "16GiB", "name": "x"}]})")));
  EXPECT_NE(ConfigFingerprint(base),
            ConfigFingerprint(ParseOk(R"({"devices": [{"memory": "16GiB", "granularity": "4KiB"}]})")));
  EXPECT_EQ(ConfigFingerprint(base),
            ConfigFingerprint(ParseOk(R"({"devices": [{"memory": "16GiB"}], "kernels": {"k": {"wave_us": 5}},
                                          "utilization_period_ms": 200})")));
  // A derived identity and the same identity written out are the same device.
  SimConfig derived = DefaultSimConfig();
  SimConfig blank = DefaultSimConfig();
  blank.devices[0].uuid.clear();
  blank.devices[0].pci_bus_id.clear();
  EXPECT_EQ(ConfigFingerprint(derived), ConfigFingerprint(blank));
}

TEST(LoadSimConfig, EmptyPathIsTheDefault) {
  Result<SimConfig> config = LoadSimConfig("");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(ConfigFingerprint(*config), ConfigFingerprint(DefaultSimConfig()));
}

TEST(LoadSimConfig, ReadsAFileAndNamesItInErrors) {
  char path[] = "/tmp/fgpu-config-test-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string json = R"({"devices": [{"memory": "8GiB", "context_overhead": "100MiB"}]})";
  ASSERT_EQ(::write(fd, json.data(), json.size()), static_cast<ssize_t>(json.size()));
  ::close(fd);
  Result<SimConfig> config = LoadSimConfig(path);
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->devices[0].total_bytes, 8ull << 30);

  const int again = ::open(path, O_WRONLY | O_TRUNC);
  ASSERT_GE(again, 0);
  ASSERT_EQ(::write(again, "{\"devices\": [{\"memroy\"", 22), 22);
  ::close(again);
  Result<SimConfig> broken = LoadSimConfig(path);
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(broken.status().message().find(path), std::string::npos) << broken.status().message();
  ::unlink(path);
}

TEST(LoadSimConfig, MissingAndUnreadableFiles) {
  Result<SimConfig> missing = LoadSimConfig("/nonexistent/dir/sim.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/dir/sim.json"), std::string::npos);
  Result<SimConfig> directory = LoadSimConfig("/tmp");
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(directory.status().message().find("/tmp"), std::string::npos);
}

}  // namespace
}  // namespace fgpu::sim
