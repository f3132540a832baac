// The agent's placement through src/sched: the policy's choice among this machine's GPUs.
#include "agent/sched_placer.h"

#include <gtest/gtest.h>

namespace fgpu::agent {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

GpuRoom Room(int index, uint64_t reserved_memory, uint32_t reserved_compute, bool exclusive = false) {
  GpuRoom room;
  room.gpu = {index, "GPU-" + std::to_string(index), "H100", 80 * kGiB, 0, 0};
  room.memory_reserved = reserved_memory;
  room.compute_reserved = reserved_compute;
  room.exclusive = exclusive;
  return room;
}

SliceRecord Held(int gpu, uint64_t memory, uint32_t share) {
  SliceRecord slice;
  slice.gpu_uuid = "GPU-" + std::to_string(gpu);
  slice.memory_bytes = memory;
  slice.compute_share = share;
  return slice;
}

TEST(SchedPlacerTest, BestFitTakesTheTighterGpuThatFits) {
  Result<SchedPlacer> placer = SchedPlacer::Create("bestfit");
  ASSERT_TRUE(placer.ok());
  EXPECT_EQ(placer->policy(), "BestFit");
  const std::vector<GpuRoom> rooms = {Room(0, 0, 0), Room(1, 40 * kGiB, 60)};
  const std::vector<SliceRecord> slices = {Held(1, 40 * kGiB, 60)};
  EXPECT_EQ(*placer->Choose(rooms, slices, 10 * kGiB, 30), 1u);
  EXPECT_EQ(*placer->Choose(rooms, slices, 10 * kGiB, 50), 0u) << "50 % does not fit beside 60 %";
}

TEST(SchedPlacerTest, EveryPolicyKeepsOffExclusiveAndFullGpus) {
  for (const char* name : {"Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD", "FGD+"}) {
    Result<SchedPlacer> placer = SchedPlacer::Create(name);
    ASSERT_TRUE(placer.ok()) << name;
    const std::vector<GpuRoom> rooms = {Room(0, 0, 0, /*exclusive=*/true), Room(1, 80 * kGiB, 100), Room(2, 0, 0)};
    const std::vector<SliceRecord> slices = {Held(1, 80 * kGiB, 100)};
    Result<std::size_t> chosen = placer->Choose(rooms, slices, kGiB, 10);
    ASSERT_TRUE(chosen.ok()) << name << ": " << chosen.status().message();
    EXPECT_EQ(*chosen, 2u) << name;
    EXPECT_EQ(placer->Choose({Room(0, 0, 0, true)}, {}, kGiB, 10).status().code(), StatusCode::kResourceExhausted);
  }
}

TEST(SchedPlacerTest, AnUnknownPolicyIsNamed) {
  Result<SchedPlacer> placer = SchedPlacer::Create("fastest");
  ASSERT_FALSE(placer.ok());
  EXPECT_NE(placer.status().message().find("FGD"), std::string::npos) << placer.status().message();
}

}  // namespace
}  // namespace fgpu::agent
