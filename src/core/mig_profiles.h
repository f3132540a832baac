// MIG's hardware facts per GPU model: the GPU-instance profiles, their sizes and the memory
// slots each may start at. One table for the simulated driver (what NVML answers) and the
// planner (what it may emit), so the two cannot disagree.
//
// Contract
// - A GPU in MIG mode has 8 memory slices and 7 compute slices. A GPU instance of a profile
//   occupies `memory_slices` consecutive memory slices from its start; it may start only where
//   the profile's `starts` mask says. A geometry (a set of instances) is valid iff every
//   instance is at an allowed start, no two overlap, no profile has more than its
//   `max_instances`, and at most one instance has the media extensions (`+me`).
// - The placements and the A100-40GB and H100-80GB sizes are NVIDIA's (`nvidia-smi mig -lgip`,
//   `-lgipp`); the A100-80GB and H200-141GB usable memory and the H200's SM counts are derived
//   (docs/mig.md says how) and checked on hardware by scripts/gpu-check.
// - Pure data and pure functions: thread-safe, no allocation.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace fgpu::mig {

inline constexpr int kMemorySlices = 8;
inline constexpr int kComputeSlices = 7;

enum class Model : uint8_t { kA100_40GB, kA100_80GB, kH100_80GB, kH200_141GB };

struct Profile {
  uint32_t id = 0;          // nvidia-smi's profile id (nvmlGpuInstanceProfileInfo_t.id)
  uint32_t nvml_index = 0;  // NVML_GPU_INSTANCE_PROFILE_* (what nvmlDeviceGetGpuInstanceProfileInfo takes)
  std::string_view name;    // "3g.40gb", "1g.10gb+me"
  int compute_slices = 0;
  int memory_slices = 0;
  int max_instances = 0;
  int sms = 0;
  uint64_t memory_bytes = 0;  // usable, as nvidia-smi mig -lgip says
  uint8_t starts = 0;         // bit s set: may start at memory slice s
  bool media = false;         // +me: the GPU's media engines; one such instance per GPU
  int copy_engines = 0;

  bool CanStartAt(int slot) const { return slot >= 0 && slot < kMemorySlices && ((starts >> slot) & 1U) != 0; }
  // The memory slices an instance started at `start` occupies, as a bit mask.
  uint8_t Occupies(int start) const {
    return static_cast<uint8_t>(((1U << memory_slices) - 1U) << start);
  }
};

struct ModelInfo {
  Model model = Model::kH100_80GB;
  std::string_view name;  // "H100-80GB"
  std::span<const Profile> profiles;
  uint64_t memory_bytes = 0;  // the whole GPU, outside MIG mode
  int sms = 0;                // the whole GPU, outside MIG mode
};

// An instance of a geometry: a profile (by id) at a start slot.
struct Placed {
  uint32_t profile_id = 0;
  int start = 0;
  bool operator==(const Placed&) const = default;
};

std::span<const ModelInfo> Models();
const ModelInfo& InfoOf(Model model);
// The MIG model of a GPU from NVML's product name ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB")
// and its memory; nullptr for a GPU without MIG.
const ModelInfo* ModelOfProduct(std::string_view product, uint64_t memory_bytes);
const Profile* FindProfile(const ModelInfo& model, uint32_t id);
const Profile* FindProfileByName(const ModelInfo& model, std::string_view name);
const Profile* FindProfileByNvmlIndex(const ModelInfo& model, uint32_t nvml_index);

enum class GeometryError : uint8_t { kNone, kUnknownProfile, kBadStart, kOverlap, kTooMany, kSecondMedia };
std::string_view Describe(GeometryError error);
// Whether `instances` form a valid geometry on `model` (the contract's rule); the first fault.
GeometryError CheckGeometry(const ModelInfo& model, std::span<const Placed> instances);
// Whether `profile` can be added at `start` beside the instances occupying `occupied` (a memory
// slice mask), `media_used` saying whether a +me instance exists and `count` how many of this
// profile exist.
bool Fits(const Profile& profile, int start, uint8_t occupied, bool media_used, int count);
// Separate runs of free memory slices in `occupied`: fewer keeps the room usable by larger
// profiles (1 for an empty GPU, 0 for a full one).
int FreeRuns(uint8_t occupied);

}  // namespace fgpu::mig
