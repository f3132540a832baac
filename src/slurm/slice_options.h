// The plugin's job options (--gpu-memory, --gpu-compute, --gpu-tier) as parsed values.
//
// Contract: each Set* validates one option's text and stores it, or leaves the options as
// they were and returns InvalidArgument with a message that names the option and quotes the
// value. Complete() checks what one option cannot: compute and tier only refine a slice whose
// memory was asked for. Pure; never throws except std::bad_alloc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"

namespace fgpu::slurm {

struct SliceOptions {
  std::optional<uint64_t> memory_bytes;
  std::optional<uint32_t> compute_percent;
  std::optional<std::string> tier;  // "batch", "standard" or "latency"

  // True when the job asked for a slice at all; otherwise the plugin does nothing.
  bool Requested() const { return memory_bytes || compute_percent || tier; }
};

// "30GiB", "512MiB", "1.5GiB", a byte count: more than zero (core/units.h ParseByteSize).
Status SetMemory(const char* text, SliceOptions& options);
// A percent of one GPU, 1..100 ("30" or "30%").
Status SetCompute(const char* text, SliceOptions& options);
// batch | standard | latency.
Status SetTier(const char* text, SliceOptions& options);
// InvalidArgument when compute or tier was given without memory.
Status Complete(const SliceOptions& options);

}  // namespace fgpu::slurm
