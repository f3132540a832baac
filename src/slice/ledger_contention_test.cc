// Contention: 8 processes × 4 threads race Reserve(300 MiB) / Release under a 1 GiB cap
// while this process samples the device total. No interleaving may admit a fourth 300 MiB
// reservation (3 × 300 MiB ≤ 1 GiB < 4 × 300 MiB), and at the end nothing is left charged.
// Then 2 processes × 16 threads: more threads than a slot has lanes, so threads of one process
// also find every lane busy and wait their turn, and memory often comes back on another lane.
//
// This process stays single-threaded (it forks every worker first, then observes from its
// main thread), so the test also runs under TSan, which does not allow threads in the child
// of a multi-threaded fork.
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "core/units.h"
#include "slice/test_support.h"

namespace fgpu::slice {
namespace {

constexpr uint64_t kReservation = 300 * kMiB;
constexpr uint64_t kCap = kGiB;
constexpr int kMaxHeld = static_cast<int>(kCap / kReservation);  // 3

struct Shape {
  int processes;
  int threads_per_process;
};

// Rounds per thread: 10^4 (10^4 × 32 threads in all). FGPU_SLICE_CONTENTION_ROUNDS overrides.
int RoundsPerThread() {
  const char* text = std::getenv("FGPU_SLICE_CONTENTION_ROUNDS");
  const int rounds = text != nullptr ? std::atoi(text) : 0;
  return rounds > 0 ? rounds : 10'000;
}

struct Shared {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::atomic<int> held{0};  // reservations the workers hold right now (a lower bound of the truth)
  std::atomic<int> max_held{0};
  std::atomic<int64_t> admitted{0};
  std::atomic<int64_t> refused{0};
};

int Worker(Ledger* ledger, Shared& shared, int threads_per_process, int rounds) {
  shared.ready.fetch_add(1);
  while (!shared.go.load()) std::this_thread::yield();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_per_process; ++t) {
    threads.emplace_back([&] {
      int64_t admitted = 0;
      int64_t refused = 0;
      for (int round = 0; round < rounds; ++round) {
        if (!ledger->Reserve(0, kReservation)) {
          ledger->CountOomRefusal();  // what the hook does: the counter takes the same contention
          ++refused;
          continue;
        }
        ++admitted;
        // Counted after admission and uncounted before release: never above the truth.
        const int now = shared.held.fetch_add(1) + 1;
        int seen = shared.max_held.load();
        while (now > seen && !shared.max_held.compare_exchange_weak(seen, now)) {
        }
        if (now > kMaxHeld) failures.fetch_add(1);
        // Hold it across a reschedule now and then, so that holders overlap even on few cores.
        if (round % 4 == 0) std::this_thread::yield();
        shared.held.fetch_sub(1);
        ledger->Release(0, kReservation);
      }
      shared.admitted.fetch_add(admitted);
      shared.refused.fetch_add(refused);
    });
  }
  for (std::thread& thread : threads) thread.join();
  if (failures.load() != 0) return 10;
  return ledger->ChargedByThisProcess(0) == 0 ? 0 : 11;
}

class LedgerContention : public ::testing::TestWithParam<Shape> {};

TEST_P(LedgerContention, NoInterleavingAdmitsPastTheCapAndNothingLeaks) {
  const int processes = GetParam().processes;
  const int threads_per_process = GetParam().threads_per_process;
  testing::ScratchDir scratch;
  Result<SliceAdmin> admin = SliceAdmin::Create(scratch.slice(), testing::OneDeviceSpec(kCap));
  ASSERT_TRUE(admin.ok()) << admin.status().message();
  Result<Ledger*> observer = Ledger::Attach(scratch.slice().c_str());
  ASSERT_TRUE(observer.ok()) << observer.status().message();
  testing::SharedObject<Shared> shared;
  const int rounds = RoundsPerThread();

  std::vector<pid_t> workers;
  for (int p = 0; p < processes; ++p) {
    // The child inherits this process's Ledger; the fork handler gave it a slot of its own.
    workers.push_back(testing::ForkChild([&] { return Worker(*observer, *shared, threads_per_process, rounds); }));
  }
  while (shared->ready.load() < processes) std::this_thread::yield();
  shared->go.store(true);

  uint64_t max_used = 0;
  int64_t samples = 0;
  bool not_a_multiple = false;
  int running = processes;
  std::vector<int> exit_codes;
  while (running > 0) {
    for (int i = 0; i < 1000; ++i, ++samples) {
      const uint64_t used = (*observer)->Used(0);
      if (used > max_used) max_used = used;
      if (used % kReservation != 0) not_a_multiple = true;
    }
    int status = 0;
    const pid_t done = ::waitpid(-1, &status, WNOHANG);
    if (done > 0) {
      --running;
      exit_codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
  }

  for (int code : exit_codes) EXPECT_EQ(code, 0);
  EXPECT_LE(max_used, kCap) << "the device total exceeded the cap";
  EXPECT_LE(shared->max_held.load(), kMaxHeld);
  EXPECT_FALSE(not_a_multiple) << "a sample saw a partial charge";
  EXPECT_EQ((*observer)->Used(0), 0u);
  EXPECT_EQ(admin->TEST_TotalSlotCharges(0), 0u);
  EXPECT_EQ(shared->admitted.load() + shared->refused.load(),
            int64_t{processes} * threads_per_process * rounds);
  EXPECT_GT(shared->admitted.load(), 0);
  const Result<LedgerCounters> counters = admin->Counters();
  ASSERT_TRUE(counters.ok());
  EXPECT_EQ(counters->oom_refusals, static_cast<uint64_t>(shared->refused.load())) << "no refusal count lost";
  // The workers are gone (some were already reaped by their peers' failed reservations):
  // reaping frees the remaining slots, which held no charge.
  admin->ReapDeadProcesses();
  EXPECT_EQ(admin->Usage().processes.size(), 1u);  // this process
  std::printf("[ stats    ] %lld admitted, %lld refused, max held %d, max used %llu MiB, %lld samples\n",
              static_cast<long long>(shared->admitted.load()), static_cast<long long>(shared->refused.load()),
              shared->max_held.load(), static_cast<unsigned long long>(max_used / kMiB),
              static_cast<long long>(samples));
}

std::string ShapeName(const ::testing::TestParamInfo<Shape>& shape) {
  return std::to_string(shape.param.processes) + "x" + std::to_string(shape.param.threads_per_process);
}

INSTANTIATE_TEST_SUITE_P(Shapes, LedgerContention, ::testing::Values(Shape{8, 4}, Shape{2, 16}), ShapeName);

}  // namespace
}  // namespace fgpu::slice
