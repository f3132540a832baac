// The node agent's writes to a sealed board's policy table (board.h: a Board mapped with
// writable_policy). Workloads map the table read-only and only read it; the agent is its one
// writer (one thread at a time: the caller serialises).
//
// Contract
// - AssignRow(board, row, ...) gives free row `row` to a slice: first the board row's dynamic
//   state is reset (a fresh start, as a claim on a file board: virtual time at the board's clock,
//   the rate clock now, counters 0, nothing in flight or asked), then share, mode|tier and the
//   slice id are stored, and the key last (release): a reader that sees the key sees the rest.
// - UpdateRow stores share and mode|tier (each one atomic word; resize).
// - FreeRow stores key 0 first (the row stops counting at once), then clears the rest.
// - FreeRowIndex: a row whose key is 0, preferring the one freed longest ago by this writer
//   (`freed_at_ns`, one per row, 0 = never used), so a process of a deleted slice that still
//   runs writes into a row nobody else holds for as long as possible; -1 when all are held.
#pragma once

#include <cstdint>
#include <string_view>

#include "compute/board.h"
#include "compute/policy.h"

namespace fgpu::compute {

void AssignRow(Board& board, int row, uint64_t key, std::string_view slice_id, uint32_t share, Mode mode, Tier tier,
               int64_t now_ns);
void UpdateRow(Board& board, int row, uint32_t share, Mode mode, Tier tier);
void FreeRow(Board& board, int row);
int FreeRowIndex(const Board& board, const int64_t (&freed_at_ns)[layout::kEntryCount]);

}  // namespace fgpu::compute
