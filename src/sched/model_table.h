// GPU models by name. A cluster interns each model name once; a request names the models it
// accepts as a bitmask over those ids, so the model filter is one AND.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace fgpu::sched {

inline constexpr int kNoModel = -1;  // the model of a node without GPUs
inline constexpr int kMaxModels = 64;

// The models a request accepts: bit i is model id i. kAnyModel accepts every model; an empty
// set accepts none (a request that names only models the cluster does not have).
using ModelSet = uint64_t;
inline constexpr ModelSet kAnyModel = ~ModelSet{0};

inline constexpr bool Accepts(ModelSet set, int model) { return model >= 0 && ((set >> model) & 1U) != 0; }

class ModelTable {
 public:
  // The id of `name`, added if new. InvalidArgument for an empty name or a 65th model.
  Result<int> Intern(std::string_view name);
  std::optional<int> Find(std::string_view name) const;
  const std::string& Name(int model) const { return names_[static_cast<size_t>(model)]; }
  int size() const { return static_cast<int>(names_.size()); }

  struct ParsedSet {
    ModelSet set = kAnyModel;
    std::vector<std::string> unknown;  // names in the list that no node has
  };
  // Parses an accepted-model list "A|B|C" (empty: any model). Unknown names are left out of
  // the set and reported, so a request naming only unknown models accepts none.
  ParsedSet ParseSet(std::string_view list) const;

 private:
  std::vector<std::string> names_;
};

}  // namespace fgpu::sched
