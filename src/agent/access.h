// Access: who is asking the agent, and what they may ask (docs/security.md "The agent's API").
//
// Contract
// - Identify: over the Unix socket the kernel names the caller (SO_PEERCRED): root and members
//   of the admin group are admins, everyone else a user. Over loopback TCP nobody is named: a
//   request bearing the token (`Authorization: Bearer <token>`, compared in constant time) is an
//   admin, any other a viewer. A TCP request whose Host header names anything but this machine's
//   loopback is refused (a web page on another origin must not reach the API through the
//   browser: DNS rebinding).
// - Viewers read what the dashboard shows; users also create slices for themselves within their
//   rule and read, resize (within their rule) and delete the slices they own; admins do
//   everything, outside any rule.
// - A user's rule is the most specific of: the "users" entry for their name, the first "groups"
//   entry (by name) they belong to, "default". Refusals are PermissionDenied naming the rule.
// - Thread-safe. Group memberships are looked up (NSS) once per uid and kept for
//   kMembershipTtl, so authorizing a call costs a map lookup, not a directory query.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/isolation.h"
#include "agent/slice_record.h"
#include "core/status.h"
#include "net/http_message.h"
#include "slice/slice.h"

namespace fgpu::agent {

struct CreateRequest;
struct ResizeRequest;

enum class Role { kViewer, kUser, kAdmin };

struct Caller {
  Role role = Role::kViewer;
  // The kernel's word for who asks (Unix socket); nullopt over TCP.
  std::optional<uid_t> uid;
  std::string name;  // for messages: a user name, "uid 1234", or "a TCP client"
  bool may_write() const { return role != Role::kViewer; }
};

// What one user may ask for (docs/security.md "Rules").
struct AccessRule {
  std::set<slice::Tier> tiers = {slice::Tier::kBatch, slice::Tier::kStandard};  // latency is a privilege
  uint64_t max_memory = 0;   // per slice, bytes; 0: no limit but the GPU's
  uint32_t max_compute = 100;  // per slice, percent
  std::vector<std::string> gpus;  // NVML indices or UUIDs; empty: every GPU
  // Tenants the user may bill: names, "{user}" for their own name, "*" for any.
  std::vector<std::string> tenants = {"default", "{user}"};
  int max_slices = 0;  // slices held at once; 0: no limit
  // Isolation beyond trusted gives a whole MIG instance or GPU, memory and compute: a privilege,
  // as the latency tier is (docs/mig.md "Who may").
  std::set<Isolation> isolations = {Isolation::kTrusted};
};

struct AccessPolicy {
  std::string admin_group;  // besides root; empty: root only
  AccessRule defaults;
  std::map<std::string, AccessRule> users;   // by user name
  std::map<std::string, AccessRule> groups;  // by group name
  std::string token;  // TCP admin token; empty: TCP is read-only
};

class Access {
 public:
  static constexpr std::chrono::seconds kMembershipTtl{30};

  explicit Access(AccessPolicy policy);

  // Who sent `request`; PermissionDenied for a TCP request with a foreign Host or a wrong token.
  Result<Caller> Identify(const net::HttpRequest& request) const;

  // The caller may create a slice with `request` while the slice's owner holds `held` slices:
  // users within their rule; admins freely, or, when they name an owner, within the owner's rule
  // (tenant and labels are then the admin's word).
  Status MayCreate(const Caller& caller, const CreateRequest& request, int held) const;
  // The caller owns `slice` or is an admin.
  Status MayManage(const Caller& caller, const SliceRecord& slice) const;
  // MayManage, and the slice after `resize` stays within the caller's rule.
  Status MayResize(const Caller& caller, const SliceRecord& slice, const ResizeRequest& resize) const;
  Status MayAdminister(const Caller& caller, const std::string& what) const;

  // The rule that applies to `uid` (for messages and tests).
  AccessRule RuleFor(uid_t uid) const;

 private:
  struct Member {
    std::string name;
    std::vector<std::string> groups;
    std::chrono::steady_clock::time_point expires;
  };
  Member Lookup(uid_t uid) const;
  Status WithinRule(const Caller& caller, const AccessRule& rule, std::optional<uint64_t> memory,
                    std::optional<uint32_t> compute, std::optional<slice::Tier> tier) const;

  AccessPolicy policy_;
  mutable std::mutex mutex_;
  mutable std::map<uid_t, Member> members_;
};

// Whether `host` (a Host header value) names this machine's loopback ("127.0.0.1", "localhost",
// "[::1]", each with or without a port).
bool IsLoopbackHost(const std::string& host);

}  // namespace fgpu::agent
