// The agent's writes to a policy table (see policy_table.h).
#include "compute/policy_table.h"

#include <algorithm>

namespace fgpu::compute {
namespace {

uint32_t ModeTier(Mode mode, Tier tier) {
  return layout::PackModeTier(static_cast<uint8_t>(mode), static_cast<uint8_t>(tier));
}

void StoreU64(uint64_t* word, uint64_t value) { __atomic_store_n(word, value, __ATOMIC_RELEASE); }

void StoreSliceId(char (&field)[layout::kSliceIdBytes], std::string_view slice_id) {
  const size_t length = std::min(slice_id.size(), layout::kSliceIdBytes - 1);
  for (size_t i = 0; i < layout::kSliceIdBytes; ++i) {
    __atomic_store_n(&field[i], i < length ? slice_id[i] : '\0', __ATOMIC_RELAXED);
  }
}

}  // namespace

void AssignRow(Board& board, int row, uint64_t key, std::string_view slice_id, uint32_t share, Mode mode, Tier tier,
               int64_t now_ns) {
  layout::BoardEntry& state = *board.entry(row);
  // A fresh start: nothing of the row's previous slice counts for the new one. Demand and
  // activity 0: the new slice is neither waiting nor busy until its first launch.
  StoreU64(&state.vtime, LoadU64(&board.header()->vclock));
  StoreI64(&state.tat_ns, now_ns);
  StoreI64(&state.inflight_until_ns, 0);
  StoreI64(&state.demand_ns, 0);
  StoreI64(&state.activity_ns, 0);
  StoreU64(&state.busy_ns, 0);
  StoreU64(&state.launches, 0);
  StoreU64(&state.throttled_ns, 0);
  StoreU64(&state.throttles, 0);
  layout::PolicyEntry& policy = *board.policy_entry(row);
  StoreSliceId(policy.slice_id, slice_id);
  UpdateRow(board, row, share, mode, tier);
  StoreU64(&policy.key, key);
}

void UpdateRow(Board& board, int row, uint32_t share, Mode mode, Tier tier) {
  layout::PolicyEntry& policy = *board.policy_entry(row);
  __atomic_store_n(&policy.share, std::clamp<uint32_t>(share, 1, 100), __ATOMIC_RELEASE);
  __atomic_store_n(&policy.mode_tier, ModeTier(mode, tier), __ATOMIC_RELEASE);
}

void FreeRow(Board& board, int row) {
  layout::PolicyEntry& policy = *board.policy_entry(row);
  StoreU64(&policy.key, 0);
  __atomic_store_n(&policy.share, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&policy.mode_tier, 0, __ATOMIC_RELEASE);
  StoreSliceId(policy.slice_id, "");
}

int FreeRowIndex(const Board& board, const int64_t (&freed_at_ns)[layout::kEntryCount]) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(layout::kEntryCount); ++i) {
    if (board.RowKey(i) != 0) continue;
    if (best < 0 || freed_at_ns[i] < freed_at_ns[best]) best = i;
  }
  return best;
}

}  // namespace fgpu::compute
