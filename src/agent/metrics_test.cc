// The Prometheus exposition: families, labels, exact byte counts, a slice's usage from its
// ledger.
#include "agent/metrics.h"

#include <gtest/gtest.h>

#include <string>

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
