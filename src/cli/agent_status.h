// What `fgpu status` and `fgpu top` show: the agent's GPUs and slices as tables. Rendering is
// pure (tested without an agent); `top` adds each slice's achieved share, from the growth of its
// measured busy time between two readings.
#pragma once

#include <cstdint>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace fgpu::cli {

// `gpus`: GET /v1/gpus; `slices`: GET /v1/slices?usage=1. With `achieved` (slice id → percent of
// a GPU over the last interval; "-" for a slice without a reading yet) an ACHIEVED column.
// Slices that are starved get a STARVED mark (and a line below the tables) and, from agents that
// send compute_throttled_seconds, a THROTTLED column (seconds their launches waited in the
// compute gate); an older agent's slices, without those fields, show neither.
std::string RenderAgentStatus(const nlohmann::json& gpus, const nlohmann::json& slices,
                              const std::map<std::string, double>* achieved = nullptr);

// The slice table alone (`fgpu slice list`): "no slices" when there is none.
std::string RenderSliceTable(const nlohmann::json& slices, const std::map<std::string, double>* achieved = nullptr);

// `fgpu top`'s first line: the local time of the reading and the refresh interval.
std::string TopHeading(std::time_t now, double interval_s);

// `fgpu slice show`: one "key: value" line per field (sizes also in GiB, env one line per variable).
std::string RenderSliceDetails(const nlohmann::json& slice);

// The room each GPU of GET /v1/gpus has left, for a refusal: "GPU 0: 3.50 GiB and 40 % compute
// free; GPU 1: exclusive". Fenced and exclusive GPUs say why they take no slice.
std::string DescribeFreeRoom(const nlohmann::json& gpus);

// Whether `memory` bytes exceed every GPU of GET /v1/gpus even empty (or the one `device` names:
// an index or a UUID; empty for any).
bool LargerThanEveryGpu(const nlohmann::json& gpus, uint64_t memory, const std::string& device);

}  // namespace fgpu::cli
