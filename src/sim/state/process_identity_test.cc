#include "sim/state/process_identity.h"

#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "sim/state/test_support.h"

#if defined(__SANITIZE_THREAD__)
#define FGPU_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FGPU_UNDER_TSAN 1
#endif
#endif

namespace fgpu::sim {
namespace {

using testing::Channel;
using testing::ForkChild;
using testing::WaitChild;

TEST(ProcessIdentity, ReadsThisProcess) {
  Result<ProcessStat> stat = ReadProcessStat(::getpid());
  ASSERT_TRUE(stat.ok()) << stat.status().message();
  EXPECT_EQ(stat->state, 'R');
  EXPECT_GE(stat->num_threads, 1u);
  EXPECT_GT(stat->start_time, 0u);
  EXPECT_FALSE(IsProcessGone(::getpid(), stat->start_time));
  EXPECT_FALSE(IsProcessGone(::getpid(), 0));  // unknown start time: pid alone decides
  EXPECT_TRUE(IsProcessGone(::getpid(), stat->start_time + 1));
}

TEST(ProcessIdentity, MissingAndInvalidPids) {
  EXPECT_EQ(ReadProcessStat(0).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ReadProcessStat(-3).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ReadProcessStat(0x7ffffff0).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(IsProcessGone(0, 0));
  EXPECT_TRUE(IsProcessGone(-1, 0));
  EXPECT_TRUE(IsProcessGone(0x7ffffff0, 0));
}

TEST(ProcessIdentity, CommWithParenthesesAndSpacesParses) {
  Channel ready, release;
  const pid_t child = ForkChild([&]() {
    ready.CloseRead();
    release.CloseWrite();
    ::prctl(PR_SET_NAME, "a) b (c) 1 2", 0, 0, 0);
    ready.Send(1);
    char byte = 0;
    (void)release.Receive(&byte);
    return 0;
  });
  ready.CloseWrite();
  release.CloseRead();
  int token = 0;
  ASSERT_TRUE(ready.Receive(&token));
  Result<ProcessStat> stat = ReadProcessStat(child);
  ASSERT_TRUE(stat.ok()) << stat.status().message();
  EXPECT_TRUE(stat->state == 'S' || stat->state == 'R') << stat->state;  // blocked in read, or about to be
  EXPECT_GE(stat->num_threads, 1u);  // 1, or 2 with ThreadSanitizer's background thread
  Result<ProcessStat> self = ReadProcessStat(::getpid());
  ASSERT_TRUE(self.ok());
  EXPECT_GE(stat->start_time, self->start_time);
  release.CloseWrite();
  EXPECT_EQ(WaitChild(child), 0);
}

void* SleepBriefly(void*) {
  ::usleep(300'000);
  return nullptr;
}

TEST(ProcessIdentity, LeaderThatExitedWhileOthersRunIsAlive) {
#if defined(FGPU_UNDER_TSAN)
  GTEST_SKIP() << "ThreadSanitizer cannot start threads in the child of a forked multi-threaded process";
#endif
  const pid_t child = ForkChild([]() {
    pthread_t thread;
    pthread_create(&thread, nullptr, SleepBriefly, nullptr);
    // Exit the leader thread alone (raw syscall: pthread_exit would unwind into gtest);
    // it becomes a zombie while the process lives on until the other thread returns.
    ::syscall(SYS_exit, 0);
    return 1;
  });
  for (int i = 0; i < 100; ++i) {
    Result<ProcessStat> stat = ReadProcessStat(child);
    if (stat.ok() && stat->state == 'Z') break;
    ::usleep(2'000);
  }
  Result<ProcessStat> stat = ReadProcessStat(child);
  ASSERT_TRUE(stat.ok());
  ASSERT_EQ(stat->state, 'Z');
  EXPECT_FALSE(IsProcessGone(child, stat->start_time));
  EXPECT_EQ(WaitChild(child), 0);
  EXPECT_TRUE(IsProcessGone(child, stat->start_time));
}

}  // namespace
}  // namespace fgpu::sim
