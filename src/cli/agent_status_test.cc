// fgpu status's tables, from the agent's typed replies (api/types.h).
#include "cli/agent_status.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "api/codec.h"
#include "core/units.h"

namespace fgpu::cli {
namespace {

api::Gpu AGpu(int index, const std::string& uuid, uint64_t total, uint64_t reserved = 0, uint32_t compute = 0) {
  api::Gpu gpu;
  gpu.index = index;
  gpu.uuid = uuid;
  gpu.memory_total = total;
  gpu.memory_reserved = reserved;
  gpu.compute_reserved = compute;
  return gpu;
}

// A slice as the agent answers GET /v1/slices (public fields; no usage unless given).
api::Slice ASlice(const std::string& id, const std::string& tenant, uint32_t compute) {
  api::Slice slice;
  slice.id = id;
  slice.gpu = "GPU-a";
  slice.tenant = tenant;
  slice.tier = "standard";
  slice.memory_bytes = kGiB;
  slice.compute = compute;
  slice.compute_mode = "share";
  slice.compute_throttled_seconds = 0.0;
  return slice;
}

TEST(AgentStatusTest, ShowsGpusAndSlicesWithUsage) {
  api::Gpu gpu = AGpu(0, "GPU-1234567890ab", 80 * kGiB, 10 * kGiB, 30);
  gpu.name = "H100";
  gpu.slices = 1;
  api::Slice slice = ASlice("s1", "team-a", 30);
  slice.gpu = "GPU-1234567890ab";
  slice.tier = "latency";
  slice.memory_bytes = 10 * kGiB;
  slice.compute_mode = "cap";
  slice.usage = api::SliceUsage{kGiB, 2, 0.0, true, ""};
  const std::string text = RenderAgentStatus({gpu}, {slice});
  EXPECT_EQ(text,
            "GPU  NAME  UUID             MEMORY  RESERVED  COMPUTE       SLICES\n"
            "0    H100  GPU-12345678...  80 GiB  10 GiB    30% reserved  1\n"
            "\n"
            "SLICE  GPU              TENANT  TIER     MEMORY USED / CAP  COMPUTE  PROCS  THROTTLED\n"
            "s1     GPU-12345678...  team-a  latency  1 GiB / 10 GiB     30% cap  2      0.0s\n");
  const std::map<std::string, double> achieved = {{"s1", 29.6}};
  const std::string top = RenderAgentStatus({gpu}, {slice}, &achieved);
  EXPECT_NE(top.find("ACHIEVED"), std::string::npos);
  EXPECT_NE(top.find("30%"), std::string::npos);
}

TEST(AgentStatusTest, WithoutUsageMemoryUsedAndProcessesAreUnknown) {
  const std::string table = RenderSliceTable({ASlice("s1", "a", 10)});
  EXPECT_NE(table.find("- / 1 GiB"), std::string::npos) << table;
  EXPECT_NE(table.find("10% share  -"), std::string::npos) << table;
}

TEST(AgentStatusTest, StarvedAndThrottledSlicesAreMarked) {
  api::Slice starved = ASlice("s1", "a", 30);
  starved.compute_throttled_seconds = 12.34;
  starved.starved = true;
  const std::string text = RenderAgentStatus({}, {starved, ASlice("s2", "b", 20)});
  EXPECT_NE(text.find("THROTTLED"), std::string::npos) << text;
  EXPECT_NE(text.find("12.3s"), std::string::npos) << text;
  EXPECT_NE(text.find("STARVED"), std::string::npos) << text;
  EXPECT_NE(text.find("STARVED: s1 waited in the compute gate"), std::string::npos) << text;
  EXPECT_EQ(text.find("s2 waited"), std::string::npos) << text;
}

TEST(AgentStatusTest, AnOlderAgentWithoutTheFieldsGetsNeitherColumn) {
  // As the codec reads an agent from before throttled time and starvation: both absent.
  Result<std::vector<api::Slice>> slices = api::Parse<std::vector<api::Slice>>(
      nlohmann::json::parse(R"([{"id":"s1","tenant":"a","memory_bytes":1073741824,"compute":30}])"));
  ASSERT_TRUE(slices.ok()) << slices.status().message();
  const std::string text = RenderAgentStatus({}, *slices);
  EXPECT_EQ(text.find("THROTTLED"), std::string::npos) << text;
  EXPECT_EQ(text.find("STARVED"), std::string::npos) << text;
  EXPECT_EQ(text.find("NOTE"), std::string::npos) << text;
  EXPECT_NE(text.find("s1"), std::string::npos) << text;
}

TEST(AgentStatusTest, AKubernetesSliceShowsItsPodAndClaim) {
  api::Slice pod = ASlice("s1", "t", 10);
  pod.labels.kube_namespace = "ml";
  pod.labels.pod = "trainer-0";
  pod.labels.claim = "gpu";
  api::Slice other = ASlice("s2", "t", 10);
  other.tier = "batch";
  const std::string table = RenderSliceTable({pod, other});
  EXPECT_NE(table.find("POD"), std::string::npos) << table;
  EXPECT_NE(table.find("ml/trainer-0 (gpu)"), std::string::npos) << table;
  EXPECT_EQ(RenderSliceTable({other}).find("POD"), std::string::npos) << "no pod, no column";
}

TEST(AgentStatusTest, AnUnreadableLedgerIsNoted) {
  api::Slice slice = ASlice("s1", "a", 10);
  slice.usage = api::SliceUsage{0, 0, 0.0, false, ""};
  EXPECT_NE(RenderSliceTable({slice}).find("ledger unreadable"), std::string::npos);
}

TEST(AgentStatusTest, TopIsTimestamped) {
  const std::string heading = TopHeading(1764000000, 0.5);
  EXPECT_EQ(heading.rfind("fgpu top  20", 0), 0u) << heading;
  EXPECT_NE(heading.find("(every 0.5 s"), std::string::npos) << heading;
}

TEST(AgentStatusTest, SliceDetailsOneFieldALine) {
  api::Slice slice = ASlice("s3", "a", 10);
  slice.tier = "batch";
  slice.details = api::SliceDetails{1000, 42, true, "/var/lib/fgpu/slices/s3",
                                    {{"FGPU_SLICE", "/var/lib/fgpu/slices/s3"}, {"CUDA_VISIBLE_DEVICES", "GPU-a"}},
                                    ""};
  slice.usage = api::SliceUsage{512ull << 20, 1, 0.5, true, ""};
  const std::string text = RenderSliceDetails(slice);
  EXPECT_NE(text.find("id: s3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("tier: batch\n"), std::string::npos) << text;
  EXPECT_NE(text.find("memory_bytes: 1 GiB (1073741824)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("memory_used_bytes: 512 MiB (536870912)\n"), std::string::npos) << text;
  EXPECT_NE(text.find("owner_uid: 1000\n"), std::string::npos) << text;
  EXPECT_NE(text.find("release_on_exit: true\n"), std::string::npos) << text;
  EXPECT_NE(text.find("env.FGPU_SLICE: /var/lib/fgpu/slices/s3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("env.CUDA_VISIBLE_DEVICES: GPU-a\n"), std::string::npos) << text;
  // One line per field the agent writes, in its order, and nothing else.
  const nlohmann::json written = api::ToJson(slice);
  std::size_t lines = 0;
  for (auto field = written.begin(); field != written.end(); ++field) {
    lines += field->is_object() ? field->size() : 1;
  }
  EXPECT_EQ(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')), lines) << text;
  EXPECT_EQ(text.rfind("account: \n", 0), 0u) << "sorted as the agent's JSON is: " << text;
}

TEST(AgentStatusTest, MigInstancesAndClassesGetAColumnAndNotesAreShown) {
  api::Gpu shared = AGpu(0, "GPU-a", 80 * kGiB);
  api::Gpu mig = AGpu(1, "GPU-b", 80 * kGiB);
  mig.isolation = "mig";
  mig.mig_note = "the configured geometry (7g.80gb) is not applied: the 3g.40gb instance at memory slice 0 holds slice s1";
  api::Gpu instance = AGpu(1, "MIG-c", 40 * kGiB, 10 * kGiB, 25);
  instance.isolation = "mig";
  instance.parent_uuid = "GPU-b";
  instance.mig_profile = "3g.40gb";
  instance.mig_start = 0;
  instance.slices = 1;
  const std::string text = RenderAgentStatus({shared, mig, instance}, {});
  EXPECT_NE(text.find("GPU  CLASS"), std::string::npos) << text;
  EXPECT_NE(text.find("shared"), std::string::npos) << text;
  EXPECT_NE(text.find("mig 3g.40gb@0"), std::string::npos) << text;
  EXPECT_NE(text.find("in its instances"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU 1: the configured geometry (7g.80gb) is not applied"), std::string::npos) << text;
  EXPECT_EQ(DescribeFreeRoom({mig, instance}), "GPU 1: in MIG mode (see its instances); GPU 1 3g.40gb: 30 GiB and 75 % compute free");
  // A plain node's table has no class column.
  EXPECT_EQ(RenderAgentStatus({shared}, {}).find("CLASS"), std::string::npos);
}

TEST(AgentStatusTest, NoSlices) { EXPECT_NE(RenderAgentStatus({}, {}).find("no slices"), std::string::npos); }

TEST(AgentStatusTest, FreeRoomPerGpuForARefusal) {
  api::Gpu exclusive = AGpu(1, "GPU-b", 4 * kGiB);
  exclusive.exclusive = true;
  api::Gpu fenced = AGpu(2, "GPU-c", 4 * kGiB);
  fenced.fenced = "min_free";
  EXPECT_EQ(DescribeFreeRoom({AGpu(0, "GPU-a", 4 * kGiB, 3 * kGiB, 70), exclusive, fenced}),
            "GPU 0: 1 GiB and 30 % compute free; GPU 1: exclusive; GPU 2: takes no new slices for now (min_free)");
  EXPECT_EQ(DescribeFreeRoom({}), "no GPU");
}

TEST(AgentStatusTest, LargerThanEveryGpuEvenEmpty) {
  const std::vector<api::Gpu> gpus = {AGpu(0, "GPU-a", 4 * kGiB), AGpu(1, "GPU-b", 8 * kGiB)};
  EXPECT_FALSE(LargerThanEveryGpu(gpus, 6 * kGiB, ""));
  EXPECT_TRUE(LargerThanEveryGpu(gpus, 9 * kGiB, ""));
  EXPECT_TRUE(LargerThanEveryGpu(gpus, 6 * kGiB, "0"));
  EXPECT_TRUE(LargerThanEveryGpu(gpus, 6 * kGiB, "GPU-a"));
  EXPECT_FALSE(LargerThanEveryGpu(gpus, 6 * kGiB, "GPU-b"));
}

}  // namespace
}  // namespace fgpu::cli

namespace fgpu::cli {
namespace {

TEST(AgentStatusTest, TheQueueAndTheQuotasAreShownWhenThereAreAny) {
  EXPECT_EQ(RenderQueueAndQuotas({}, {}), "");
  const std::string out = RenderQueueAndQuotas(
      {{1, "q1234567", 1000, 8ULL << 30, 25, "latency", "team-a", 61'000, "waiting for the workloads preempted for it to end"}},
      {{"team-a", "", 8ULL << 30, 80ULL << 30, uint64_t{1} << 62, 25, 100, 4'000'000'000U}});
  for (const char* word : {"QUEUE", "TICKET", "q1234567", "8 GiB", "latency", "team-a", "61 s",
                           "preempted for it", "QUOTAS", "80 GiB", "100%"}) {
    EXPECT_NE(out.find(word), std::string::npos) << word << "\n" << out;
  }
}

}  // namespace
}  // namespace fgpu::cli
