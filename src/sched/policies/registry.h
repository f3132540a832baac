// The one list of placement policies: names, one-line descriptions, factories. Names are
// matched without regard to case.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "core/status.h"
#include "sched/fragmentation.h"
#include "sched/policy.h"

namespace fgpu::sched {

// What policies may need to be built.
struct PolicyContext {
  // The workload fragmentation-aware policies measure against (FGD's typical pods).
  TargetWorkload workload;
};

struct PolicyInfo {
  std::string_view name;
  std::string_view summary;
};

std::span<const PolicyInfo> PolicyList();

// NotFound, listing the known names, for a name that is not in the list.
Result<std::unique_ptr<Policy>> MakePolicy(std::string_view name, const PolicyContext& context);

// The canonical spelling of a policy name, or NotFound.
Result<std::string_view> CanonicalPolicyName(std::string_view name);

}  // namespace fgpu::sched
