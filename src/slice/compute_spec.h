// The compute fields of a slice device, as text: "cap" / "share" for ComputeMode, "batch" /
// "standard" / "latency" for Tier (slice.h defines both enums; docs/slice-format.md their
// encoding in the limits file).
//
// Contract
// - Parse* accept exactly the names ToString gives (ASCII case-insensitive) and return
//   InvalidArgument naming what was expected and what was given otherwise.
// - ToString of a value outside the enum (a cast from a bad byte) is "unknown".
// - Nothing here allocates except the error message of a failed parse.
#pragma once

#include <string_view>

#include "core/status.h"
#include "slice/slice.h"

namespace fgpu::slice {

Result<ComputeMode> ParseComputeMode(std::string_view text);
Result<Tier> ParseTier(std::string_view text);

const char* ToString(ComputeMode mode);
const char* ToString(Tier tier);

}  // namespace fgpu::slice
