// Fault injection for the ledger protocol's tests: a process can be made to SIGKILL itself
// at a named protocol step, so tests can prove that a death at that instruction leaves
// nothing behind.
//
// Contract
// - Compiled in always (tests exercise the shipping code), armed only by the environment
//   variable kCrashEnv, read once per Attach: "<step>" or "<step>:<n>" = die the n-th time
//   the step is reached (n >= 1, default 1). Unknown text disarms it. A process can only
//   kill itself with it, which it could do anyway.
// - Disarmed, a crash point costs one predictable branch on a field of the caller's own
//   memory; no syscall, no allocation.
#pragma once

#include <atomic>
#include <cstdint>

namespace fgpu::slice {

inline constexpr const char* kCrashEnv = "FGPU_SLICE_TEST_CRASH_AT";

enum class CrashStep : uint8_t {
  kNone = 0,
  kAfterJournal,    // J written, D not yet CAS'd (the op must vanish)
  kAfterDeviceCas,  // D CAS'd, C not committed (the op must be completed by a helper)
  kAfterCommit,     // C committed, before returning to the caller
  kAfterClaim,      // slot CLAIMING, not yet LIVE
  kMidReap,         // slot REAPING, nothing of the victim released yet
  kAfterReapOp,     // first device of the victim released, the rest not, slot not FREE
};
inline constexpr int kCrashStepCount = 7;

// The names used in kCrashEnv, indexed by CrashStep.
inline constexpr const char* kCrashStepNames[kCrashStepCount] = {
    "none", "after-journal", "after-device-cas", "after-commit", "after-claim", "mid-reap", "after-reap-op"};

class CrashPlan {
 public:
  // Parses kCrashEnv's value (nullptr = disarmed).
  void Arm(const char* spec);
  void Disarm() { step_ = CrashStep::kNone; }

  void At(CrashStep step) {
    if (step_ != step) return;
    if (remaining_.fetch_sub(1, std::memory_order_relaxed) == 1) Die();
  }

 private:
  [[noreturn]] static void Die();
  CrashStep step_ = CrashStep::kNone;
  std::atomic<int64_t> remaining_{0};
};

}  // namespace fgpu::slice
