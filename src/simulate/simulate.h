// simulate: trace-driven replay of placement policies under the FGD protocol — the front door.
// Scenario::Load reads a trace (trace.h), RunAll replays a plan of policies × seeds on it
// (runner.h, replay.h), Summarize reduces the runs per policy (summary.h), and report.h /
// svg_plot.h render the table, JSON and plot. See README.md and docs/placement.md.
#pragma once

#include "simulate/authors.h"   // IWYU pragma: export
#include "simulate/mig_pools.h" // IWYU pragma: export
#include "simulate/plan.h"      // IWYU pragma: export
#include "simulate/replay.h"    // IWYU pragma: export
#include "simulate/report.h"    // IWYU pragma: export
#include "simulate/runner.h"    // IWYU pragma: export
#include "simulate/summary.h"   // IWYU pragma: export
#include "simulate/svg_plot.h"  // IWYU pragma: export
#include "simulate/timeline.h"  // IWYU pragma: export
#include "simulate/timeline_report.h"  // IWYU pragma: export
