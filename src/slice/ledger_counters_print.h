// gtest's printer for LedgerCounters (tests only). Every test file that compares counters
// includes it: a printer declared in one file only would lose to the byte dump that another
// file's instantiation of the same gtest template carries (the linker keeps one).
#pragma once

#include <ostream>

#include "slice/slice.h"

namespace fgpu::slice {

inline void PrintTo(const LedgerCounters& c, std::ostream* out) {
  *out << "{oom_refusals " << c.oom_refusals << ", fail_closed " << c.fail_closed_refusals << ", compute_unenforced "
       << c.compute_unenforced << ", no_free_slot " << c.no_free_slot << ", pass_through " << c.pass_through << "}";
}

}  // namespace fgpu::slice
