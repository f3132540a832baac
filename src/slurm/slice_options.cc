#include "slurm/slice_options.h"

#include <charconv>
#include <string_view>

#include "core/units.h"

namespace fgpu::slurm {
namespace {

std::string Quoted(const char* text) { return "'" + std::string(text == nullptr ? "" : text) + "'"; }

}  // namespace

Status SetMemory(const char* text, SliceOptions& options) {
  const std::string_view value = text == nullptr ? std::string_view() : std::string_view(text);
  Result<uint64_t> bytes = ParseByteSize(value);
  if (!bytes.ok() || *bytes == 0) {
    return Status::InvalidArgument("--gpu-memory=" + Quoted(text) +
                                   ": expected a size of GPU memory greater than zero, e.g. 30GiB or 512MiB");
  }
  options.memory_bytes = *bytes;
  return Status::Ok();
}

Status SetCompute(const char* text, SliceOptions& options) {
  std::string_view value = text == nullptr ? std::string_view() : std::string_view(text);
  if (!value.empty() && value.back() == '%') value.remove_suffix(1);
  uint32_t percent = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), percent);
  if (value.empty() || error != std::errc() || end != value.data() + value.size() || percent < 1 || percent > 100) {
    return Status::InvalidArgument("--gpu-compute=" + Quoted(text) +
                                   ": expected a whole percent of one GPU from 1 to 100, e.g. 30");
  }
  options.compute_percent = percent;
  return Status::Ok();
}

Status SetTier(const char* text, SliceOptions& options) {
  const std::string value = text == nullptr ? std::string() : std::string(text);
  if (value != "batch" && value != "standard" && value != "latency") {
    return Status::InvalidArgument("--gpu-tier=" + Quoted(text) + ": expected batch, standard or latency");
  }
  options.tier = value;
  return Status::Ok();
}

Status Complete(const SliceOptions& options) {
  if (options.Requested() && !options.memory_bytes) {
    return Status::InvalidArgument(std::string(options.compute_percent ? "--gpu-compute" : "--gpu-tier") +
                                   " needs --gpu-memory: a slice always has a memory cap");
  }
  return Status::Ok();
}

}  // namespace fgpu::slurm
