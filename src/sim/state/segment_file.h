// Opening, creating, validating and removing a simulator segment (POSIX shared memory).
//
// Contract
// - OpenOrCreateSegment returns a mapping only of a segment whose header matches this
//   library's layout and `config`: VersionMismatch, InvalidArgument (another config),
//   Corrupt (anything else wrong) or Unavailable (the OS refused) otherwise.
// - Creation is serialised by flock() on the segment's fd. The creator writes the magic
//   last, so a creator killed mid-way (flock released by the kernel) leaves either an
//   empty file or a header without magic, and the next opener re-initialises it.
// - A SegmentMapping owns its mapping and unmaps it on destruction; it is movable, not
//   copyable, and does not synchronise access (the header's mutex does).
#pragma once

#include <cstddef>
#include <string>

#include "core/status.h"
#include "sim/state/segment_layout.h"
#include "sim/state/shared_devices.h"

namespace fgpu::sim {

class SegmentMapping {
 public:
  SegmentMapping() = default;
  SegmentMapping(void* base, size_t size) : base_(base), size_(size) {}
  SegmentMapping(SegmentMapping&& other) noexcept;
  SegmentMapping& operator=(SegmentMapping&& other) noexcept;
  SegmentMapping(const SegmentMapping&) = delete;
  SegmentMapping& operator=(const SegmentMapping&) = delete;
  ~SegmentMapping();

  layout::SegmentPrefix& prefix() const { return *static_cast<layout::SegmentPrefix*>(base_); }
  layout::SegmentHeader& header() const { return prefix().header; }
  layout::ProcessSlot& slot(int index) const { return prefix().slots[index]; }
  layout::DeviceState& device(int index) const {
    return reinterpret_cast<layout::DeviceState*>(static_cast<char*>(base_) + sizeof(layout::SegmentPrefix))[index];
  }

 private:
  void* base_ = nullptr;
  size_t size_ = 0;
};

// "/name": one leading slash, no other, 2..255 bytes, printable. InvalidArgument otherwise.
Status ValidateSegmentName(const std::string& name);

// `config` must already be valid and have its identities completed.
Result<SegmentMapping> OpenOrCreateSegment(const std::string& name, const SimConfig& config);

Status RemoveSegment(const std::string& name);

}  // namespace fgpu::sim
