#include "simulate/report.h"

#include <gtest/gtest.h>

#include "simulate/svg_plot.h"
#include "simulate/testing.h"

namespace fgpu::simulate {
namespace {

std::vector<PolicySummary> TwoPolicies() {
  std::vector<PolicySummary> summaries(2);
  summaries[0].policy = "FGD";
  summaries[0].unallocated_at_100 = {4.77, 4.6, 4.9, 10};
  summaries[0].unallocated_at_end = {4.61, 4.5, 4.7, 10};
  summaries[0].decisions_per_sec = 12345.6;
  summaries[0].p99_decision_us = 250;
  summaries[0].curve = {{0, {100, 100, 100, 10}}, {100, {4.77, 4.6, 4.9, 10}}, {130, {4.61, 4.5, 4.7, 10}}};
  summaries[0].seeds = {{42, 4.6, 4.5, 10'800, 900}};
  summaries[1] = summaries[0];
  summaries[1].policy = "FGD+";
  return summaries;
}

ReportInfo Info() {
  return {.nodes_path = "nodes.csv",
          .pods_path = "x/openb_pod_list_default.csv",
          .nodes = 1213,
          .gpus = 6212,
          .pods = 8152,
          .seeds = {42, 43, 44, 50},
          .inflate = 1.3};
}

TEST(ReportTest, SeedsPrintAsRanges) { EXPECT_EQ(FormatSeeds({42, 43, 44, 50, 52, 53}), "42-44,50,52-53"); }

TEST(ReportTest, TableHasOneRowPerPolicy) {
  const std::string table = RenderTable(TwoPolicies(), Info());
  for (const char* expected :
       {"1213 nodes (6212 GPUs)", "seeds 42-44,50", "FGD+", "4.77 (4.60-4.90)", "12,346"}) {
    EXPECT_NE(table.find(expected), std::string::npos) << expected << " missing from:\n" << table;
  }
}

TEST(ReportTest, JsonIsOneObjectPerPolicyWithTheDocumentedFields) {
  const nlohmann::ordered_json json = SummaryJson(TwoPolicies(), Info());
  ASSERT_TRUE(json.is_array());
  ASSERT_EQ(json.size(), 2u);
  EXPECT_EQ(json[1]["policy"], "FGD+");
  EXPECT_EQ(json[0]["unallocated_pct_at_100"], 4.77);
  EXPECT_EQ(json[0]["unallocated_pct_at_130"], 4.61);
  EXPECT_EQ(json[0]["decisions_per_sec"], 12345.6);
  EXPECT_EQ(json[0]["p99_decision_us"], 250);
  EXPECT_EQ(json[0]["per_seed"][0]["seed"], 42);
  EXPECT_EQ(json[0]["trace"]["gpu_count"], 6212);
}

TEST(ReportTest, CurvesAndPlotCoverEveryPolicy) {
  const std::string csv = RenderCurvesCsv(TwoPolicies());
  EXPECT_NE(csv.find("FGD+,130,4.6100"), std::string::npos) << csv;
  const std::string svg = RenderSvgPlot(TwoPolicies(), "title <&>");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("title &lt;&amp;&gt;"), std::string::npos);
  EXPECT_NE(svg.find("FGD+ 4.8% @100"), std::string::npos);
  EXPECT_NE(svg.find("lower is better"), std::string::npos);
  // The second policy's line (and its legend) is dashed, the first's solid: told apart without colour.
  EXPECT_NE(svg.find("stroke-dasharray='8 4'"), std::string::npos);
  EXPECT_EQ(svg.find("stroke-dasharray='none'"), std::string::npos);
}

TEST(AuthorsResultsTest, ReadsTheArtifactFormat) {
  testing::TempFile file("authors.csv",
                         "workload,sc_policy,tune,seed,total_gpus,0,1,100\n"
                         "openb_pod_list_default,06-FGD,1.3,42,6212,0.1,1.0,95.0\n"
                         "openb_pod_list_default,06-FGD,1.3,43,6212,0.1,1.0,96.0\n");
  Result<AuthorsResults> authors = AuthorsResults::Load(file.path());
  ASSERT_TRUE(authors.ok()) << authors.status().message();
  const std::optional<SeedStat> fgd = authors->Unallocated("openb_pod_list_default", "FGD", 100);
  ASSERT_TRUE(fgd.has_value());
  EXPECT_DOUBLE_EQ(fgd->mean, 4.5);
  EXPECT_FALSE(authors->Unallocated("openb_pod_list_default", "FGD", 50).has_value());
  EXPECT_FALSE(authors->Unallocated("openb_pod_list_default", "BestFit", 100).has_value());
  EXPECT_EQ(TraceName("/a/b/openb_pod_list_default.csv"), "openb_pod_list_default");
}

}  // namespace
}  // namespace fgpu::simulate
