#include "sched/mig/catalog.h"

#include <algorithm>
#include <memory>

namespace fgpu::sched::mig {
namespace {

struct Candidate {
  int profile;  // index in the model's profile order
  int start;
};

}  // namespace

Catalog::Catalog(const ModelInfo& model) : model_(&model) {
  std::vector<Candidate> candidates;
  for (size_t p = 0; p < model.profiles.size(); ++p) {
    for (int slot = 0; slot < fgpu::mig::kMemorySlices; ++slot) {
      if (model.profiles[p].CanStartAt(slot)) candidates.push_back({static_cast<int>(p), slot});
    }
  }
  // Depth first, each candidate after the previous one, so every set is reached once.
  Geometry current;
  bool media = false;
  const auto extend = [&](const auto& self, size_t from) -> void {
    geometries_.push_back(current);
    for (size_t i = from; i < candidates.size(); ++i) {
      const Profile& profile = model.profiles[static_cast<size_t>(candidates[i].profile)];
      const auto p = static_cast<size_t>(candidates[i].profile);
      if (!fgpu::mig::Fits(profile, candidates[i].start, current.occupied, media, current.count[p])) continue;
      const Geometry saved = current;
      const bool saved_media = media;
      current.instances.push_back({profile.id, candidates[i].start});
      ++current.count[p];
      current.memory_slices += profile.memory_slices;
      current.compute_slices += profile.compute_slices;
      current.occupied |= profile.Occupies(candidates[i].start);
      media = media || profile.media;
      self(self, i + 1);
      current = saved;
      media = saved_media;
    }
  };
  extend(extend, 0);
  for (Geometry& geometry : geometries_) {
    std::sort(geometry.instances.begin(), geometry.instances.end(),
              [](const Placed& a, const Placed& b) { return a.start < b.start; });
  }
}

const Catalog& Catalog::Of(const ModelInfo& model) {
  static std::array<std::unique_ptr<Catalog>, 8> built;
  auto& slot = built[static_cast<size_t>(model.model)];
  if (!slot) slot.reset(new Catalog(model));
  return *slot;
}

int Catalog::IndexOf(uint32_t profile_id) const {
  for (size_t p = 0; p < model_->profiles.size(); ++p) {
    if (model_->profiles[p].id == profile_id) return static_cast<int>(p);
  }
  return -1;
}

}  // namespace fgpu::sched::mig
