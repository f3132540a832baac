#include "core/units.h"

#include <gtest/gtest.h>

namespace fgpu {
namespace {

uint64_t ParseOk(std::string_view text) {
  Result<uint64_t> r = ParseByteSize(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().message();
  return r.ok() ? *r : 0;
}

void ExpectInvalid(std::string_view text) {
  Result<uint64_t> r = ParseByteSize(text);
  ASSERT_FALSE(r.ok()) << "accepted \"" << text << "\" as " << *r;
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("\"" + std::string(text) + "\""), std::string::npos)
      << "message does not quote the input: " << r.status().message();
}

TEST(ParseByteSize, PlainBytes) {
  EXPECT_EQ(ParseOk("0"), 0u);
  EXPECT_EQ(ParseOk("1234"), 1234u);
  EXPECT_EQ(ParseOk("1234B"), 1234u);
  EXPECT_EQ(ParseOk("7 b"), 7u);
  EXPECT_EQ(ParseOk("18446744073709551615"), UINT64_MAX);
}

TEST(ParseByteSize, BinaryUnits) {
  EXPECT_EQ(ParseOk("64KiB"), 64u * 1024);
  EXPECT_EQ(ParseOk("512MiB"), 512u * kMiB);
  EXPECT_EQ(ParseOk("10GiB"), 10u * kGiB);
  EXPECT_EQ(ParseOk("2TiB"), 2u * kTiB);
  EXPECT_EQ(ParseOk("1PiB"), 1ull << 50);
  EXPECT_EQ(ParseOk("81559MiB"), 81559ull << 20);
}

TEST(ParseByteSize, ShortBinaryUnits) {
  // 4G, 4Gi and 4GiB are the same size, as fgpu-probe and coreutils read `4G`.
  EXPECT_EQ(ParseOk("4G"), 4u * kGiB);
  EXPECT_EQ(ParseOk("4Gi"), 4u * kGiB);
  EXPECT_EQ(ParseOk("4g"), 4u * kGiB);
  EXPECT_EQ(ParseOk("512M"), 512u * kMiB);
  EXPECT_EQ(ParseOk("512Mi"), 512u * kMiB);
  EXPECT_EQ(ParseOk("5K"), 5u * kKiB);
  EXPECT_EQ(ParseOk("5Ki"), 5u * kKiB);
  EXPECT_EQ(ParseOk("2T"), 2u * kTiB);
  EXPECT_EQ(ParseOk("2Ti"), 2u * kTiB);
  EXPECT_EQ(ParseOk("1P"), 1ull << 50);
  EXPECT_EQ(ParseOk("1.5G"), 3u * kGiB / 2);
  EXPECT_EQ(ParseOk("1.5 Gi"), 3u * kGiB / 2);
}

TEST(ParseByteSize, SiUnits) {
  EXPECT_EQ(ParseOk("500MB"), 500'000'000u);
  EXPECT_EQ(ParseOk("1GB"), 1'000'000'000u);
  EXPECT_EQ(ParseOk("3KB"), 3'000u);
  EXPECT_EQ(ParseOk("2TB"), 2'000'000'000'000u);
}

TEST(ParseByteSize, UnitsAreCaseInsensitive) {
  EXPECT_EQ(ParseOk("512mib"), 512u * kMiB);
  EXPECT_EQ(ParseOk("512MIB"), 512u * kMiB);
  EXPECT_EQ(ParseOk("1gb"), 1'000'000'000u);
  EXPECT_EQ(ParseOk("5 GiB"), 5u * kGiB);
}

TEST(ParseByteSize, Fractions) {
  EXPECT_EQ(ParseOk("1.5GiB"), 3u * kGiB / 2);
  EXPECT_EQ(ParseOk("0.5KiB"), 512u);
  EXPECT_EQ(ParseOk("1.25MB"), 1'250'000u);
  EXPECT_EQ(ParseOk("1.0B"), 1u);
  // 1.3 KiB = 1331.2 bytes rounds to the nearest byte.
  EXPECT_EQ(ParseOk("1.3KiB"), 1331u);
  // Digits beyond what can matter are accepted and ignored.
  EXPECT_EQ(ParseOk("1.0000000000000000000000001GiB"), kGiB);
}

TEST(ParseByteSize, RejectsBadInput) {
  for (std::string_view bad : {"", "-1", "-1GiB", "abc", "GiB", "12 ", " 12", "12GiBx", "12 GiB extra", "1.5",
                               "1.5B", "1.", ".5GiB", "1e9", "+5", "0x10", "5 XiB", "1,000", "12iB", "5 Xi", "5Gib2", "5iG"}) {
    ExpectInvalid(bad);
  }
}

TEST(ParseByteSize, RejectsOverflow) {
  ExpectInvalid("18446744073709551616");
  ExpectInvalid("99999999999999999999999999");
  ExpectInvalid("16384PiB");
  ExpectInvalid("20000000TiB");
  ExpectInvalid("18446744073709551615.5KiB");
  EXPECT_EQ(ParseOk("16383PiB"), 16383ull << 50);
}

TEST(ParseByteSize, MessageSaysWhy) {
  EXPECT_NE(ParseByteSize("-4GiB").status().message().find("negative"), std::string::npos);
  EXPECT_NE(ParseByteSize("").status().message().find("empty"), std::string::npos);
  EXPECT_NE(ParseByteSize("1zz").status().message().find("MiB"), std::string::npos);
}

TEST(FormatByteSize, ExactMultiplesPrintAsIntegers) {
  EXPECT_EQ(FormatByteSize(0), "0 B");
  EXPECT_EQ(FormatByteSize(1000), "1000 B");
  EXPECT_EQ(FormatByteSize(1024), "1 KiB");
  EXPECT_EQ(FormatByteSize(512 * kMiB), "512 MiB");
  EXPECT_EQ(FormatByteSize(80 * kGiB), "80 GiB");
  EXPECT_EQ(FormatByteSize(2 * kTiB), "2 TiB");
}

TEST(FormatByteSize, OthersPrintTwoDecimals) {
  EXPECT_EQ(FormatByteSize(3 * kGiB / 2), "1.50 GiB");
  EXPECT_EQ(FormatByteSize(1536), "1.50 KiB");
  EXPECT_EQ(FormatByteSize(81559ull << 20), "79.65 GiB");
  EXPECT_EQ(FormatByteSize(kGiB - 1), "1.00 GiB");
  EXPECT_EQ(FormatByteSize(UINT64_MAX), "16.00 EiB");
}

TEST(FormatByteSize, RoundTripsThroughParse) {
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, 4 * kKiB, 512 * kMiB, 10 * kGiB, 3 * kTiB}) {
    EXPECT_EQ(ParseOk(FormatByteSize(v)), v);
  }
}

}  // namespace
}  // namespace fgpu
