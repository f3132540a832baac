// What `fgpu status` and `fgpu top` show: the agent's GPUs and slices as tables. Rendering is
// pure (tested without an agent); `top` adds each slice's achieved share, from the growth of its
// measured busy time between two readings.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace fgpu::cli {

// `gpus`: GET /v1/gpus; `slices`: GET /v1/slices?usage=1. With `achieved` (slice id → percent of
// a GPU over the last interval; "-" for a slice without a reading yet) an ACHIEVED column.
std::string RenderAgentStatus(const nlohmann::json& gpus, const nlohmann::json& slices,
                              const std::map<std::string, double>* achieved = nullptr);

}  // namespace fgpu::cli
