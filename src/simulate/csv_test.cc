#include "simulate/csv.h"

#include <gtest/gtest.h>

#include "simulate/testing.h"

namespace fgpu::simulate {
namespace {

TEST(ReadCsvTest, ReadsHeaderRowsQuotesAndCrlfAndSkipsBlankLines) {
  testing::TempFile file("quotes.csv", "\xEF\xBB\xBFname,value\r\n\"a,b\", 7 \r\n\n\"say \"\"hi\"\"\",\r\n");
  Result<CsvTable> table = ReadCsv(file.path());
  ASSERT_TRUE(table.ok()) << table.status().message();
  EXPECT_EQ(table->header, (std::vector<std::string>{"name", "value"}));
  ASSERT_EQ(table->rows.size(), 2u);
  EXPECT_EQ(table->rows[0].fields, (std::vector<std::string>{"a,b", "7"}));
  EXPECT_EQ(table->rows[1].line, 4);
  EXPECT_EQ(table->rows[1].fields[0], "say \"hi\"");
  EXPECT_EQ(table->Where(table->rows[1]), file.path() + ":4: ");
}

TEST(ReadCsvTest, ErrorsNameTheFileAndLine) {
  testing::TempFile short_row("short.csv", "a,b,c\n1,2,3\n1,2\n");
  EXPECT_EQ(ReadCsv(short_row.path()).status().message(),
            short_row.path() + ":3: expected 3 fields (as the header), found 2");
  testing::TempFile open_quote("quote.csv", "a\n\"oops\n");
  EXPECT_NE(ReadCsv(open_quote.path()).status().message().find(":2: a quoted field is not closed"),
            std::string::npos);
  testing::TempFile empty("empty.csv", "\n\n");
  EXPECT_NE(ReadCsv(empty.path()).status().message().find("no header"), std::string::npos);
  EXPECT_EQ(ReadCsv("/nonexistent/file.csv").status().code(), StatusCode::kUnavailable);
}

TEST(ParseIntFieldTest, AcceptsWholeIntegersInRangeOnly) {
  EXPECT_EQ(*ParseIntField("12", "gpu", 0, 16), 12);
  EXPECT_NE(ParseIntField("4x", "gpu", 0, 16).status().message().find("column gpu '4x' is not an integer"),
            std::string::npos);
  EXPECT_NE(ParseIntField("-1", "gpu", 0, 16).status().message().find("outside 0..16"), std::string::npos);
  EXPECT_FALSE(ParseIntField("", "gpu", 0, 16).ok());
  EXPECT_FALSE(ParseIntField("99999999999999999999", "gpu", 0, 16).ok());
}

}  // namespace
}  // namespace fgpu::simulate
