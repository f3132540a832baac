// Access: identities from the Unix socket and TCP, rules by user, group and default.
#include "agent/access.h"

#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include "agent/slice_service.h"

namespace fgpu::agent {
namespace {

net::HttpRequest UnixRequest(uid_t uid) {
  net::HttpRequest request;
  request.peer = {true, 42, uid, uid, "sock"};
  return request;
}

TEST(AccessTest, RootIsAnAdminOtherUsersAreUsers) {
  const Access access{AccessPolicy{}};
  EXPECT_EQ(access.Identify(UnixRequest(0))->role, Role::kAdmin);
  const Result<Caller> nobody = access.Identify(UnixRequest(65534));
  ASSERT_TRUE(nobody.ok());
  EXPECT_EQ(nobody->role, Role::kUser);
  EXPECT_EQ(*nobody->uid, 65534u);
  EXPECT_EQ(nobody->name, "nobody");
  EXPECT_EQ(access.Identify(UnixRequest(424242))->name, "uid 424242") << "a uid without a passwd entry";
}

TEST(AccessTest, TheAdminGroupMakesAdmins) {
  AccessPolicy policy;
  policy.admin_group = "nogroup";  // nobody's primary group on Debian
  const Access access{policy};
  EXPECT_EQ(access.Identify(UnixRequest(65534))->role, Role::kAdmin);
  policy.admin_group = "fgpu-admins-that-do-not-exist";
  EXPECT_EQ(Access{policy}.Identify(UnixRequest(65534))->role, Role::kUser);
}

TEST(AccessTest, TheMostSpecificRuleApplies) {
  AccessPolicy policy;
  policy.defaults.max_compute = 10;
  policy.groups["nogroup"].max_compute = 20;
  policy.users["nobody"].max_compute = 30;
  EXPECT_EQ(Access{policy}.RuleFor(65534).max_compute, 30u);
  policy.users.clear();
  EXPECT_EQ(Access{policy}.RuleFor(65534).max_compute, 20u);
  policy.groups.clear();
  EXPECT_EQ(Access{policy}.RuleFor(65534).max_compute, 10u);
}

TEST(AccessTest, TcpCallersAreViewersUnlessTheyHoldTheToken) {
  AccessPolicy policy;
  policy.token = "a-token-of-20-chars!";
  const Access access{policy};
  net::HttpRequest request;
  request.peer.unix_socket = false;
  EXPECT_EQ(access.Identify(request)->role, Role::kViewer);
  request.headers["authorization"] = "Bearer a-token-of-20-chars!";
  EXPECT_EQ(access.Identify(request)->role, Role::kAdmin);
  request.headers["authorization"] = "Bearer a-token-of-20-chars?";
  EXPECT_EQ(access.Identify(request).status().code(), StatusCode::kPermissionDenied);
  request.headers["authorization"] = "Basic a-token-of-20-chars!";
  EXPECT_FALSE(access.Identify(request).ok());
  // No token configured: no token is right, not even an empty one.
  request.headers["authorization"] = "Bearer ";
  EXPECT_FALSE(Access{AccessPolicy{}}.Identify(request).ok());
}

TEST(AccessTest, LoopbackHosts) {
  for (const char* host : {"127.0.0.1", "127.0.0.1:7070", "localhost", "LOCALHOST:1", "[::1]", "[::1]:80"}) {
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
  }
  for (const char* host : {"evil.example", "127.0.0.1.evil.example", "127.0.0.2", "localhost:", "localhost:x",
                           "[::1", "[::2]", "[::1]x", "127.0.0.1:123456", ""}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  }
}

TEST(AccessTest, ManagingIsForOwnersAndAdmins) {
  const Access access{AccessPolicy{}};
  SliceRecord slice;
  slice.id = "s1";
  slice.owner_uid = 1001;
  EXPECT_TRUE(access.MayManage(*access.Identify(UnixRequest(1001)), slice).ok());
  EXPECT_EQ(access.MayManage(*access.Identify(UnixRequest(1002)), slice).code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(access.MayManage(*access.Identify(UnixRequest(0)), slice).ok());
  slice.owner_uid = -1;  // made over TCP by an admin: admins only
  EXPECT_FALSE(access.MayManage(*access.Identify(UnixRequest(1001)), slice).ok());
}

// A whole MIG instance or GPU is granted, as the latency tier is; once granted, the rule's compute
// bound still applies (a whole target is 100 %).
TEST(AccessTest, HardAndExclusiveIsolationAreGranted) {
  CreateRequest request;
  request.memory_bytes = 1;
  request.isolation = Isolation::kHard;
  AccessPolicy policy;
  const Caller nobody = *Access{policy}.Identify(UnixRequest(65534));
  Status refused = Access{policy}.MayCreate(nobody, request, 0);
  EXPECT_EQ(refused.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(refused.message().find("may not ask for hard isolation"), std::string::npos) << refused.message();
  EXPECT_TRUE(Access{policy}.MayCreate(*Access{policy}.Identify(UnixRequest(0)), request, 0).ok()) << "admins may";
  policy.users["nobody"].isolations = {Isolation::kTrusted, Isolation::kHard};
  EXPECT_TRUE(Access{policy}.MayCreate(nobody, request, 0).ok());
  request.isolation = Isolation::kExclusive;
  EXPECT_EQ(Access{policy}.MayCreate(nobody, request, 0).code(), StatusCode::kPermissionDenied);
  request.isolation = Isolation::kHard;
  policy.users["nobody"].max_compute = 50;
  refused = Access{policy}.MayCreate(nobody, request, 0);
  EXPECT_NE(refused.message().find("over 50 % compute"), std::string::npos) << refused.message();
  // An admin asking for the user has decided the isolation (the Kubernetes plugin's MIG devices).
  request.owner = 65534;
  EXPECT_TRUE(Access{policy}.MayCreate(*Access{policy}.Identify(UnixRequest(0)), request, 0).ok());
}

}  // namespace
}  // namespace fgpu::agent
