#include "sched/policies/registry.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include "sched/policies/best_fit/best_fit.h"
#include "sched/policies/dot_product/dot_product.h"
#include "sched/policies/fgd/fgd.h"
#include "sched/policies/fgd_plus/fgd_plus.h"
#include "sched/policies/gpu_clustering/gpu_clustering.h"
#include "sched/policies/gpu_packing/gpu_packing.h"
#include "sched/policies/random/random.h"

namespace fgpu::sched {

namespace {

constexpr std::array kPolicies = {
    PolicyInfo{"Random", "any node that fits, at random (FGD paper baseline)"},
    PolicyInfo{"DotProd", "tightest fit by CPU/GPU dot product (Tetris; FGD paper baseline)"},
    PolicyInfo{"GpuClustering", "keep requests of one GPU class together (FGD paper baseline)"},
    PolicyInfo{"GpuPacking", "shared GPUs first, then used nodes, then idle ones (FGD paper baseline)"},
    PolicyInfo{"BestFit", "least CPU+GPU left over (FGD paper baseline)"},
    PolicyInfo{"FGD", "fragmentation gradient descent, integer scores with random ties (as the authors)"},
    PolicyInfo{"FGD-exact", "fragmentation gradient descent, exact argmin"},
    PolicyInfo{"FGD+", "FGD plus CPU-stranding and learned model-scarcity costs (fgpu's own)"},
};

bool SameName(std::string_view left, std::string_view right) {
  return std::equal(left.begin(), left.end(), right.begin(), right.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  });
}

std::string KnownNames() {
  std::string names;
  for (const PolicyInfo& policy : kPolicies) {
    if (!names.empty()) names += ", ";
    names += policy.name;
  }
  return names;
}

}  // namespace

std::span<const PolicyInfo> PolicyList() { return kPolicies; }

Result<std::string_view> CanonicalPolicyName(std::string_view name) {
  for (const PolicyInfo& policy : kPolicies) {
    if (SameName(policy.name, name)) return policy.name;
  }
  return Status::NotFound("unknown policy '" + std::string(name) + "'; known: " + KnownNames());
}

Result<std::unique_ptr<Policy>> MakePolicy(std::string_view name, const PolicyContext& context) {
  Result<std::string_view> canonical = CanonicalPolicyName(name);
  if (!canonical.ok()) return canonical.status();
  const std::string_view known = *canonical;
  std::unique_ptr<Policy> policy;
  if (known == "Random") policy = std::make_unique<RandomPolicy>();
  if (known == "DotProd") policy = std::make_unique<DotProductPolicy>();
  if (known == "GpuClustering") policy = std::make_unique<GpuClusteringPolicy>();
  if (known == "GpuPacking") policy = std::make_unique<GpuPackingPolicy>();
  if (known == "BestFit") policy = std::make_unique<BestFitPolicy>();
  if (known == "FGD")
    policy = std::make_unique<FgdPolicy>(context.workload, FgdPolicy::Scoring::kAuthorsInteger);
  if (known == "FGD-exact")
    policy = std::make_unique<FgdPolicy>(context.workload, FgdPolicy::Scoring::kExact);
  if (known == "FGD+") policy = std::make_unique<FgdPlusPolicy>(context.workload, FgdPlusPolicy::Options{});
  return policy;
}

}  // namespace fgpu::sched
