#include "cli/status_report.h"

#include <gtest/gtest.h>

namespace fgpu::cli {
namespace {

StatusReport TwoProcessesOnOneDevice() {
  DeviceReport device;
  device.index = 0;
  device.name = "NVIDIA H100 80GB HBM3";
  device.uuid = "GPU-00000000-0000-0000-0000-000000000001";
  device.memory = {80ull << 30, 30ull << 30, 50ull << 30};
  device.utilization_percent = 42;
  device.processes = {{1234, 20ull << 30}, {5678, 10ull << 30}};
  return {"/fgpu-sim-test", "", true, {device}};
}

TEST(RenderStatusTableTest, ShowsDeviceMemoryUtilizationAndProcesses) {
  const std::string table = RenderStatusTable(TwoProcessesOnOneDevice());
  for (const char* expected : {"segment /fgpu-sim-test (default configuration)", "NVIDIA H100 80GB HBM3",
                               "GPU-00000000-0000-0000-0000-000000000001", "30 GiB", "80 GiB", "50 GiB",
                               "42%", "1234", "20 GiB", "5678", "10 GiB"}) {
    EXPECT_NE(table.find(expected), std::string::npos) << expected << " missing from:\n" << table;
  }
  EXPECT_EQ(table.find("does not exist"), std::string::npos);
}

TEST(RenderStatusTableTest, SaysWhenTheSegmentDoesNotExist) {
  StatusReport report = TwoProcessesOnOneDevice();
  report.segment_exists = false;
  report.devices[0].processes.clear();
  report.config_path = "/etc/gpu.json";
  const std::string table = RenderStatusTable(report);
  EXPECT_NE(table.find("does not exist yet"), std::string::npos) << table;
  EXPECT_NE(table.find("config /etc/gpu.json"), std::string::npos) << table;
  EXPECT_NE(table.find("no processes hold memory"), std::string::npos) << table;
}

TEST(StatusJsonTest, HasTheDocumentedShape) {
  const nlohmann::ordered_json json = StatusJson(TwoProcessesOnOneDevice());
  EXPECT_EQ(json["segment"], "/fgpu-sim-test");
  EXPECT_TRUE(json["config"].is_null());
  EXPECT_EQ(json["segment_exists"], true);
  ASSERT_EQ(json["devices"].size(), 1u);
  const nlohmann::ordered_json& device = json["devices"][0];
  EXPECT_EQ(device["index"], 0);
  EXPECT_EQ(device["uuid"], "GPU-00000000-0000-0000-0000-000000000001");
  EXPECT_EQ(device["memory"]["used"], 30ull << 30);
  EXPECT_EQ(device["memory"]["free"], 50ull << 30);
  EXPECT_EQ(device["utilization_gpu"], 42);
  ASSERT_EQ(device["processes"].size(), 2u);
  EXPECT_EQ(device["processes"][1]["pid"], 5678);
  EXPECT_EQ(device["processes"][1]["used"], 10ull << 30);
}

}  // namespace
}  // namespace fgpu::cli
