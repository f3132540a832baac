// sched: fgpu's placement engine — the front door. Build a Cluster (cluster.h) from node
// specs, pick a policy by name (policies/registry.h), and drive a Scheduler (scheduler.h):
// Decide → Reserve → (Unreserve | Release). Requests are request.h; the FGD fragmentation
// measure is fragmentation.h. See README.md and docs/placement.md.
#pragma once

#include "sched/cluster.h"            // IWYU pragma: export
#include "sched/fragmentation.h"      // IWYU pragma: export
#include "sched/model_table.h"        // IWYU pragma: export
#include "sched/policies/registry.h"  // IWYU pragma: export
#include "sched/policy.h"             // IWYU pragma: export
#include "sched/request.h"            // IWYU pragma: export
#include "sched/scheduler.h"          // IWYU pragma: export
