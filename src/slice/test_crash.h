// Fault injection for the ledger protocol's tests: a process can be made to SIGKILL itself
// at a named protocol step, so tests can prove that a death at that instruction leaves
// nothing behind; and one thread can be stopped at a named step, so tests can prove that the
// process's other threads do not wait for it.
//
// Contract
// - Compiled in always (tests exercise the shipping code). The crash is armed only by the
//   environment variable kCrashEnv, read once per Attach: "<step>" or "<step>:<n>" = die the
//   n-th time the step is reached (n >= 1, default 1). Unknown text disarms it. A process can
//   only kill itself with it, which it could do anyway.
// - The pause is armed only by test code in the same process (ArmPause, reached through
//   Ledger::TEST_PauseAt): the first thread that reaches the step afterwards stops there
//   until Resume(); every other thread, and that thread's later visits, pass.
// - Disarmed, a crash point costs one predictable branch on a load (a plain mov on x86-64) of
//   the caller's own memory; no syscall, no allocation.
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
  kAfterReapOp,     // one settle op of the victim's device 0 done (credits of negative lanes
                    // come first), the rest not, slot not FREE
};
inline constexpr int kCrashStepCount = 7;

// The names used in kCrashEnv, indexed by CrashStep.
inline constexpr const char* kCrashStepNames[kCrashStepCount] = {
    "none", "after-journal", "after-device-cas", "after-commit", "after-claim", "mid-reap", "after-reap-op"};

// kNone for an unknown name (or "none").
CrashStep CrashStepFromName(const char* name, unsigned long length);

class CrashPlan {
 public:
  // Parses kCrashEnv's value (nullptr = disarmed). Leaves an armed pause alone.
  void Arm(const char* spec);
  void Disarm();

  // Test-only: the next thread to reach `step` stops there until Resume().
  void ArmPause(CrashStep step);
  bool Paused() const { return pause_state_.load(std::memory_order_acquire) == kPauseHeld; }
  void Resume();

  void At(CrashStep step) {
    if ((armed_.load(std::memory_order_acquire) & Bit(step)) == 0) return;
    Reached(step);
  }

 private:
  enum : int { kPauseNone = 0, kPauseArmed = 1, kPauseHeld = 2, kPauseDone = 3 };
  static constexpr uint32_t Bit(CrashStep step) { return uint32_t{1} << static_cast<unsigned>(step); }
  void Reached(CrashStep step);
  [[noreturn]] static void Die();

  std::atomic<uint32_t> armed_{0};  // Bit(crash step) | Bit(pause step)
  std::atomic<CrashStep> step_{CrashStep::kNone};
  std::atomic<int64_t> remaining_{0};
  std::atomic<CrashStep> pause_step_{CrashStep::kNone};
  std::atomic<int> pause_state_{kPauseNone};
};

}  // namespace fgpu::slice
