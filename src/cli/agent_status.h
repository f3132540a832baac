// What `fgpu status` and `fgpu top` show: the agent's GPUs and slices as tables. Rendering is
// pure (tested without an agent); `top` adds each slice's achieved share, from the growth of its
// measured busy time between two readings.
#pragma once

#include <cstdint>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "api/types.h"

namespace fgpu::cli {

// `gpus`: GET /v1/gpus; `slices`: GET /v1/slices?usage=1. With `achieved` (slice id → percent of
// a GPU over the last interval; "-" for a slice without a reading yet) an ACHIEVED column.
// Slices that are starved get a STARVED mark (and a line below the tables) and, from agents that
// send their throttled time, a THROTTLED column (seconds their launches waited in the compute
// gate); an older agent's slices, without those fields, show neither. Memory used and processes
// show "-" for slices read without their usage.
std::string RenderAgentStatus(const std::vector<api::Gpu>& gpus, const std::vector<api::Slice>& slices,
                              const std::map<std::string, double>* achieved = nullptr);

// The waiting requests (GET /v1/queue) in the order they will be served, each with why it
// waits, and the quotas (GET /v1/quotas) with what they hold: "" when both are empty.
std::string RenderQueueAndQuotas(const std::vector<api::QueueItem>& queue, const std::vector<api::Quota>& quotas);

// The slice table alone (`fgpu slice list`): "no slices" when there is none.
std::string RenderSliceTable(const std::vector<api::Slice>& slices,
                             const std::map<std::string, double>* achieved = nullptr);

// `fgpu top`'s first line: the local time of the reading and the refresh interval.
std::string TopHeading(std::time_t now, double interval_s);

// `fgpu slice show`: one "key: value" line per field the agent writes of the slice, named as the
// API names it (api/codec.h), sizes also in GiB, env one "env.NAME: value" line per variable.
std::string RenderSliceDetails(const api::Slice& slice);

// The room each GPU of GET /v1/gpus has left, for a refusal: "GPU 0: 3.50 GiB and 40 % compute
// free; GPU 1: exclusive". Fenced and exclusive GPUs say why they take no slice.
std::string DescribeFreeRoom(const std::vector<api::Gpu>& gpus);

// Whether `memory` bytes exceed every GPU of GET /v1/gpus even empty (or the one `device` names:
// an index or a UUID; empty for any).
bool LargerThanEveryGpu(const std::vector<api::Gpu>& gpus, uint64_t memory, const std::string& device);

}  // namespace fgpu::cli
