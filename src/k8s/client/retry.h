// When and how long to wait before trying a Kubernetes API request again.
#pragma once

#include <chrono>
#include <optional>

namespace fgpu::k8s {

struct RetryPolicy {
  int max_attempts = 5;  // 1 = never retry
  std::chrono::milliseconds initial_backoff{200};
  std::chrono::milliseconds max_backoff{10'000};
  double multiplier = 2.0;
  double jitter = 0.2;  // each wait is scaled by a uniform factor in [1 - jitter, 1 + jitter]
  // A server's Retry-After is honoured up to this; a longer one is capped (a stuck 429 loop
  // must not park a caller for an hour).
  std::chrono::milliseconds max_retry_after{30'000};
};

// How one attempt ended, as far as retrying is concerned.
enum class AttemptOutcome {
  kDone,              // an answer to keep (success, or an error retrying cannot fix)
  kNotSent,           // failed before the request reached the server (connect, DNS, TLS setup)
  kMaybeProcessed,    // failed after sending: timeout, reset, no reply; or 500/502/504
  kRejectedUnprocessed,  // 429 or 503: the server says it did not act on it
};

// The wait before attempt `attempt` + 1 (attempt counts from 1), or nullopt to stop.
// `idempotent` false (POST, JSON patch) allows retrying only kNotSent and kRejectedUnprocessed.
// `retry_after` is the server's Retry-After, when it sent one.
std::optional<std::chrono::milliseconds> RetryDelay(const RetryPolicy& policy, int attempt, AttemptOutcome outcome,
                                                    bool idempotent,
                                                    std::optional<std::chrono::milliseconds> retry_after);

// Exponential backoff with jitter for attempt n (from 1), capped at max_backoff.
std::chrono::milliseconds Backoff(const RetryPolicy& policy, int attempt);

}  // namespace fgpu::k8s
