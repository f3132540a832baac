#include "agent/access.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>

#include "agent/slice_service.h"
#include "core/units.h"
#include "slice/compute_spec.h"

namespace fgpu::agent {
namespace {

// Equal strings take the same time to compare whatever their content: a client timing the
// agent's refusals learns nothing of the token.
bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char difference = 0;
  for (std::size_t i = 0; i < a.size(); ++i) difference |= static_cast<unsigned char>(a[i] ^ b[i]);
  return difference == 0;
}

std::string TierList(const std::set<slice::Tier>& tiers) {
  std::string text;
  for (slice::Tier tier : tiers) text += (text.empty() ? "" : ", ") + std::string(slice::ToString(tier));
  return text.empty() ? "none" : text;
}

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

bool IsLoopbackHost(const std::string& host) {
  std::string name = host;
  if (!name.empty() && name.front() == '[') {
    const std::size_t close = name.find(']');
    if (close == std::string::npos) return false;
    const std::string rest = name.substr(close + 1);
    if (!rest.empty() && (rest[0] != ':' || rest.size() == 1)) return false;
    name = name.substr(1, close - 1);
    return name == "::1";
  }
  const std::size_t colon = name.find(':');
  if (colon != std::string::npos) {
    const std::string port = name.substr(colon + 1);
    if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), ::isdigit)) return false;
    name = name.substr(0, colon);
  }
  std::transform(name.begin(), name.end(), name.begin(), ::tolower);
  return name == "127.0.0.1" || name == "localhost";
}

Access::Access(AccessPolicy policy) : policy_(std::move(policy)) {}

Access::Member Access::Lookup(uid_t uid) const {
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto cached = members_.find(uid);
    if (cached != members_.end() && cached->second.expires > now) return cached->second;
  }
  Member member;
  member.name = "uid " + std::to_string(uid);
  member.expires = now + kMembershipTtl;
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  if (getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr) {
    member.name = found->pw_name;
    int count = 64;
    std::vector<gid_t> gids(static_cast<std::size_t>(count));
    if (getgrouplist(found->pw_name, found->pw_gid, gids.data(), &count) < 0) {
      gids.resize(static_cast<std::size_t>(count));
      getgrouplist(found->pw_name, found->pw_gid, gids.data(), &count);
    }
    gids.resize(static_cast<std::size_t>(std::max(count, 0)));
    std::vector<char> group_buffer(16384);
    for (gid_t gid : gids) {
      group groupEntry{};
      group* group_found = nullptr;
      if (getgrgid_r(gid, &groupEntry, group_buffer.data(), group_buffer.size(), &group_found) == 0 &&
          group_found != nullptr) {
        member.groups.emplace_back(group_found->gr_name);
      }
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  members_[uid] = member;
  return member;
}

Result<Caller> Access::Identify(const net::HttpRequest& request) const {
  Caller caller;
  if (request.peer.unix_socket) {
    if (request.peer.uid == static_cast<uid_t>(-1)) return Caller{};  // no credentials: a viewer
    caller.uid = request.peer.uid;
    const Member member = Lookup(request.peer.uid);
    caller.name = member.name;
    const bool admin = request.peer.uid == 0 ||
                       (!policy_.admin_group.empty() && Contains(member.groups, policy_.admin_group));
    caller.role = admin ? Role::kAdmin : Role::kUser;
    return caller;
  }
  const std::string host = request.Header("host");
  if (!host.empty() && !IsLoopbackHost(host)) {
    return Status::PermissionDenied("Host '" + host + "' is not this machine's loopback: the agent answers only requests "
                                    "addressed to 127.0.0.1 or localhost");
  }
  caller.name = "a TCP client";
  const std::string authorization = request.Header("authorization");
  if (authorization.empty()) return caller;
  const std::string scheme = "Bearer ";
  if (policy_.token.empty() || authorization.compare(0, scheme.size(), scheme) != 0 ||
      !ConstantTimeEquals(authorization.substr(scheme.size()), policy_.token)) {
    return Status::PermissionDenied("the bearer token is not the agent's");
  }
  caller.role = Role::kAdmin;
  caller.name = "a TCP client with the admin token";
  return caller;
}

AccessRule Access::RuleFor(uid_t uid) const {
  const Member member = Lookup(uid);
  if (const auto user = policy_.users.find(member.name); user != policy_.users.end()) return user->second;
  for (const auto& [name, rule] : policy_.groups) {  // std::map: by name
    if (Contains(member.groups, name)) return rule;
  }
  return policy_.defaults;
}

Status Access::WithinRule(const Caller& caller, const AccessRule& rule, std::optional<uint64_t> memory,
                          std::optional<uint32_t> compute, std::optional<slice::Tier> tier) const {
  const std::string who = caller.name;
  if (tier && rule.tiers.count(*tier) == 0) {
    return Status::PermissionDenied(who + " may not use the " + slice::ToString(*tier) + " tier (allowed: " +
                                    TierList(rule.tiers) + ")");
  }
  if (memory && rule.max_memory != 0 && *memory > rule.max_memory) {
    return Status::PermissionDenied(who + " may not have a slice over " + FormatByteSize(rule.max_memory) + " (asked " +
                                    FormatByteSize(*memory) + ")");
  }
  if (compute && *compute > rule.max_compute) {
    return Status::PermissionDenied(who + " may not have a slice over " + std::to_string(rule.max_compute) +
                                    " % compute (asked " + std::to_string(*compute) + " %)");
  }
  return Status::Ok();
}

Status Access::MayCreate(const Caller& caller, const CreateRequest& request, int held) const {
  if (!caller.may_write()) {
    return Status::PermissionDenied("the TCP listener is read-only without the admin token: create slices over the "
                                    "agent's Unix socket");
  }
  const bool admin = caller.role == Role::kAdmin;
  if (admin && !request.owner) return Status::Ok();
  if (!admin && request.owner) return Status::PermissionDenied(caller.name + " may not create slices for another user");
  // A pod's cgroup makes its processes the slice's members (signals, stop-loss): the kubelet
  // plugin's word, an admin's, never a user's.
  if (!admin && !request.kube.pod_uid.empty()) {
    return Status::PermissionDenied(caller.name + " may not tie a slice to a pod (pod_uid is for the Kubernetes plugin)");
  }
  // A batch job's labels say whom chargeback bills: the batch system's word (an admin), not a user's.
  if (!admin && !(request.labels == JobLabels{})) {
    return Status::PermissionDenied("job, user and account are set by the batch system (an admin), not by " +
                                    caller.name);
  }
  // An admin asking for a user (the Slurm plugin, in slurmstepd) gets what that user may have:
  // the admin's word is trusted for the tenant and the job's labels, not for the user's limits.
  const uid_t uid = admin ? *request.owner : *caller.uid;
  Caller owner = caller;
  owner.name = admin ? Lookup(uid).name : caller.name;
  const AccessRule rule = RuleFor(uid);
  // Without a compute share the agent sizes one in proportion to memory (at most 100 %), which
  // max_compute then bounds at placement; a share asked for is checked here.
  if (Status within = WithinRule(owner, rule, request.memory_bytes, request.compute_share, request.tier);
      !within.ok()) {
    return within;
  }
  const bool tenant_allowed = admin || Contains(rule.tenants, "*") || Contains(rule.tenants, request.tenant) ||
                              (Contains(rule.tenants, "{user}") && request.tenant == owner.name);
  if (!tenant_allowed) {
    return Status::PermissionDenied(owner.name + " may not bill tenant '" + request.tenant + "'");
  }
  // A whole instance or GPU is a grant; an admin asking for a user (the Kubernetes plugin serving
  // an fgpu.io/mig-<profile> device) has decided it already.
  if (!admin && rule.isolations.count(request.isolation) == 0) {
    return Status::PermissionDenied(owner.name + " may not ask for " + std::string(ToString(request.isolation)) +
                                    " isolation (a whole MIG instance or GPU: an admin grants it in access's isolations)");
  }
  if (!admin && request.isolation != Isolation::kTrusted) {  // all of the instance's or GPU's compute
    if (Status within = WithinRule(owner, rule, std::nullopt, 100, std::nullopt); !within.ok()) return within;
  }
  if (request.gpu && !rule.gpus.empty() && !Contains(rule.gpus, *request.gpu)) {
    return Status::PermissionDenied(owner.name + " may not use GPU " + *request.gpu);
  }
  if (rule.max_slices > 0 && held >= rule.max_slices) {
    return Status::PermissionDenied(owner.name + " already holds " + std::to_string(held) + " slices (at most " +
                                    std::to_string(rule.max_slices) + ")");
  }
  return Status::Ok();
}

Status Access::MayManage(const Caller& caller, const SliceRecord& slice) const {
  if (caller.role == Role::kAdmin) return Status::Ok();
  if (caller.role == Role::kUser && caller.uid && slice.owner_uid == static_cast<int64_t>(*caller.uid)) {
    return Status::Ok();
  }
  if (!caller.may_write()) {
    return Status::PermissionDenied("the TCP listener is read-only without the admin token");
  }
  return Status::PermissionDenied("slice " + slice.id + " belongs to another user; " + caller.name +
                                  " may change only its own slices");
}

Status Access::MayResize(const Caller& caller, const SliceRecord& slice, const ResizeRequest& resize) const {
  if (Status manage = MayManage(caller, slice); !manage.ok()) return manage;
  if (caller.role == Role::kAdmin) return Status::Ok();
  return WithinRule(caller, RuleFor(*caller.uid), resize.memory_bytes, resize.compute_share, resize.tier);
}

Status Access::MayAdminister(const Caller& caller, const std::string& what) const {
  if (caller.role == Role::kAdmin) return Status::Ok();
  return Status::PermissionDenied(what + " is for admins (root" +
                                  (policy_.admin_group.empty() ? "" : " or group " + policy_.admin_group) + ")");
}

}  // namespace fgpu::agent
