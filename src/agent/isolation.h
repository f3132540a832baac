// Isolation classes: how each GPU of the machine is used, and what isolation a request needs
// (docs/mig.md "Isolation classes").
//
// - A GPU's class (the agent's configuration, "gpus"): `shared` (fgpu slices share it, as
//   always), `exclusive` (one workload has the whole GPU), `mig` (carved into MIG instances, each
//   a placement target that slices may subdivide).
// - A request's isolation: `trusted` (a slice beside others: on a shared GPU or inside a MIG
//   instance), `hard` (a MIG instance of its own: the hardware separates its memory, cache and
//   SMs from every other tenant's), `exclusive` (a GPU of the exclusive class, alone).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace fgpu::agent {

enum class IsolationClass : uint8_t { kShared, kExclusive, kMig };
enum class Isolation : uint8_t { kTrusted, kHard, kExclusive };

constexpr std::string_view ToString(IsolationClass value) {
  switch (value) {
    case IsolationClass::kExclusive:
      return "exclusive";
    case IsolationClass::kMig:
      return "mig";
    case IsolationClass::kShared:
      break;
  }
  return "shared";
}

constexpr std::string_view ToString(Isolation value) {
  switch (value) {
    case Isolation::kHard:
      return "hard";
    case Isolation::kExclusive:
      return "exclusive";
    case Isolation::kTrusted:
      break;
  }
  return "trusted";
}

constexpr std::optional<IsolationClass> ParseIsolationClass(std::string_view text) {
  if (text == "shared") return IsolationClass::kShared;
  if (text == "exclusive") return IsolationClass::kExclusive;
  if (text == "mig") return IsolationClass::kMig;
  return std::nullopt;
}

constexpr std::optional<Isolation> ParseIsolation(std::string_view text) {
  if (text == "trusted") return Isolation::kTrusted;
  if (text == "hard") return Isolation::kHard;
  if (text == "exclusive") return Isolation::kExclusive;
  return std::nullopt;
}

}  // namespace fgpu::agent
