#include "simulate/plan.h"

#include <gtest/gtest.h>

namespace fgpu::simulate {
namespace {

TEST(ParseSeedsTest, AcceptsRangesAndLists) {
  Result<std::vector<uint64_t>> seeds = ParseSeeds("42-45,50, 7");
  ASSERT_TRUE(seeds.ok()) << seeds.status().message();
  EXPECT_EQ(*seeds, (std::vector<uint64_t>{42, 43, 44, 45, 50, 7}));
}

TEST(ParseSeedsTest, RejectsBackwardsRangesAndJunk) {
  for (const char* bad : {"51-42", "x", "", "4-", "-3", "1,,2", "0-99999999"}) {
    EXPECT_FALSE(ParseSeeds(bad).ok()) << bad;
  }
}

TEST(ParsePoliciesTest, AllListsEveryPolicyAndNamesIgnoreCase) {
  Result<std::vector<std::string>> all = ParsePolicies("all");
  ASSERT_TRUE(all.ok());
  EXPECT_GE(all->size(), 7u);
  Result<std::vector<std::string>> some = ParsePolicies("fgd,bestfit,FGD");
  ASSERT_TRUE(some.ok());
  EXPECT_EQ(*some, (std::vector<std::string>{"FGD", "BestFit"}));
}

TEST(ParsePoliciesTest, UnknownNameListsTheKnownOnes) {
  Result<std::vector<std::string>> bad = ParsePolicies("FGD,Magic");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("Magic"), std::string::npos);
  EXPECT_NE(bad.status().message().find("BestFit"), std::string::npos);
}

}  // namespace
}  // namespace fgpu::simulate
