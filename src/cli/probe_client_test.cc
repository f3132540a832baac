#include "cli/probe_client.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "cli/test_scratch_dir.h"

namespace fgpu::cli {
namespace {

using std::chrono::milliseconds;

// A stand-in for fgpu-probe: a shell script printing what a test wants.
class ProbeClientTest : public ::testing::Test {
 protected:
  ProbeClient FakeProbe(const std::string& script) {
    const std::string path = dir_.Write("fake-probe", "#!/bin/sh\n" + script + "\n");
    chmod(path.c_str(), 0755);
    return ProbeClient(path);
  }
  ScratchDir dir_;
};

TEST_F(ProbeClientTest, RunCollectsEveryEventAndPassesArguments) {
  ProbeClient probe =
      FakeProbe(R"(echo "{\"event\":\"args\",\"argv\":\"$*\"}"; echo '{"event":"done","n":3}')");
  Result<std::vector<nlohmann::json>> events =
      probe.Run({"alloc", "--bytes", "20GiB"}, DeadlineIn(milliseconds(10'000)));
  ASSERT_TRUE(events.ok()) << events.status().message();
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[0]["argv"], "alloc --bytes 20GiB");
  EXPECT_EQ((*events)[1]["n"], 3);
}

TEST_F(ProbeClientTest, WaitForEventSkipsEarlierEventsAndKeepsThem) {
  ProbeClient probe =
      FakeProbe(R"(echo '{"event":"alloc","code":0}'; echo '{"event":"mem_get_info","free":5}'; exec sleep 30)");
  Result<ProbeProcess> process = probe.Start({"alloc"});
  ASSERT_TRUE(process.ok());
  Result<nlohmann::json> held = process->WaitForEvent("mem_get_info", DeadlineIn(milliseconds(10'000)));
  ASSERT_TRUE(held.ok()) << held.status().message();
  EXPECT_EQ((*held)["free"], 5);
  ASSERT_NE(process->LastEvent("alloc"), nullptr);
  EXPECT_EQ(process->LastEvent("nothing"), nullptr);
  EXPECT_EQ(process->description(), "fgpu-probe alloc");
}

TEST_F(ProbeClientTest, ProbeEndingBeforeTheEventReportsItsExitStatus) {
  ProbeClient probe = FakeProbe(R"(echo '{"event":"alloc","result":"CUDA_ERROR_OUT_OF_MEMORY"}'; exit 1)");
  Result<ProbeProcess> process = probe.Start({"alloc"});
  ASSERT_TRUE(process.ok());
  Result<nlohmann::json> held = process->WaitForEvent("mem_get_info", DeadlineIn(milliseconds(10'000)));
  ASSERT_FALSE(held.ok());
  EXPECT_NE(held.status().message().find("exit status 1"), std::string::npos) << held.status().message();
}

TEST_F(ProbeClientTest, NonZeroExitFailsRunQuotingTheLastEvent) {
  ProbeClient probe = FakeProbe(R"(echo '{"event":"fill","stop_error":"CUDA_ERROR_UNKNOWN"}'; exit 1)");
  Result<std::vector<nlohmann::json>> events = probe.Run({"fill"}, DeadlineIn(milliseconds(10'000)));
  ASSERT_FALSE(events.ok());
  EXPECT_NE(events.status().message().find("exit status 1"), std::string::npos);
  EXPECT_NE(events.status().message().find("CUDA_ERROR_UNKNOWN"), std::string::npos);
}

TEST_F(ProbeClientTest, LinesThatAreNotEventsBreakTheContract) {
  for (const char* line : {"hello", "[1,2]", R"({"no_event":1})", R"({"event":5})"}) {
    ProbeClient probe = FakeProbe(std::string("echo '") + line + "'");
    Result<std::vector<nlohmann::json>> events = probe.Run({"info"}, DeadlineIn(milliseconds(10'000)));
    ASSERT_FALSE(events.ok()) << line;
    EXPECT_EQ(events.status().code(), StatusCode::kCorrupt) << line;
  }
}

TEST_F(ProbeClientTest, AHangingProbeTimesOut) {
  ProbeClient probe = FakeProbe("exec sleep 30");
  Result<std::vector<nlohmann::json>> events = probe.Run({"spin"}, DeadlineIn(milliseconds(200)));
  ASSERT_FALSE(events.ok());
  EXPECT_EQ(events.status().code(), StatusCode::kUnavailable);
}

TEST(EventReaderTest, ReadsTypedFieldsByDottedPath) {
  const nlohmann::json event = nlohmann::json::parse(
      R"({"event":"info","name":"H100","total_mem":85520809984,"cc":"9.0",
          "mem_get_info":{"free":100,"total":200},"nvml":{"available":true,"processes":[{"pid":1}]},
          "achieved_duty":49.5})");
  EventReader reader(event);
  EXPECT_EQ(reader.String("name"), "H100");
  EXPECT_EQ(reader.Uint("total_mem"), 85520809984u);
  EXPECT_EQ(reader.Uint("mem_get_info.free"), 100u);
  EXPECT_TRUE(reader.Bool("nvml.available"));
  EXPECT_EQ(reader.Array("nvml.processes").size(), 1u);
  EXPECT_DOUBLE_EQ(reader.Number("achieved_duty"), 49.5);
  EXPECT_DOUBLE_EQ(reader.Number("total_mem"), 85520809984.0);
  EXPECT_TRUE(reader.status().ok());
}

TEST(EventReaderTest, RemembersTheFirstMissingOrMistypedField) {
  const nlohmann::json event = nlohmann::json::parse(R"({"event":"info","cc":"9.0","used":-1,"nvml":{}})");
  EventReader reader(event);
  EXPECT_EQ(reader.Uint("cc"), 0u);
  EXPECT_EQ(reader.Uint("used"), 0u);
  EXPECT_EQ(reader.String("nvml.memory.total"), "");
  EXPECT_TRUE(reader.Array("cc.x").empty());
  ASSERT_FALSE(reader.status().ok());
  EXPECT_EQ(reader.status().code(), StatusCode::kCorrupt);
  EXPECT_NE(reader.status().message().find("'cc'"), std::string::npos) << reader.status().message();
}

}  // namespace
}  // namespace fgpu::cli
