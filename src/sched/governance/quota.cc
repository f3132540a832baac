#include "sched/governance/quota.h"

#include <algorithm>
#include <utility>

#include "core/units.h"

namespace fgpu::sched {
namespace {

// The two resources, each as a member of Amount, with how to say an amount of it.
struct Resource {
  int64_t Amount::*field;
  const char* name;
};
constexpr Resource kResources[] = {{&Amount::gpu_memory_bytes, "GPU memory"}, {&Amount::gpu_milli, "GPU compute"}};

std::string Say(const Resource& resource, int64_t value) {
  if (value >= kUnlimited) return "unlimited";
  if (resource.field == &Amount::gpu_memory_bytes) return FormatByteSize(static_cast<uint64_t>(std::max<int64_t>(0, value)));
  return std::to_string(value) + " milli-GPU";
}

Amount Saturating(const Amount& a, const Amount& b) {
  return {std::min(kUnlimited, a.gpu_memory_bytes + b.gpu_memory_bytes), std::min(kUnlimited, a.gpu_milli + b.gpu_milli)};
}

bool Negative(const Amount& amount) { return amount.gpu_memory_bytes < 0 || amount.gpu_milli < 0; }

}  // namespace

Amount& Amount::operator+=(const Amount& other) {
  gpu_memory_bytes += other.gpu_memory_bytes;
  gpu_milli += other.gpu_milli;
  return *this;
}

Amount& Amount::operator-=(const Amount& other) {
  gpu_memory_bytes -= other.gpu_memory_bytes;
  gpu_milli -= other.gpu_milli;
  return *this;
}

Amount AmountOf(const Request& request) {
  return {request.gpu_memory_bytes * request.gpu_count, int64_t{request.gpu_milli} * request.gpu_count};
}

Result<QuotaTree> QuotaTree::Create(std::vector<QuotaSpec> specs, QuotaOptions options) {
  QuotaTree tree;
  for (const QuotaSpec& spec : specs) {
    if (spec.name.empty()) return Status::InvalidArgument("a quota has no name");
    if (!tree.index_.emplace(spec.name, static_cast<int>(tree.nodes_.size())).second) {
      return Status::InvalidArgument("quota '" + spec.name + "' is defined twice");
    }
    if ((spec.nominal && Negative(*spec.nominal)) || Negative(spec.borrowing_limit) || Negative(spec.lending_limit)) {
      return Status::InvalidArgument("quota '" + spec.name + "' has a negative amount");
    }
    Node node;
    node.name = spec.name;
    node.nominal = spec.nominal.value_or(Amount{});
    node.borrowing_limit = spec.borrowing_limit;
    node.lending_limit = spec.lending_limit;
    tree.nodes_.push_back(std::move(node));
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    const int id = static_cast<int>(i) + 1;
    int parent = kRoot;
    if (!specs[i].parent.empty()) {
      const auto found = tree.index_.find(specs[i].parent);
      if (found == tree.index_.end()) {
        return Status::InvalidArgument("quota '" + specs[i].name + "' names an unknown parent '" + specs[i].parent + "'");
      }
      parent = found->second;
    }
    tree.nodes_[static_cast<size_t>(id)].parent = parent;
    tree.nodes_[static_cast<size_t>(parent)].children.push_back(id);
  }
  // Every node must reach the root: a cycle never does.
  for (int id = 1; id < tree.size(); ++id) {
    int steps = 0;
    for (int at = id; at != kRoot; at = tree.Parent(at)) {
      if (++steps > tree.size()) return Status::InvalidArgument("quota '" + tree.Name(id) + "' is its own ancestor");
    }
  }
  // Parents without a nominal of their own get their children's sum, deepest first.
  std::vector<int> order;
  for (int id = 1; id < tree.size(); ++id) order.push_back(id);
  const auto depth = [&](int id) {
    int d = 0;
    for (int at = id; at != kRoot; at = tree.Parent(at)) ++d;
    return d;
  };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return depth(a) > depth(b); });
  for (int id : order) {
    Node& node = tree.nodes_[static_cast<size_t>(id)];
    if (specs[static_cast<size_t>(id) - 1].nominal || node.children.empty()) continue;
    for (int child : node.children) node.nominal = Saturating(node.nominal, tree.Nominal(child));
  }
  Node& root = tree.nodes_[kRoot];
  if (options.capacity) {
    root.nominal = *options.capacity;
  } else {
    for (int child : root.children) root.nominal = Saturating(root.nominal, tree.Nominal(child));
  }
  root.borrowing_limit = Amount{};
  // With nothing used, each quota holds what it keeps back (or its children do), deepest first.
  for (int id : order) {
    Node& node = tree.nodes_[static_cast<size_t>(id)];
    const Amount own = node.children.empty() ? Amount{} : node.children_held;
    const Amount reserved = tree.Reserved(id);
    node.held = {std::max(own.gpu_memory_bytes, reserved.gpu_memory_bytes), std::max(own.gpu_milli, reserved.gpu_milli)};
    tree.nodes_[static_cast<size_t>(node.parent)].children_held += node.held;
  }
  if (!options.default_leaf.empty()) {
    tree.default_leaf_ = tree.LeafOf(options.default_leaf);
    if (tree.default_leaf_ < 0 || !tree.IsLeaf(tree.default_leaf_)) {
      return Status::InvalidArgument("the default quota '" + options.default_leaf + "' is not a leaf quota");
    }
  }
  return tree;
}

int QuotaTree::LeafOf(const std::string& tenant) const {
  const auto found = index_.find(tenant);
  if (found != index_.end() && IsLeaf(found->second)) return found->second;
  return default_leaf_;
}

Amount QuotaTree::Reserved(int node) const {
  const Node& n = nodes_[static_cast<size_t>(node)];
  return {std::max<int64_t>(0, n.nominal.gpu_memory_bytes - n.lending_limit.gpu_memory_bytes),
          std::max<int64_t>(0, n.nominal.gpu_milli - n.lending_limit.gpu_milli)};
}

Amount QuotaTree::Reach(int node) const {
  const Node& n = nodes_[static_cast<size_t>(node)];
  return node == kRoot ? n.nominal : Saturating(n.nominal, n.borrowing_limit);
}

Status QuotaTree::Admit(const std::string& tenant, const Amount& demand) const {
  if (!enabled()) return Status::Ok();
  const int leaf = LeafOf(tenant);
  if (leaf < 0) return Status::ResourceExhausted("tenant '" + tenant + "' has no quota");
  std::string why;
  return Check(leaf, tenant, demand, &why) ? Status::Ok() : Status::ResourceExhausted(std::move(why));
}

bool QuotaTree::Admits(const std::string& tenant, const Amount& demand) const { return AdmitsLeaf(LeafOf(tenant), demand); }

bool QuotaTree::AdmitsLeaf(int leaf, const Amount& demand) const {
  if (!enabled()) return true;
  static const std::string kUnnamed;
  return leaf >= 0 && Check(leaf, kUnnamed, demand, nullptr);
}

bool QuotaTree::Check(int leaf, const std::string& tenant, const Amount& demand, std::string* why) const {
  for (const Resource& resource : kResources) {
    const int64_t asked = demand.*resource.field;
    if (asked <= 0) continue;
    const Node& own = nodes_[static_cast<size_t>(leaf)];
    const int64_t most = Reach(leaf).*resource.field;
    if (own.usage.*resource.field + asked > most) {
      if (why != nullptr) {
        *why = "tenant '" + tenant + "': quota '" + own.name + "' would use " +
               Say(resource, own.usage.*resource.field + asked) + " of " + resource.name +
               ", above its nominal plus borrowing limit (" + Say(resource, most) + ")";
      }
      return false;
    }
    // Up the path: what each ancestor's children hold, with this child's hold after the demand.
    int64_t child_held_after = std::max(own.usage.*resource.field + asked, Reserved(leaf).*resource.field);
    for (int child = leaf; child != kRoot; child = Parent(child)) {
      const int parent = Parent(child);
      const Node& p = nodes_[static_cast<size_t>(parent)];
      const int64_t sum = p.children_held.*resource.field - nodes_[static_cast<size_t>(child)].held.*resource.field +
                          child_held_after;
      const int64_t reach = Reach(parent).*resource.field;
      if (sum > reach) {
        if (why != nullptr) {
          const std::string where = parent == kRoot ? std::string("the cluster's quotas") : "quota '" + p.name + "'";
          *why = "tenant '" + tenant + "': " + where + " cannot lend " + Say(resource, asked) + " more " +
                 resource.name + " (" + Say(resource, sum - asked) + " of " + Say(resource, reach) +
                 " used or kept back by its members)";
        }
        return false;
      }
      child_held_after = std::max(sum, Reserved(parent).*resource.field);
    }
  }
  return true;
}

bool QuotaTree::WithinNominal(const std::string& tenant, const Amount& demand) const {
  if (!enabled()) return true;
  const int leaf = LeafOf(tenant);
  if (leaf < 0) return false;
  for (int at = leaf; at != kRoot; at = Parent(at)) {
    if (!(Usage(at) + demand).Within(Nominal(at))) return false;
  }
  return true;
}

void QuotaTree::Add(int leaf, const Amount& amount, int sign) {
  for (int at = leaf; at >= 0; at = nodes_[static_cast<size_t>(at)].parent) {
    Node& node = nodes_[static_cast<size_t>(at)];
    if (sign > 0) {
      node.usage += amount;
    } else {
      node.usage -= amount;
    }
    const Amount before = node.held;
    const Amount own = node.children.empty() ? node.usage : node.children_held;
    const Amount reserved = Reserved(at);
    node.held = {std::max(own.gpu_memory_bytes, reserved.gpu_memory_bytes), std::max(own.gpu_milli, reserved.gpu_milli)};
    if (node.parent >= 0) nodes_[static_cast<size_t>(node.parent)].children_held += node.held - before;
  }
}

void QuotaTree::Charge(const std::string& tenant, const Amount& amount) {
  if (const int leaf = LeafOf(tenant); enabled() && leaf >= 0) Add(leaf, amount, +1);
}

void QuotaTree::Credit(const std::string& tenant, const Amount& amount) {
  if (const int leaf = LeafOf(tenant); enabled() && leaf >= 0) Add(leaf, amount, -1);
}

Amount QuotaTree::Borrowed(const std::string& tenant) const {
  const int leaf = LeafOf(tenant);
  if (!enabled() || leaf < 0) return {};
  const Amount over = Usage(leaf) - Nominal(leaf);
  return {std::max<int64_t>(0, over.gpu_memory_bytes), std::max<int64_t>(0, over.gpu_milli)};
}

}  // namespace fgpu::sched
