// Every valid MIG geometry of a GPU model, enumerated once: the planner's search space.
//
// A geometry is a set of GPU instances (profile at a start slot) that core/mig_profiles.h's rule
// accepts. The catalog holds all of them (the empty one included), each with its profile
// counts and the memory and compute slices it uses, so choosing a GPU's geometry is a scan
// over a few thousand small records, no search.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/mig_profiles.h"

namespace fgpu::sched::mig {

using fgpu::mig::ModelInfo;
using fgpu::mig::Placed;
using fgpu::mig::Profile;

inline constexpr int kProfilesPerModel = 7;

struct Geometry {
  std::vector<Placed> instances;                 // by start slot
  std::array<uint8_t, kProfilesPerModel> count{};  // per profile, in the model's profile order
  int memory_slices = 0;
  int compute_slices = 0;
  uint8_t occupied = 0;  // memory slice mask
};

class Catalog {
 public:
  // The catalog of `model` (built on first use, then shared; not thread-safe to build concurrently
  // with another first use of the same model from another thread — sched is single-threaded).
  static const Catalog& Of(const ModelInfo& model);

  const ModelInfo& model() const { return *model_; }
  const std::vector<Geometry>& geometries() const { return geometries_; }
  // The index in the model's profile order of a profile id (-1 when the model has none).
  int IndexOf(uint32_t profile_id) const;

 private:
  explicit Catalog(const ModelInfo& model);
  const ModelInfo* model_;
  std::vector<Geometry> geometries_;
};

}  // namespace fgpu::sched::mig
