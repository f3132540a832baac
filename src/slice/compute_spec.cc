#include "slice/compute_spec.h"

#include <string>

namespace fgpu::slice {
namespace {

bool EqualsIgnoreCase(std::string_view text, std::string_view name) {
  if (text.size() != name.size()) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != name[i]) return false;
  }
  return true;
}

}  // namespace

Result<ComputeMode> ParseComputeMode(std::string_view text) {
  for (ComputeMode mode : {ComputeMode::kCap, ComputeMode::kShare}) {
    if (EqualsIgnoreCase(text, ToString(mode))) return mode;
  }
  return Status::InvalidArgument("compute mode must be cap or share, got '" + std::string(text) + "'");
}

Result<Tier> ParseTier(std::string_view text) {
  for (Tier tier : {Tier::kBatch, Tier::kStandard, Tier::kLatency}) {
    if (EqualsIgnoreCase(text, ToString(tier))) return tier;
  }
  return Status::InvalidArgument("tier must be batch, standard or latency, got '" + std::string(text) + "'");
}

const char* ToString(ComputeMode mode) {
  switch (mode) {
    case ComputeMode::kCap:
      return "cap";
    case ComputeMode::kShare:
      return "share";
  }
  return "unknown";
}

const char* ToString(Tier tier) {
  switch (tier) {
    case Tier::kBatch:
      return "batch";
    case Tier::kStandard:
      return "standard";
    case Tier::kLatency:
      return "latency";
  }
  return "unknown";
}

}  // namespace fgpu::slice
