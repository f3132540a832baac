// The Prometheus exposition: families, labels, exact byte counts, a slice's usage from its
// ledger.
#include "agent/metrics.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>

#include "slice/layout.h"
#include "slice/slice.h"

namespace fgpu::agent {
namespace {

MetricsSnapshot Sample() {
  MetricsSnapshot snapshot;
  GpuState gpu{0, "GPU-aaaa", "NVIDIA H100 80GB HBM3", 85520809984, 1024, 37};
  snapshot.gpus = {gpu};
  snapshot.rooms = {GpuRoom{gpu, false, 10737418240, 30, 1}};
  SliceRecord slice;
  slice.id = "s1";
  slice.gpu_uuid = "GPU-aaaa";
  slice.memory_bytes = 10737418240;
  slice.compute_share = 30;
  slice.tenant = "team \"a\"";
  snapshot.slices = {slice};
  SliceUsage usage;
  usage.memory_used = 123456789;
  usage.busy_ns = 2'500'000'000;
  usage.ledger_readable = true;
  usage.processes = 2;
  snapshot.usage = {usage};
  snapshot.queued = 3;
  return snapshot;
}

TEST(MetricsTest, RendersEveryFamilyWithExactValues) {
  const std::string text = RenderMetrics(Sample());
  EXPECT_NE(text.find("# TYPE fgpu_gpu_memory_total_bytes gauge\n"), std::string::npos);
  EXPECT_NE(text.find("fgpu_gpu_memory_total_bytes{gpu=\"0\",uuid=\"GPU-aaaa\",name=\"NVIDIA H100 80GB HBM3\"} "
                      "85520809984\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("fgpu_gpu_utilization_ratio{gpu=\"0\",uuid=\"GPU-aaaa\",name=\"NVIDIA H100 80GB HBM3\"} 0.37"),
            std::string::npos);
  const std::string labels = "{slice=\"s1\",gpu=\"GPU-aaaa\",tenant=\"team \\\"a\\\"\",tier=\"standard\"}";
  EXPECT_NE(text.find("fgpu_slice_memory_cap_bytes" + labels + " 10737418240\n"), std::string::npos) << text;
  EXPECT_NE(text.find("fgpu_slice_memory_used_bytes" + labels + " 123456789\n"), std::string::npos);
  EXPECT_NE(text.find("fgpu_slice_compute_share_ratio" + labels + " 0.29999999999999999\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE fgpu_slice_compute_busy_seconds_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("fgpu_slice_compute_busy_seconds_total" + labels + " 2.5\n"), std::string::npos);
  EXPECT_NE(text.find("fgpu_slice_processes" + labels + " 2\n"), std::string::npos);
  EXPECT_NE(text.find("fgpu_queue_length 3\n"), std::string::npos);
}

// A MIG instance is a target of its own: its class, GPU, profile and memory are series, so a
// slice inside it (labelled with the instance's UUID) can be grouped by instance or by GPU.
TEST(MetricsTest, MigInstancesAndClassesAreSeries) {
  MetricsSnapshot snapshot = Sample();
  GpuState parent{1, "GPU-bbbb", "NVIDIA H100 80GB HBM3", 85520809984, 0, 0};
  parent.isolation = IsolationClass::kMig;
  parent.mig_note = "the configured geometry (7g.80gb) is not applied";
  GpuState instance{1, "MIG-cccc", "NVIDIA H100 80GB HBM3 MIG 3g.40gb", 42412802048, 0, 0};
  instance.isolation = IsolationClass::kMig;
  instance.parent_uuid = "GPU-bbbb";
  instance.mig_profile = "3g.40gb";
  instance.mig_start = 4;
  snapshot.rooms.push_back(GpuRoom{parent, false, 0, 0, 0});
  snapshot.rooms.push_back(GpuRoom{instance, false, 10737418240, 25, 1});
  const std::string text = RenderMetrics(snapshot);
  EXPECT_NE(text.find("fgpu_gpu_class_info{gpu=\"0\",uuid=\"GPU-aaaa\",name=\"NVIDIA H100 80GB HBM3\",class=\"shared\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("fgpu_gpu_class_info{gpu=\"1\",uuid=\"MIG-cccc\",name=\"NVIDIA H100 80GB HBM3 MIG 3g.40gb\","
                      "class=\"mig\",parent_uuid=\"GPU-bbbb\",profile=\"3g.40gb\",start=\"4\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("fgpu_mig_instance_memory_total_bytes{gpu=\"1\",uuid=\"MIG-cccc\",name=\"NVIDIA H100 80GB HBM3 "
                      "MIG 3g.40gb\"} 42412802048\n"),
            std::string::npos);
  EXPECT_NE(text.find("fgpu_gpu_mig_geometry_pending{gpu=\"1\",uuid=\"GPU-bbbb\",name=\"NVIDIA H100 80GB HBM3\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("fgpu_gpu_memory_reserved_bytes{gpu=\"1\",uuid=\"MIG-cccc\""), std::string::npos);
}

// A Kubernetes slice's series also carry its namespace, pod and claim; a slice without them
// keeps exactly its series (no empty labels).
TEST(MetricsTest, KubernetesLabelsAreOnEverySeriesOfTheirSliceOnly) {
  MetricsSnapshot snapshot = Sample();
  SliceRecord pod = snapshot.slices[0];
  pod.id = "s2";
  pod.tenant = "t";
  pod.kube = {"ml-team", "trainer-0", "gpu.claim-1"};
  snapshot.slices.push_back(pod);
  snapshot.usage.push_back(snapshot.usage[0]);
  const std::string text = RenderMetrics(snapshot);
  const std::string plain = "{slice=\"s1\",gpu=\"GPU-aaaa\",tenant=\"team \\\"a\\\"\",tier=\"standard\"}";
  EXPECT_NE(text.find("fgpu_slice_memory_cap_bytes" + plain + " 10737418240\n"), std::string::npos) << text;
  const std::string labelled =
      "{slice=\"s2\",gpu=\"GPU-aaaa\",tenant=\"t\",tier=\"standard\",namespace=\"ml-team\",pod=\"trainer-0\","
      "claim=\"gpu.claim-1\"}";
  for (const char* family : {"fgpu_slice_memory_cap_bytes", "fgpu_slice_memory_used_bytes", "fgpu_slice_processes",
                             "fgpu_slice_compute_busy_seconds_total"}) {
    EXPECT_NE(text.find(family + labelled + " "), std::string::npos) << family << "\n" << text;
  }
  EXPECT_EQ(text.find("namespace=\"\""), std::string::npos) << "no empty Kubernetes labels";
}

TEST(MetricsTest, InterposerCountersPerSliceAndNoneForAnUnreadableLedger) {
  MetricsSnapshot snapshot = Sample();
  snapshot.usage[0].counters = slice::LedgerCounters{7, 3, 1, 2, 4};
  SliceRecord unreadable = snapshot.slices[0];
  unreadable.id = "s2";
  snapshot.slices.push_back(unreadable);
  snapshot.usage.push_back(SliceUsage{});  // ledger_readable false
  const std::string text = RenderMetrics(snapshot);
  EXPECT_NE(text.find("# TYPE fgpu_slice_oom_refusals_total counter\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE fgpu_slice_interposer_degraded_total counter\n"), std::string::npos);
  const std::string labels = "slice=\"s1\",gpu=\"GPU-aaaa\",tenant=\"team \\\"a\\\"\",tier=\"standard\"";
  EXPECT_NE(text.find("fgpu_slice_oom_refusals_total{" + labels + "} 7\n"), std::string::npos) << text;
  for (const auto& [mode, value] : {std::pair{"fail_closed", 3}, std::pair{"compute_unenforced", 1},
                                    std::pair{"no_free_slot", 2}, std::pair{"pass_through", 4}}) {
    EXPECT_NE(text.find("fgpu_slice_interposer_degraded_total{" + labels + ",mode=\"" + mode + "\"} " +
                        std::to_string(value) + "\n"),
              std::string::npos)
        << mode << "\n" << text;
  }
  // The unreadable slice: its ledger_readable 0, and no counter sample that would claim "none".
  EXPECT_NE(text.find("fgpu_slice_ledger_readable{slice=\"s2\""), std::string::npos);
  EXPECT_EQ(text.find("fgpu_slice_oom_refusals_total{slice=\"s2\""), std::string::npos) << text;
  EXPECT_EQ(text.find("fgpu_slice_interposer_degraded_total{slice=\"s2\""), std::string::npos) << text;
}

// The reader maps the real ledger: what the slice's processes counted is what /metrics shows.
TEST(MetricsTest, TheUsageReaderReadsTheCountersFromTheLedger) {
  std::string scratch = (std::filesystem::temp_directory_path() / "fgpu-metrics-test-XXXXXX").string();
  ASSERT_NE(mkdtemp(scratch.data()), nullptr);
  SliceRecord record;
  record.id = "s1";
  record.gpu_uuid = "GPU-aaaa";
  record.dir = scratch + "/s1";
  slice::SliceSpec spec;
  spec.id = record.id;
  spec.devices.push_back({record.gpu_uuid, uint64_t{1} << 30, 100});
  ASSERT_TRUE(slice::SliceAdmin::Create(record.dir, spec).ok());
  UsageReader reader(scratch + "/boards");
  EXPECT_EQ(reader.Read({record}).at(0).counters, slice::LedgerCounters{});

  // Written as the workload's processes would (not attached here: a Ledger stays mapped for the
  // life of the process, and this test truncates the file below).
  {
    std::fstream ledger(record.dir + "/ledger", std::ios::in | std::ios::out | std::ios::binary);
    const uint64_t oom_refusals = 1;
    const uint32_t fail_closed = 1;
    ledger.seekp(offsetof(slice::layout::LedgerHeader, oom_refusals));
    ledger.write(reinterpret_cast<const char*>(&oom_refusals), sizeof(oom_refusals));
    ledger.seekp(offsetof(slice::layout::LedgerHeader, fail_closed_refusals));
    ledger.write(reinterpret_cast<const char*>(&fail_closed), sizeof(fail_closed));
  }
  ASSERT_TRUE(slice::Ledger::CountPassThrough(record.dir.c_str()));
  const SliceUsage usage = reader.Read({record}).at(0);  // the ledger kept mapped since the first read
  EXPECT_TRUE(usage.ledger_readable);
  EXPECT_EQ(usage.counters, (slice::LedgerCounters{1, 1, 0, 0, 1}));

  // Truncated under the reader (a hostile workload): unreadable, not a crash, no counters.
  std::filesystem::resize_file(record.dir + "/ledger", 64);
  EXPECT_FALSE(reader.Read({record}).at(0).ledger_readable);
  std::filesystem::remove_all(scratch);
}

TEST(MetricsTest, EveryFamilyHasHelpAndTypeOnce) {
  const std::string text = RenderMetrics(Sample());
  std::size_t helps = 0, types = 0;
  for (std::size_t at = text.find("# HELP"); at != std::string::npos; at = text.find("# HELP", at + 1)) ++helps;
  for (std::size_t at = text.find("# TYPE"); at != std::string::npos; at = text.find("# TYPE", at + 1)) ++types;
  EXPECT_EQ(helps, types);
  EXPECT_GE(types, 15u);
}

}  // namespace
}  // namespace fgpu::agent
