#include "core/mig_profiles.h"

#include <algorithm>
#include <array>

#include "core/units.h"

namespace fgpu::mig {
namespace {

// The starts per profile shape (nvidia-smi mig -lgipp, identical on A100 and H100):
// 1g {0..6}, 1g with 2 memory slices {0,2,4,6}, 2g {0,2,4}, 3g {0,4}, 4g and 7g {0}.
constexpr uint8_t kStarts1g = 0x7F;
constexpr uint8_t kStarts1g2m = 0x55;
constexpr uint8_t kStarts2g = 0x15;
constexpr uint8_t kStarts3g = 0x11;
constexpr uint8_t kStartsFirst = 0x01;

// One model's seven profiles, in the order of the cuda.md table: 1g, 1g+me, 1g (2 memory
// slices), 2g, 3g, 4g, 7g. `mib` and `sms` per profile in that order.
constexpr std::array<Profile, 7> Table(std::array<std::string_view, 7> names, std::array<uint64_t, 7> mib,
                                       std::array<int, 7> sms) {
  return {{
      {19, 0x0, names[0], 1, 1, 7, sms[0], mib[0] * kMiB, kStarts1g, false, 1},
      {20, 0x7, names[1], 1, 1, 1, sms[1], mib[1] * kMiB, kStarts1g, true, 1},
      {15, 0x9, names[2], 1, 2, 4, sms[2], mib[2] * kMiB, kStarts1g2m, false, 1},
      {14, 0x1, names[3], 2, 2, 3, sms[3], mib[3] * kMiB, kStarts2g, false, 2},
      {9, 0x2, names[4], 3, 4, 2, sms[4], mib[4] * kMiB, kStarts3g, false, 3},
      {5, 0x3, names[5], 4, 4, 1, sms[5], mib[5] * kMiB, kStartsFirst, false, 4},
      {0, 0x4, names[6], 7, 8, 1, sms[6], mib[6] * kMiB, kStartsFirst, false, 8},
  }};
}

constexpr std::array<int, 7> kAmpereSms{14, 14, 14, 28, 42, 56, 98};
constexpr std::array<int, 7> kHopperSms{16, 16, 26, 32, 60, 64, 132};

// NVIDIA's -lgip (A100-40GB, H100-80GB). A100-80GB: the same silicon with twice the memory per
// slice; H200-141GB: H100's SMs and its usable memory scaled by 143771/81559 MiB, rounded down
// to 128 MiB. Both derived (docs/mig.md), to be confirmed by scripts/gpu-check.
constexpr auto kA100_40 = Table({"1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"},
                                {4864, 4864, 9856, 9856, 19968, 19968, 40192}, kAmpereSms);
constexpr auto kA100_80 = Table({"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
                                {9728, 9728, 19712, 19712, 39936, 39936, 80384}, kAmpereSms);
constexpr auto kH100_80 = Table({"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
                                {9984, 9984, 20096, 20096, 40448, 40448, 81152}, kHopperSms);
constexpr auto kH200_141 = Table({"1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"},
                                 {17536, 17536, 35328, 35328, 71296, 71296, 142976}, kHopperSms);

const std::array<ModelInfo, 4> kModels{{
    {Model::kA100_40GB, "A100-40GB", kA100_40, 40960 * kMiB, 108},
    {Model::kA100_80GB, "A100-80GB", kA100_80, 81920 * kMiB, 108},
    {Model::kH100_80GB, "H100-80GB", kH100_80, 81559 * kMiB, 132},
    {Model::kH200_141GB, "H200-141GB", kH200_141, 143771 * kMiB, 132},
}};

bool Contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

}  // namespace

std::span<const ModelInfo> Models() { return kModels; }

const ModelInfo& InfoOf(Model model) { return kModels[static_cast<size_t>(model)]; }

const ModelInfo* ModelOfProduct(std::string_view product, uint64_t memory_bytes) {
  const uint64_t gib = memory_bytes >> 30;
  if (Contains(product, "A100")) return &InfoOf(gib > 60 ? Model::kA100_80GB : Model::kA100_40GB);
  // H100 80GB only: the 94 GB NVL and the 96 GB GH200 have other tables.
  if (Contains(product, "H100") && gib > 60 && gib < 90) return &InfoOf(Model::kH100_80GB);
  if (Contains(product, "H200") && gib > 120) return &InfoOf(Model::kH200_141GB);
  return nullptr;
}

const Profile* FindProfile(const ModelInfo& model, uint32_t id) {
  const auto found = std::find_if(model.profiles.begin(), model.profiles.end(), [&](const Profile& p) { return p.id == id; });
  return found == model.profiles.end() ? nullptr : &*found;
}

const Profile* FindProfileByName(const ModelInfo& model, std::string_view name) {
  const auto found =
      std::find_if(model.profiles.begin(), model.profiles.end(), [&](const Profile& p) { return p.name == name; });
  return found == model.profiles.end() ? nullptr : &*found;
}

const Profile* FindProfileByNvmlIndex(const ModelInfo& model, uint32_t nvml_index) {
  const auto found = std::find_if(model.profiles.begin(), model.profiles.end(),
                                  [&](const Profile& p) { return p.nvml_index == nvml_index; });
  return found == model.profiles.end() ? nullptr : &*found;
}

std::string_view Describe(GeometryError error) {
  switch (error) {
    case GeometryError::kNone: return "valid";
    case GeometryError::kUnknownProfile: return "a profile this GPU does not have";
    case GeometryError::kBadStart: return "a profile at a start slot the hardware does not allow";
    case GeometryError::kOverlap: return "two instances share a memory slice";
    case GeometryError::kTooMany: return "more instances of a profile than the GPU allows";
    case GeometryError::kSecondMedia: return "a second instance with the media engines";
  }
  return "unknown";
}

bool Fits(const Profile& profile, int start, uint8_t occupied, bool media_used, int count) {
  return profile.CanStartAt(start) && (profile.Occupies(start) & occupied) == 0 && !(profile.media && media_used) &&
         count < profile.max_instances;
}

int FreeRuns(uint8_t occupied) {
  int runs = 0;
  bool in_run = false;
  for (int slot = 0; slot < kMemorySlices; ++slot) {
    const bool free = ((occupied >> slot) & 1U) == 0;
    if (free && !in_run) ++runs;
    in_run = free;
  }
  return runs;
}

GeometryError CheckGeometry(const ModelInfo& model, std::span<const Placed> instances) {
  uint8_t occupied = 0;
  bool media = false;
  std::array<int, 8> counts{};
  for (const Placed& placed : instances) {
    const Profile* profile = FindProfile(model, placed.profile_id);
    if (profile == nullptr) return GeometryError::kUnknownProfile;
    if (!profile->CanStartAt(placed.start)) return GeometryError::kBadStart;
    if ((profile->Occupies(placed.start) & occupied) != 0) return GeometryError::kOverlap;
    if (profile->media && media) return GeometryError::kSecondMedia;
    int& count = counts[static_cast<size_t>(profile - model.profiles.data())];
    if (count >= profile->max_instances) return GeometryError::kTooMany;
    ++count;
    occupied |= profile->Occupies(placed.start);
    media = media || profile->media;
  }
  return GeometryError::kNone;
}

}  // namespace fgpu::mig
