#include "k8s/dra/quantity.h"

#include <gtest/gtest.h>

namespace fgpu::k8s {
namespace {

TEST(QuantityTest, ParsesEverySuffixOfTheGrammar) {
  EXPECT_EQ(*ParseQuantity("20Gi"), uint64_t{20} << 30);
  EXPECT_EQ(*ParseQuantity("30"), 30u);
  EXPECT_EQ(*ParseQuantity("1.5Gi"), uint64_t{3} << 29);
  EXPECT_EQ(*ParseQuantity("1G"), 1000000000u);
  EXPECT_EQ(*ParseQuantity("2k"), 2000u);
  EXPECT_EQ(*ParseQuantity("1e3"), 1000u);
  EXPECT_EQ(*ParseQuantity("1E3"), 1000u);
  EXPECT_EQ(*ParseQuantity("+7"), 7u);
  EXPECT_EQ(*ParseQuantity(".5Ki"), 512u);
  EXPECT_EQ(*ParseQuantity("5."), 5u);
  EXPECT_EQ(*ParseQuantity("0"), 0u);
  EXPECT_EQ(*ParseQuantity("81559Mi"), uint64_t{81559} << 20);
}

TEST(QuantityTest, RoundsFractionsUpAsValueDoes) {
  EXPECT_EQ(*ParseQuantity("500m"), 1u);
  EXPECT_EQ(*ParseQuantity("1500m"), 2u);
  EXPECT_EQ(*ParseQuantity("1.0001"), 2u);
  EXPECT_EQ(*ParseQuantity("2000m"), 2u);
  EXPECT_EQ(*ParseQuantity("1e-3"), 1u);
}

TEST(QuantityTest, RefusesWhatTheGrammarDoesNot) {
  for (const char* bad : {"", "Gi", "1GB", "1gi", "1 Gi", "--1", "1e", "1e+", "-1", "1.2.3", "1Ki1", "abc",
                          "99999999999999999999999999999999999", "8Ei", "1e100"}) {
    EXPECT_FALSE(ParseQuantity(bad).ok()) << bad;
  }
  EXPECT_NE(ParseQuantity("1GB").status().message().find("suffix"), std::string::npos);
}

TEST(QuantityTest, FormatsWithTheLargestExactBinarySuffix) {
  EXPECT_EQ(FormatQuantity(uint64_t{20} << 30, true), "20Gi");
  EXPECT_EQ(FormatQuantity(uint64_t{81559} << 20, true), "81559Mi");
  EXPECT_EQ(FormatQuantity(1000, true), "1000");
  EXPECT_EQ(FormatQuantity(1024, true), "1Ki");
  EXPECT_EQ(FormatQuantity(0, true), "0");
  EXPECT_EQ(FormatQuantity(1024, false), "1024");
  for (uint64_t value : {uint64_t{1}, uint64_t{3} << 29, uint64_t{85520809984}, uint64_t{1} << 62}) {
    EXPECT_EQ(*ParseQuantity(FormatQuantity(value, true)), value);
  }
}

}  // namespace
}  // namespace fgpu::k8s
