#include "sched/governance/quota.h"

#include <gtest/gtest.h>

namespace fgpu::sched {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

Amount Milli(int64_t milli) { return {0, milli}; }

// org-a (teams a1, a2) and org-b (team b1), 1000 milli-GPU each team.
QuotaTree TwoOrgs(Amount a1_borrow = kUnlimitedAmount, Amount a2_lend = kUnlimitedAmount) {
  Result<QuotaTree> tree = QuotaTree::Create({
      {.name = "org-a"},
      {.name = "org-b"},
      {.name = "a1", .parent = "org-a", .nominal = Milli(1000), .borrowing_limit = a1_borrow},
      {.name = "a2", .parent = "org-a", .nominal = Milli(1000), .lending_limit = a2_lend},
      {.name = "b1", .parent = "org-b", .nominal = Milli(1000)},
  });
  EXPECT_TRUE(tree.ok()) << tree.status().message();
  return std::move(tree).value();
}

TEST(QuotaTest, ParentsNominalIsTheSumOfTheirChildren) {
  const QuotaTree tree = TwoOrgs();
  EXPECT_EQ(tree.Nominal(tree.LeafOf("a1")), Milli(1000));
  EXPECT_EQ(tree.Nominal(tree.Parent(tree.LeafOf("a1"))), Milli(2000));
  EXPECT_EQ(tree.Nominal(QuotaTree::kRoot), Milli(3000));
}

TEST(QuotaTest, ATenantGetsItsNominalAndBorrowsWhatOthersLeaveIdle) {
  QuotaTree tree = TwoOrgs();
  EXPECT_TRUE(tree.Admit("a1", Milli(1000)).ok());
  EXPECT_TRUE(tree.WithinNominal("a1", Milli(1000)));
  EXPECT_TRUE(tree.Admit("a1", Milli(3000)).ok());  // everyone else idle: all of it
  EXPECT_FALSE(tree.Admit("a1", Milli(3001)).ok());  // not more than the cluster's quotas
  tree.Charge("a1", Milli(2500));
  EXPECT_EQ(tree.Borrowed("a1"), Milli(1500));
  EXPECT_FALSE(tree.WithinNominal("a1", Milli(1)));
  // b1's own nominal is lent out: admission says so, and b1 is within its nominal (it may reclaim).
  Status refused = tree.Admit("b1", Milli(1000));
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("cannot lend"), std::string::npos) << refused.message();
  EXPECT_TRUE(tree.WithinNominal("b1", Milli(1000)));
  EXPECT_TRUE(tree.Admit("b1", Milli(500)).ok());
  tree.Credit("a1", Milli(2500));
  EXPECT_TRUE(tree.Admit("b1", Milli(1000)).ok());
}

TEST(QuotaTest, BorrowingLimitCapsATenantAboveItsNominal) {
  QuotaTree tree = TwoOrgs(/*a1_borrow=*/Milli(500));
  EXPECT_TRUE(tree.Admit("a1", Milli(1500)).ok());
  Status refused = tree.Admit("a1", Milli(1501));
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("quota 'a1'"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("borrowing limit"), std::string::npos);
}

TEST(QuotaTest, LendingLimitKeepsPartOfAnIdleNominalForItsOwner) {
  QuotaTree tree = TwoOrgs(kUnlimitedAmount, /*a2_lend=*/Milli(200));
  // a2 keeps 800 of its 1000 even idle: a1 can reach 1000 + 200 (from a2) + 1000 (from org-b).
  EXPECT_TRUE(tree.Admit("a1", Milli(2200)).ok());
  EXPECT_FALSE(tree.Admit("a1", Milli(2201)).ok());
  tree.Charge("a1", Milli(2200));
  EXPECT_TRUE(tree.Admit("a2", Milli(800)).ok());  // what it kept is there
}

TEST(QuotaTest, MemoryAndComputeAreEachLimited) {
  Result<QuotaTree> tree = QuotaTree::Create({{.name = "t", .nominal = Amount{10 * kGiB, 500}},
                                              {.name = "u", .nominal = Amount{10 * kGiB, 500}}});
  ASSERT_TRUE(tree.ok());
  EXPECT_TRUE(tree->Admit("t", {20 * kGiB, 100}).ok());
  Status refused = tree->Admit("t", {21 * kGiB, 100});
  EXPECT_NE(refused.message().find("GPU memory"), std::string::npos) << refused.message();
  EXPECT_NE(tree->Admit("t", {kGiB, 1001}).message().find("GPU compute"), std::string::npos);
}

TEST(QuotaTest, UnknownTenantsGoToTheDefaultLeafOrAreRefused) {
  QuotaTree strict = TwoOrgs();
  EXPECT_EQ(strict.LeafOf("stranger"), -1);
  EXPECT_NE(strict.Admit("stranger", Milli(1)).message().find("has no quota"), std::string::npos);
  EXPECT_FALSE(strict.WithinNominal("stranger", Milli(1)));
  Result<QuotaTree> lenient = QuotaTree::Create({{.name = "team", .nominal = Milli(1000)},
                                                 {.name = "others", .nominal = Milli(100), .borrowing_limit = Amount{}}},
                                                {.default_leaf = "others"});
  ASSERT_TRUE(lenient.ok()) << lenient.status().message();
  EXPECT_TRUE(lenient->Admit("stranger", Milli(100)).ok());
  EXPECT_FALSE(lenient->Admit("stranger", Milli(101)).ok());
  lenient->Charge("stranger", Milli(60));
  EXPECT_EQ(lenient->Usage(lenient->LeafOf("others")), Milli(60));
}

TEST(QuotaTest, WithoutQuotasEverythingIsAdmitted) {
  QuotaTree none;
  EXPECT_FALSE(none.enabled());
  EXPECT_TRUE(none.Admit("anyone", kUnlimitedAmount).ok());
  none.Charge("anyone", Milli(5));
  EXPECT_TRUE(none.Borrowed("anyone").IsZero());
}

TEST(QuotaTest, MalformedTreesAreRefusedNamingTheQuota) {
  const auto error = [](std::vector<QuotaSpec> specs, QuotaOptions options = {}) {
    Result<QuotaTree> tree = QuotaTree::Create(std::move(specs), std::move(options));
    EXPECT_FALSE(tree.ok());
    return tree.ok() ? std::string() : tree.status().message();
  };
  EXPECT_NE(error({{.name = ""}}).find("no name"), std::string::npos);
  EXPECT_NE(error({{.name = "a"}, {.name = "a"}}).find("'a' is defined twice"), std::string::npos);
  EXPECT_NE(error({{.name = "a", .parent = "nope"}}).find("unknown parent 'nope'"), std::string::npos);
  EXPECT_NE(error({{.name = "a", .parent = "b"}, {.name = "b", .parent = "a"}}).find("its own ancestor"),
            std::string::npos);
  EXPECT_NE(error({{.name = "a", .nominal = Amount{-1, 0}}}).find("negative"), std::string::npos);
  EXPECT_NE(error({{.name = "org"}, {.name = "t", .parent = "org"}}, {.default_leaf = "org"}).find("not a leaf"),
            std::string::npos);
}

}  // namespace
}  // namespace fgpu::sched
