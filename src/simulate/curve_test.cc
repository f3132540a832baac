#include "simulate/curve.h"

#include <gtest/gtest.h>

namespace fgpu::simulate {
namespace {

TEST(ArrivalCurveTest, BinsByRoundedArrivalAndAveragesEachBin) {
  ArrivalCurve curve;
  curve.Add(99.6, 90, 5);
  curve.Add(100.4, 92, 7);
  curve.Add(100.5, 50, 1);  // a half rounds to even: bin 100
  curve.Add(101.5, 10, 1);  // bin 102
  EXPECT_DOUBLE_EQ(*curve.AllocatedAt(100), (90 + 92 + 50) / 3.0);
  EXPECT_DOUBLE_EQ(*curve.FragmentAt(100), (5 + 7 + 1) / 3.0);
  // Bin 101 is empty: the mean of bins 100..102.
  EXPECT_DOUBLE_EQ(*curve.AllocatedAt(101), (90 + 92 + 50 + 10) / 4.0);
  EXPECT_FALSE(curve.AllocatedAt(50).has_value());
  EXPECT_EQ(curve.last_bin(), 102);
}

}  // namespace
}  // namespace fgpu::simulate
