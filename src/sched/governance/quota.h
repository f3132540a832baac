// Hierarchical quotas in GPU memory and GPU compute: organisation → team → user or namespace,
// with Kueue's cohort semantics (docs/governance.md "Quotas").
//
// Every node of the tree has a nominal quota (what it is guaranteed), a borrowing limit (how
// far above its nominal it may go by using what others leave idle) and a lending limit (how
// much of its idle nominal others may use; the rest stays reserved for it even when idle).
// Tenants are the leaves; a parent's nominal is the sum of its children's unless set.
//
// Admission of `demand` for a tenant, per resource. Each quota Q *holds* what it uses or keeps
// back, whichever is more:
//   held(leaf) = max(usage, nominal − lending_limit)
//   held(Q)    = max(Σ held(children), nominal − lending_limit)
// and the demand is admitted when, after it, the tenant's usage ≤ its nominal + borrowing
// limit and, at every ancestor P (the root included), Σ held(P's children) ≤ nominal(P) +
// borrowing_limit(P) (the root's reach is its nominal: the sum of the top level's unless set).
// So a tenant always gets its nominal while the tree's nominals fit the cluster, may borrow
// what siblings and cousins lend within its limits, and never takes what others keep back.
//
// Not thread-safe; one owner (the Governor) changes it.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "sched/request.h"

namespace fgpu::sched {

// The two resources quotas count. Host CPU and RAM are the cluster's business, not quotas'.
struct Amount {
  int64_t gpu_memory_bytes = 0;
  int64_t gpu_milli = 0;

  Amount& operator+=(const Amount& other);
  Amount& operator-=(const Amount& other);
  friend Amount operator+(Amount a, const Amount& b) { return a += b; }
  friend Amount operator-(Amount a, const Amount& b) { return a -= b; }
  friend Amount operator*(Amount a, int64_t times) {
    a.gpu_memory_bytes *= times;
    a.gpu_milli *= times;
    return a;
  }
  bool operator==(const Amount&) const = default;
  // Every resource of this is ≤ the other's.
  bool Within(const Amount& other) const {
    return gpu_memory_bytes <= other.gpu_memory_bytes && gpu_milli <= other.gpu_milli;
  }
  bool IsZero() const { return gpu_memory_bytes == 0 && gpu_milli == 0; }
};

// No limit. Large enough for any cluster, small enough that sums never overflow.
inline constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max() / 8;
inline constexpr Amount kUnlimitedAmount{kUnlimited, kUnlimited};

// What a request charges: its GPUs' memory and compute, all of its GPUs.
Amount AmountOf(const Request& request);

struct QuotaSpec {
  std::string name{};                // unique; a tenant's leaf is named after the tenant
  std::string parent{};              // "" for the top level
  std::optional<Amount> nominal{};   // absent: the sum of the children's (a leaf's: zero)
  Amount borrowing_limit = kUnlimitedAmount;
  Amount lending_limit = kUnlimitedAmount;
};

struct QuotaOptions {
  // The root's capacity; absent: the sum of the top level's nominals (nothing beyond the
  // quotas can be borrowed).
  std::optional<Amount> capacity{};
  // The leaf charged for a tenant no leaf is named after; "" refuses such tenants.
  std::string default_leaf{};
};

class QuotaTree {
 public:
  static constexpr int kRoot = 0;

  // InvalidArgument naming the quota: empty or repeated names, unknown parents, cycles,
  // negative amounts, a default leaf that is not a leaf.
  static Result<QuotaTree> Create(std::vector<QuotaSpec> specs, QuotaOptions options = {});
  // No quotas at all: every admission passes; usage is still counted (per tenant).
  QuotaTree() = default;

  bool enabled() const { return nodes_.size() > 1; }
  // The leaf charged for `tenant`: its own, the default leaf, or -1 (refused).
  int LeafOf(const std::string& tenant) const;

  // Ok, or ResourceExhausted saying which quota and resource would be exceeded.
  Status Admit(const std::string& tenant, const Amount& demand) const;
  // The same answer without the message (the hot path: no string is built).
  bool Admits(const std::string& tenant, const Amount& demand) const;
  // Admits for a leaf found with LeafOf (-1: refused while quotas are on).
  bool AdmitsLeaf(int leaf, const Amount& demand) const;
  // Whether the tenant's usage plus `demand` stays within its own nominal at its leaf and every
  // ancestor: what it asks is its own, so it may reclaim what others borrowed.
  bool WithinNominal(const std::string& tenant, const Amount& demand) const;
  // Charged on admission, credited at the end. Unknown tenants are ignored (they were refused).
  void Charge(const std::string& tenant, const Amount& amount);
  void Credit(const std::string& tenant, const Amount& amount);

  // How far the tenant's leaf is above its nominal now (0 per resource when within).
  Amount Borrowed(const std::string& tenant) const;
  Amount Usage(int node) const { return nodes_[static_cast<size_t>(node)].usage; }
  Amount Nominal(int node) const { return nodes_[static_cast<size_t>(node)].nominal; }
  Amount BorrowingLimit(int node) const { return nodes_[static_cast<size_t>(node)].borrowing_limit; }
  Amount LendingLimit(int node) const { return nodes_[static_cast<size_t>(node)].lending_limit; }
  int Parent(int node) const { return nodes_[static_cast<size_t>(node)].parent; }
  const std::string& Name(int node) const { return nodes_[static_cast<size_t>(node)].name; }
  bool IsLeaf(int node) const { return nodes_[static_cast<size_t>(node)].children.empty() && node != kRoot; }
  int size() const { return static_cast<int>(nodes_.size()); }

 private:
  struct Node {
    std::string name;
    int parent = -1;
    std::vector<int> children;
    Amount nominal;
    Amount borrowing_limit = kUnlimitedAmount;
    Amount lending_limit = kUnlimitedAmount;
    Amount usage;
    Amount held;         // max(usage or the children's held, reserved)
    Amount children_held;  // Σ held(children)
  };

  // What a node keeps for itself even idle: nominal − lending limit, at least 0.
  Amount Reserved(int node) const;
  // nominal + borrowing limit; the root's nominal.
  Amount Reach(int node) const;
  // Admission for a leaf; `why` (when not null) gets the refusal.
  bool Check(int leaf, const std::string& tenant, const Amount& demand, std::string* why) const;
  void Add(int leaf, const Amount& amount, int sign);

  std::vector<Node> nodes_{Node{"(root)", -1, {}, {}, kUnlimitedAmount, kUnlimitedAmount, {}, {}, {}}};
  std::unordered_map<std::string, int> index_;
  int default_leaf_ = -1;
};

}  // namespace fgpu::sched
