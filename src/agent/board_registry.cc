// The agent's sealed boards and their rows (see board_registry.h).
#include "agent/board_registry.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <iostream>
#include <set>

#include "agent/board_recovery.h"
#include "compute/policy_table.h"

namespace fgpu::agent {

uint64_t SliceKeyOf(const std::string& dir) {
  char resolved[PATH_MAX];
  return compute::SliceKey(::realpath(dir.c_str(), resolved) != nullptr ? resolved : dir.c_str());
}

Result<BoardRegistry::Gpu> BoardRegistry::OpenGpu(const std::string& uuid, const std::vector<pid_t>& candidates,
                                                   uid_t owner) {
  Gpu gpu;
  std::optional<compute::SealedPair> pair = RecoverSealedPair(uuid, candidates, owner);
  gpu.recovered = pair.has_value();
  if (!pair) {
    Result<compute::SealedPair> made = compute::CreateSealedPair(uuid);
    if (!made.ok()) return Status::Unavailable("the compute board of " + uuid + ": " + made.status().message());
    pair = *made;
  }
  gpu.own = *pair;
  Result<compute::Board*> board =
      compute::Board::Map(gpu.own.board, gpu.own.policy, uuid, compute::MapOptions{.writable_policy = true, .owner = owner});
  Result<int> read_only = board.ok() ? compute::ReopenReadOnly(gpu.own.policy) : Result<int>(board.status());
  if (!board.ok() || !read_only.ok()) {
    if (board.ok()) delete *board;
    compute::ClosePair(&gpu.own);
    return Status::Unavailable("the compute board of " + uuid + ": " +
                               (board.ok() ? read_only.status() : board.status()).message());
  }
  gpu.board.reset(*board);
  gpu.policy_read_only = *read_only;
  return gpu;
}

Result<std::unique_ptr<BoardRegistry>> BoardRegistry::Open(const std::vector<std::string>& gpu_uuids,
                                                           const std::vector<pid_t>& candidates, uid_t owner) {
  std::unique_ptr<BoardRegistry> registry(new BoardRegistry());
  registry->owner_ = owner;
  for (const std::string& uuid : gpu_uuids) {
    Result<Gpu> gpu = OpenGpu(uuid, candidates, owner);
    if (!gpu.ok()) return gpu.status();
    registry->gpus_.emplace(uuid, std::move(*gpu));
  }
  return registry;
}

BoardRegistry::~BoardRegistry() {
  for (auto& [uuid, gpu] : gpus_) {
    gpu.board.reset();
    compute::ClosePair(&gpu.own);
    if (gpu.policy_read_only >= 0) ::close(gpu.policy_read_only);
  }
}

std::vector<std::string> BoardRegistry::Rebuild(const std::vector<SliceRecord>& slices) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> changes;
  held_.clear();
  for (auto& [uuid, gpu] : gpus_) {
    std::map<uint64_t, const SliceRecord*> wanted;
    for (const SliceRecord& slice : slices) {
      if (slice.gpu_uuid == uuid) wanted.emplace(SliceKeyOf(slice.dir), &slice);
    }
    compute::Board& board = *gpu.board;
    for (int row = 0; row < static_cast<int>(compute::layout::kEntryCount); ++row) {
      const uint64_t key = board.RowKey(row);
      if (key == 0) continue;
      const auto it = wanted.find(key);
      if (it == wanted.end() || held_.count(it->second->id) != 0) {
        compute::FreeRow(board, row);
        changes.push_back("GPU " + uuid + ": freed compute row " + std::to_string(row) + " (no slice of it)");
        continue;
      }
      const SliceRecord& slice = *it->second;
      compute::UpdateRow(board, row, slice.compute_share, slice.compute_mode, slice.tier);
      held_[slice.id] = Held{uuid, row};
    }
  }
  for (const SliceRecord& slice : slices) {
    if (held_.count(slice.id) != 0 || gpus_.count(slice.gpu_uuid) == 0) continue;
    PlaceLocked(slice, SliceKeyOf(slice.dir));
  }
  return changes;
}

void BoardRegistry::Observe(const SliceRecord& slice, bool gone) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto held = held_.find(slice.id);
  if (gone) {
    if (held == held_.end()) return;
    const auto gpu = gpus_.find(held->second.gpu);
    if (gpu != gpus_.end()) {
      compute::FreeRow(*gpu->second.board, held->second.row);
      gpu->second.freed_at_ns[held->second.row] = compute::MonotonicNs();
    }
    held_.erase(held);
    return;
  }
  if (gpus_.count(slice.gpu_uuid) == 0) {  // a MIG instance made after the start: its board now
    Result<Gpu> gpu = OpenGpu(slice.gpu_uuid, {}, owner_);
    if (!gpu.ok()) {
      std::cerr << "fgpu agent: " << gpu.status().message() << ": slice " << slice.id
                << "'s workloads run with compute shares unenforced" << std::endl;
      return;
    }
    gpus_.emplace(slice.gpu_uuid, std::move(*gpu));
  }
  PlaceLocked(slice, held == held_.end() ? SliceKeyOf(slice.dir) : 0);
}

void BoardRegistry::PlaceLocked(const SliceRecord& slice, uint64_t key) {
  Gpu& gpu = gpus_.at(slice.gpu_uuid);
  compute::Board& board = *gpu.board;
  if (const auto held = held_.find(slice.id); held != held_.end()) {
    compute::UpdateRow(board, held->second.row, slice.compute_share, slice.compute_mode, slice.tier);
    return;
  }
  int row = board.Find(key);
  if (row >= 0) {  // already in the table (a row a previous run gave it)
    compute::UpdateRow(board, row, slice.compute_share, slice.compute_mode, slice.tier);
  } else {
    row = compute::FreeRowIndex(board, gpu.freed_at_ns);
    if (row < 0) {
      std::cerr << "fgpu agent: GPU " << slice.gpu_uuid << " has no free compute row for slice " << slice.id
                << ": its workloads run with compute shares unenforced" << std::endl;
      return;
    }
    compute::AssignRow(board, row, key, slice.id, slice.compute_share, slice.compute_mode, slice.tier,
                       compute::MonotonicNs());
  }
  held_[slice.id] = Held{slice.gpu_uuid, row};
}

std::optional<compute::SealedPair> BoardRegistry::Handout(const std::string& uuid) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto gpu = gpus_.find(uuid);
  if (gpu == gpus_.end()) return std::nullopt;
  return compute::SealedPair{gpu->second.own.board, gpu->second.policy_read_only};
}

const compute::Board* BoardRegistry::BoardOf(const std::string& uuid) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto gpu = gpus_.find(uuid);
  return gpu == gpus_.end() ? nullptr : gpu->second.board.get();
}

bool BoardRegistry::Recovered(const std::string& uuid) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto gpu = gpus_.find(uuid);
  return gpu != gpus_.end() && gpu->second.recovered;
}

int BoardRegistry::RowOf(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto held = held_.find(id);
  return held == held_.end() ? -1 : held->second.row;
}

}  // namespace fgpu::agent
