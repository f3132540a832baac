// Fault injection: child processes reserve and release in a loop and die by SIGKILL — by
// their own hand at a named protocol step (FGPU_SLICE_TEST_CRASH_AT), or by ours at a random
// instant. Whatever the instant, once the dead are reaped nothing stays charged, the device
// total equals the sum of the live charges, nobody waits, and each reap is quick.
//
// Two ways to churn: "hinted" children use Reserve/Release (their one thread keeps to one
// lane); "crossed" children put every op on a random lane, so memory reserved on one lane is
// released on another and lanes go negative — the reaper must then settle signed lanes, credits
// first, and may itself die between them.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "core/units.h"
#include "slice/test_crash.h"
#include "slice/test_support.h"

namespace fgpu::slice {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kCrashCap = kGiB;
constexpr int kDevices = 2;  // so that a reaper can die between one device's release and the next
constexpr int kConcurrentChildren = 4;
constexpr int kDrainEvery = 100;  // children between full stops that check the books mid-run

// 10^3 children; FGPU_SLICE_CRASH_CHILDREN overrides.
int ChildCount() {
  const char* text = std::getenv("FGPU_SLICE_CRASH_CHILDREN");
  const int count = text != nullptr ? std::atoi(text) : 0;
  return count > 0 ? count : 1000;
}

// A crossed child keeps the sum of its negative lanes about this small (see ReleaseLane).
constexpr int64_t kMaxDebt = 400 * static_cast<int64_t>(kMiB);

// For a crossed child: a random lane, unless releasing there would take the slot's negative
// lanes past kMaxDebt; then the lane holding the most.
int ReleaseLane(Ledger* ledger, int device, uint64_t bytes, std::minstd_rand& random) {
  int64_t lanes[kLanes];
  int64_t debt = 0;
  int richest = 0;
  for (int lane = 0; lane < kLanes; ++lane) {
    lanes[lane] = ledger->TEST_LaneCharge(device, lane);
    if (lanes[lane] < 0) debt -= lanes[lane];
    if (lanes[lane] > lanes[richest]) richest = lane;
  }
  const int lane = static_cast<int>(random() % kLanes);
  const int64_t after = lanes[lane] - static_cast<int64_t>(bytes);
  const int64_t new_debt = debt - std::min<int64_t>(lanes[lane], 0) + (after < 0 ? -after : 0);
  return new_debt <= kMaxDebt ? lane : richest;
}

// The child: attach (arming the crash plan from the environment), then churn until killed.
// Sizes vary so that a lost or doubled op would show as a residue.
[[noreturn]] void ChurnUntilKilled(const std::string& dir, const std::string& plan, uint32_t seed, bool crossed) {
  if (!plan.empty()) ::setenv(kCrashEnv, plan.c_str(), 1);
  Result<Ledger*> attached = Ledger::Attach(dir.c_str());
  if (!attached.ok()) ::_exit(3);
  Ledger* ledger = *attached;
  std::minstd_rand random(seed);
  struct Held {
    int device;
    uint64_t bytes;
  };
  std::vector<Held> held;
  for (;;) {
    if (held.size() < 6 && random() % 2 == 0) {
      const int device = static_cast<int>(random() % kDevices);
      const uint64_t bytes = (random() % 300 + 1) * kMiB + random() % 4096;
      const bool admitted = crossed ? ledger->TEST_ReserveOnLane(device, static_cast<int>(random() % kLanes), bytes)
                                    : ledger->Reserve(device, bytes);
      if (admitted) held.push_back(Held{device, bytes});
    } else if (!held.empty()) {
      const Held last = held.back();
      if (crossed) {
        ledger->TEST_ReleaseOnLane(last.device, ReleaseLane(ledger, last.device, last.bytes, random), last.bytes);
      } else {
        ledger->Release(last.device, last.bytes);
      }
      held.pop_back();
    }
  }
}

struct Child {
  pid_t pid = 0;
  CrashStep planned = CrashStep::kNone;
  Clock::time_point kill_at;
};

// Reaps, timing it. Returns the number reaped.
int TimedReap(SliceAdmin& admin, Clock::duration* worst) {
  const Clock::time_point start = Clock::now();
  const int reaped = admin.ReapDeadProcesses();
  *worst = std::max(*worst, Clock::now() - start);
  return reaped;
}

// With every child dead and reaped, the books must balance to zero: the device totals, every
// slot's charge (FREE slots included), and no slot left claimed or being reaped.
void ExpectNothingCharged(SliceAdmin& admin, Clock::duration* worst, int started) {
  TimedReap(admin, worst);
  EXPECT_EQ(TimedReap(admin, worst), 0) << "after " << started << " children";
  const UsageSnapshot usage = admin.Usage();
  for (int device = 0; device < kDevices; ++device) {
    EXPECT_EQ(usage.used[device], 0u) << "device " << device << " after " << started << " children";
    EXPECT_EQ(admin.TEST_TotalSlotCharges(device), 0u)
        << "device " << device << " after " << started << " children";
  }
  EXPECT_TRUE(usage.processes.empty()) << "after " << started << " children";
}

class LedgerCrash : public ::testing::TestWithParam<const char*> {};

TEST_P(LedgerCrash, ADeathAtAnyStepLeavesNothingBehind) {
  const bool crossed = std::string(GetParam()) == "crossed";
  testing::ScratchDir scratch;
  Result<SliceAdmin> admin = SliceAdmin::Create(scratch.slice(), testing::TwoDeviceSpec(kCrashCap, kCrashCap));
  ASSERT_TRUE(admin.ok()) << admin.status().message();
  const int total = ChildCount();
  const uint32_t seed = static_cast<uint32_t>(std::random_device{}());
  std::printf("[ seed     ] %u\n", seed);
  std::mt19937 random(seed);

  int self_crashes[kCrashStepCount] = {};
  Clock::duration worst_reap{};
  int started = 0;
  int drained_at = 0;
  std::vector<Child> running;
  while (started < total || !running.empty()) {
    // Every kDrainEvery children, start no more until the running ones are dead, then check
    // the books mid-run.
    if (started % kDrainEvery == 0 && started != drained_at && running.empty()) {
      ExpectNothingCharged(*admin, &worst_reap, started);
      drained_at = started;
    }
    const bool draining = started % kDrainEvery == 0 && started != drained_at;
    while (!draining && started < total && static_cast<int>(running.size()) < kConcurrentChildren) {
      Child child;
      // Two children in three crash themselves at a step; the rest are shot at random.
      std::string plan;
      if (random() % 3 != 0) {
        child.planned = static_cast<CrashStep>(1 + random() % (kCrashStepCount - 1));
        const int count = child.planned >= CrashStep::kAfterClaim ? 1 : 1 + static_cast<int>(random() % 20);
        plan = std::string(kCrashStepNames[static_cast<int>(child.planned)]) + ":" + std::to_string(count);
      }
      const uint32_t child_seed = static_cast<uint32_t>(random());
      child.pid = ::fork();
      if (child.pid == 0) ChurnUntilKilled(scratch.slice(), plan, child_seed, crossed);
      ASSERT_GT(child.pid, 0);
      // Planned crashes get time to happen; a plan that never fires (no dead slot to reap)
      // ends like an unplanned child.
      child.kill_at = Clock::now() + std::chrono::microseconds(
                                         random() % (child.planned != CrashStep::kNone ? 20000 : 3000));
      running.push_back(child);
      ++started;
    }
    for (auto it = running.begin(); it != running.end();) {
      int status = 0;
      pid_t done = ::waitpid(it->pid, &status, WNOHANG);
      if (done == 0 && Clock::now() >= it->kill_at) {
        ::kill(it->pid, SIGKILL);
        done = ::waitpid(it->pid, &status, 0);
      } else if (done > 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
        ++self_crashes[static_cast<int>(it->planned)];  // died before we shot it
      }
      if (done == 0) {
        ++it;
        continue;
      }
      ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
          << "child exited with status " << status;
      it = running.erase(it);
    }
    // Mostly the children reap each other (on attach, so deaths mid-reap happen); sometimes we do.
    if (random() % 16 == 0) TimedReap(*admin, &worst_reap);
    // No admission past the cap. Checked for hinted children only: with crossed lanes the
    // total may exceed the cap while a reaper settles a dead slot, by the negative lanes it
    // credits first (docs/slice-format.md, "Settle order"), which refuses Reserves and admits
    // none. Admission under contention is LedgerContention's subject.
    const UsageSnapshot usage = admin->Usage();
    if (!crossed) {
      for (int device = 0; device < kDevices; ++device) ASSERT_LE(usage.used[device], kCrashCap);
    }
    ::usleep(200);
  }

  // Everyone is dead: reaping must recover every byte, including ops caught half-way and
  // slots abandoned mid-claim or mid-reap.
  ExpectNothingCharged(*admin, &worst_reap, started);
  EXPECT_LT(worst_reap, std::chrono::milliseconds(100));

  // A newcomer gets the whole cap at once: nothing leaked, no slot is stuck.
  const pid_t newcomer = testing::ForkChild([&] {
    Result<Ledger*> ledger = Ledger::Attach(scratch.slice().c_str());
    return ledger.ok() && (*ledger)->Reserve(0, kCrashCap) && (*ledger)->Reserve(1, kCrashCap) ? 0 : 1;
  });
  EXPECT_EQ(testing::WaitChild(newcomer), 0);

  std::printf("[ stats    ] %d children, worst reap %.2f ms, self-crashes:", total,
              std::chrono::duration<double, std::milli>(worst_reap).count());
  for (int step = 1; step < kCrashStepCount; ++step)
    std::printf(" %s=%d", kCrashStepNames[step], self_crashes[step]);
  std::printf("\n");
  if (total >= 1000) {
    // Every step was exercised (the reap steps need a child to find a dead slot on attach).
    for (int step = 1; step < kCrashStepCount; ++step) {
      EXPECT_GT(self_crashes[step], 0) << "no child crashed at " << kCrashStepNames[step];
    }
  }
}

std::string ChurnName(const ::testing::TestParamInfo<const char*>& churn) { return churn.param; }

INSTANTIATE_TEST_SUITE_P(Lanes, LedgerCrash, ::testing::Values("hinted", "crossed"), ChurnName);

}  // namespace
}  // namespace fgpu::slice
