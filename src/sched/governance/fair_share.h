// Fair share with usage decay: Slurm's classic fair-share factor over decayed usage
// (PriorityDecayHalfLife), used to order waiting work within a tier (docs/governance.md
// "Fair share").
//
// Each tenant's usage is the integral of its dominant share of the cluster (the larger of its
// GPU memory and GPU compute fractions) over time, decayed with a half-life: usage from one
// half-life ago counts half. Its factor is 2^(−u/s), where u is its fraction of all tenants'
// decayed usage and s its fraction of the shares (quota nominals, or equal shares). A tenant
// that used less than its share has a factor above 1/2 and goes first.
//
// Not thread-safe; one owner (the Governor).
#pragma once

#include <string>
#include <unordered_map>

#include "sched/governance/quota.h"

namespace fgpu::sched {

class FairShare {
 public:
  // `capacity` normalises usage to a dominant share; `half_life_seconds` > 0.
  FairShare(Amount capacity, double half_life_seconds);

  // Moves the clock to `now` (seconds), integrating every tenant's current allocation since the
  // last call. Time never goes back: an earlier `now` is ignored.
  void Advance(double now);
  // A tenant's allocation changed by `delta` (at the current clock: call Advance first).
  void Allocate(const std::string& tenant, const Amount& delta);
  // A tenant's share (any positive weight); tenants never set have weight 1.
  void SetShare(const std::string& tenant, double weight);

  // The factor in (0, 1]; 1 for a tenant that used nothing.
  double Factor(const std::string& tenant) const;
  // Decayed usage, in dominant-share-seconds.
  double Usage(const std::string& tenant) const;

 private:
  struct Account {
    Amount allocated;
    double usage = 0;
    double weight = 1;
  };

  double DominantShare(const Amount& amount) const;

  Amount capacity_;
  double half_life_;
  double now_ = 0;
  bool started_ = false;
  double total_usage_ = 0;
  double total_weight_ = 0;
  std::unordered_map<std::string, Account> accounts_;
};

}  // namespace fgpu::sched
