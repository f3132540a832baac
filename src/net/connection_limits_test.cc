// The per-peer and global connection limits, without sockets.
#include "net/connection_limits.h"

#include <gtest/gtest.h>

namespace fgpu::net {
namespace {

using Admission = ConnectionLimits::Admission;

TEST(ConnectionLimitsTest, APeerOverItsLimitIsRefusedWhileAnotherIsAdmitted) {
  ConnectionLimits limits(100, 2);
  EXPECT_EQ(limits.Admit("uid:1000", false), Admission::kAdmitted);
  EXPECT_EQ(limits.Admit("uid:1000", false), Admission::kAdmitted);
  EXPECT_EQ(limits.Admit("uid:1000", false), Admission::kPeerFull);
  EXPECT_EQ(limits.Admit("uid:1001", false), Admission::kAdmitted);
  EXPECT_EQ(limits.open(), 3u);
  EXPECT_EQ(limits.open_for("uid:1000"), 2u);
  limits.Release("uid:1000");
  EXPECT_EQ(limits.Admit("uid:1000", false), Admission::kAdmitted) << "a released slot is reusable";
}

TEST(ConnectionLimitsTest, TheGlobalCapRefusesEveryoneButRoot) {
  ConnectionLimits limits(3, 2);
  EXPECT_EQ(limits.Admit("uid:1", false), Admission::kAdmitted);
  EXPECT_EQ(limits.Admit("uid:2", false), Admission::kAdmitted);
  EXPECT_EQ(limits.Admit("uid:3", false), Admission::kAdmitted);
  EXPECT_EQ(limits.Admit("uid:4", false), Admission::kServerFull);
  EXPECT_EQ(limits.Admit("uid:0", true), Admission::kAdmitted);
  EXPECT_EQ(limits.Admit("uid:0", true), Admission::kAdmitted);
  EXPECT_EQ(limits.Admit("uid:0", true), Admission::kPeerFull) << "root keeps its per-peer limit";
  EXPECT_EQ(limits.open(), 5u);
  EXPECT_EQ(limits.open_for("uid:4"), 0u);
}

TEST(ConnectionLimitsTest, ReleasingWhatWasNeverAdmittedChangesNothing) {
  ConnectionLimits limits(3, 1);
  limits.Release("uid:9");
  EXPECT_EQ(limits.open(), 0u);
  EXPECT_EQ(limits.Admit("uid:9", false), Admission::kAdmitted);
  limits.Release("uid:9");
  limits.Release("uid:9");
  EXPECT_EQ(limits.open(), 0u);
}

TEST(ConnectionLimitsTest, KeysNameTheUidOrTheAddress) {
  EXPECT_EQ(PeerKey(true, 1000, "127.0.0.1"), "uid:1000");
  EXPECT_EQ(PeerKey(false, 0, "127.0.0.1"), "addr:127.0.0.1");
}

}  // namespace
}  // namespace fgpu::net
