#include "slice/test_crash.h"

#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace fgpu::slice {

CrashStep CrashStepFromName(const char* name, unsigned long length) {
  if (name == nullptr) return CrashStep::kNone;
  for (int i = 1; i < kCrashStepCount; ++i) {
    if (std::strlen(kCrashStepNames[i]) == length && std::strncmp(name, kCrashStepNames[i], length) == 0)
      return static_cast<CrashStep>(i);
  }
  return CrashStep::kNone;
}

void CrashPlan::Arm(const char* spec) {
  Disarm();
  if (spec == nullptr) return;
  const char* colon = std::strchr(spec, ':');
  const size_t name_length = colon != nullptr ? static_cast<size_t>(colon - spec) : std::strlen(spec);
  int64_t count = 1;
  if (colon != nullptr) {
    char* end = nullptr;
    count = std::strtoll(colon + 1, &end, 10);
    if (end == colon + 1 || *end != '\0' || count < 1) return;
  }
  const CrashStep step = CrashStepFromName(spec, name_length);
  if (step == CrashStep::kNone) return;
  remaining_.store(count, std::memory_order_relaxed);
  step_.store(step, std::memory_order_relaxed);
  armed_.fetch_or(Bit(step), std::memory_order_release);
}

void CrashPlan::Disarm() {
  const CrashStep step = step_.exchange(CrashStep::kNone, std::memory_order_relaxed);
  if (step != CrashStep::kNone && step != pause_step_.load(std::memory_order_relaxed))
    armed_.fetch_and(~Bit(step), std::memory_order_release);
}

void CrashPlan::ArmPause(CrashStep step) {
  if (step == CrashStep::kNone) return;
  pause_step_.store(step, std::memory_order_relaxed);
  pause_state_.store(kPauseArmed, std::memory_order_release);
  armed_.fetch_or(Bit(step), std::memory_order_release);
}

void CrashPlan::Resume() {
  // Armed but not reached: disarmed. Held: the thread goes on.
  pause_state_.store(kPauseDone, std::memory_order_release);
  const CrashStep step = pause_step_.exchange(CrashStep::kNone, std::memory_order_relaxed);
  if (step != CrashStep::kNone && step != step_.load(std::memory_order_relaxed))
    armed_.fetch_and(~Bit(step), std::memory_order_release);
}

void CrashPlan::Reached(CrashStep step) {
  if (step == pause_step_.load(std::memory_order_relaxed)) {
    int expected = kPauseArmed;
    if (pause_state_.compare_exchange_strong(expected, kPauseHeld, std::memory_order_acq_rel)) {
      // Only test code arms this: stopping here with a syscall per turn is fine.
      while (pause_state_.load(std::memory_order_acquire) == kPauseHeld) ::sched_yield();
    }
  }
  if (step == step_.load(std::memory_order_relaxed) && remaining_.fetch_sub(1, std::memory_order_relaxed) == 1) Die();
}

void CrashPlan::Die() {
  ::kill(::getpid(), SIGKILL);
  ::_exit(137);  // not reached: SIGKILL cannot be caught
}

}  // namespace fgpu::slice
