// Kubernetes resource quantities ("20Gi", "30", "1.5G", "500m", "1e3"), the form in which the API
// server carries a device's capacity and what a claim consumed of it. The grammar is the one
// apimachinery's resource.Quantity accepts; values here are whole units (bytes, percent), so a
// fractional quantity rounds up the way Quantity.Value() does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace fgpu::k8s {

// The quantity as a whole number, rounded up (Value()); InvalidArgument for text outside the
// grammar, a negative value, or one past 2^63 - 1.
Result<uint64_t> ParseQuantity(std::string_view text);

// The canonical text of a whole number: the largest binary suffix (Ki..Ei) that divides it
// exactly when `binary`, else the number itself ("85520809984" → "81559Mi").
std::string FormatQuantity(uint64_t value, bool binary);

}  // namespace fgpu::k8s
