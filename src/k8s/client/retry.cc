#include "k8s/client/retry.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace fgpu::k8s {

std::chrono::milliseconds Backoff(const RetryPolicy& policy, int attempt) {
  double base = static_cast<double>(policy.initial_backoff.count()) *
                std::pow(policy.multiplier, std::max(0, attempt - 1));
  base = std::min(base, static_cast<double>(policy.max_backoff.count()));
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_real_distribution<double> scale(1.0 - policy.jitter, 1.0 + policy.jitter);
  double wait = std::min(base * scale(rng), static_cast<double>(policy.max_backoff.count()));
  return std::chrono::milliseconds(static_cast<long long>(std::max(0.0, wait)));
}

std::optional<std::chrono::milliseconds> RetryDelay(const RetryPolicy& policy, int attempt, AttemptOutcome outcome,
                                                    bool idempotent,
                                                    std::optional<std::chrono::milliseconds> retry_after) {
  if (outcome == AttemptOutcome::kDone || attempt >= policy.max_attempts) return std::nullopt;
  // A POST that may have reached the server may have created the object: repeating it could
  // create a second one (generateName) or turn success into AlreadyExists.
  if (outcome == AttemptOutcome::kMaybeProcessed && !idempotent) return std::nullopt;
  if (retry_after) return std::min(*retry_after, policy.max_retry_after);
  return Backoff(policy, attempt);
}

}  // namespace fgpu::k8s
