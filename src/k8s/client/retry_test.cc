#include "k8s/client/retry.h"

#include <gtest/gtest.h>

namespace fgpu::k8s {
namespace {

using std::chrono::milliseconds;

TEST(Retry, BackoffGrowsWithJitterAndIsCapped) {
  RetryPolicy p{.max_attempts = 10, .initial_backoff = milliseconds(100), .max_backoff = milliseconds(1000),
                .multiplier = 2.0, .jitter = 0.2};
  for (int i = 0; i < 50; ++i) {
    auto first = Backoff(p, 1).count();
    EXPECT_GE(first, 80);
    EXPECT_LE(first, 120);
    auto third = Backoff(p, 3).count();
    EXPECT_GE(third, 320);
    EXPECT_LE(third, 480);
    EXPECT_LE(Backoff(p, 30).count(), 1000);
  }
}

TEST(Retry, PostIsRetriedOnlyWhenTheServerCannotHaveActed) {
  RetryPolicy p;
  EXPECT_TRUE(RetryDelay(p, 1, AttemptOutcome::kNotSent, false, std::nullopt));
  EXPECT_TRUE(RetryDelay(p, 1, AttemptOutcome::kRejectedUnprocessed, false, std::nullopt));
  EXPECT_FALSE(RetryDelay(p, 1, AttemptOutcome::kMaybeProcessed, false, std::nullopt));
  EXPECT_TRUE(RetryDelay(p, 1, AttemptOutcome::kMaybeProcessed, true, std::nullopt));
  EXPECT_FALSE(RetryDelay(p, 1, AttemptOutcome::kDone, true, std::nullopt));
}

TEST(Retry, AttemptsAreBoundedAndRetryAfterIsHonouredUpToItsCap) {
  RetryPolicy p{.max_attempts = 3, .max_retry_after = milliseconds(5000)};
  EXPECT_TRUE(RetryDelay(p, 2, AttemptOutcome::kNotSent, true, std::nullopt));
  EXPECT_FALSE(RetryDelay(p, 3, AttemptOutcome::kNotSent, true, std::nullopt));
  EXPECT_EQ(*RetryDelay(p, 1, AttemptOutcome::kRejectedUnprocessed, true, milliseconds(2000)), milliseconds(2000));
  EXPECT_EQ(*RetryDelay(p, 1, AttemptOutcome::kRejectedUnprocessed, true, milliseconds(60000)), milliseconds(5000));
}

}  // namespace
}  // namespace fgpu::k8s
