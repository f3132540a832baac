#include "simulate/plan.h"

#include <algorithm>
#include <charconv>

#include "sched/policies/registry.h"

namespace fgpu::simulate {

namespace {

constexpr size_t kMaxSeeds = 10'000;

std::vector<std::string_view> SplitCommas(std::string_view list) {
  std::vector<std::string_view> items;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string_view::npos) end = list.size();
    std::string_view item = list.substr(start, end - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    items.push_back(item);
    start = end + 1;
  }
  return items;
}

bool ParseUnsigned(std::string_view text, uint64_t& value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && error == std::errc() && end == text.data() + text.size();
}

}  // namespace

Result<std::vector<std::string>> ParsePolicies(std::string_view list) {
  std::vector<std::string> policies;
  if (list == "all") {
    for (const sched::PolicyInfo& policy : sched::PolicyList()) policies.emplace_back(policy.name);
    return policies;
  }
  for (std::string_view item : SplitCommas(list)) {
    if (item.empty()) return Status::InvalidArgument("empty policy name in '" + std::string(list) + "'");
    Result<std::string_view> name = sched::CanonicalPolicyName(item);
    if (!name.ok()) return name.status();
    if (std::find(policies.begin(), policies.end(), *name) == policies.end()) policies.emplace_back(*name);
  }
  return policies;
}

Result<sched::TieBreak> ParseTieBreak(std::string_view name) {
  if (name == "first") return sched::TieBreak::kFirstInOrder;
  if (name == "random") return sched::TieBreak::kRandom;
  return Status::InvalidArgument("ties must be 'first' or 'random', not '" + std::string(name) + "'");
}

Result<std::vector<uint64_t>> ParseSeeds(std::string_view list) {
  std::vector<uint64_t> seeds;
  for (std::string_view item : SplitCommas(list)) {
    const size_t dash = item.find('-');
    uint64_t first = 0;
    uint64_t last = 0;
    const bool parsed =
        dash == std::string_view::npos
            ? ParseUnsigned(item, first) && ParseUnsigned(item, last)
            : ParseUnsigned(item.substr(0, dash), first) && ParseUnsigned(item.substr(dash + 1), last);
    if (!parsed || last < first) {
      return Status::InvalidArgument("bad seed '" + std::string(item) +
                                     "': use N, or an increasing range N-M");
    }
    if (last - first >= kMaxSeeds || seeds.size() + (last - first) >= kMaxSeeds) {
      return Status::InvalidArgument("more than " + std::to_string(kMaxSeeds) + " seeds");
    }
    for (uint64_t seed = first; seed <= last; ++seed) seeds.push_back(seed);
  }
  return seeds;
}

}  // namespace fgpu::simulate
