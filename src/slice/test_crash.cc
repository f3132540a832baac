#include "slice/test_crash.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace fgpu::slice {

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
  for (int i = 1; i < kCrashStepCount; ++i) {
    if (std::strlen(kCrashStepNames[i]) == name_length &&
        std::strncmp(spec, kCrashStepNames[i], name_length) == 0) {
      remaining_.store(count, std::memory_order_relaxed);
      step_ = static_cast<CrashStep>(i);
      return;
    }
  }
}

void CrashPlan::Die() {
  ::kill(::getpid(), SIGKILL);
  ::_exit(137);  // not reached: SIGKILL cannot be caught
}

}  // namespace fgpu::slice
