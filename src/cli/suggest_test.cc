#include "cli/suggest.h"

#include <gtest/gtest.h>

namespace fgpu::cli {
namespace {

const std::vector<std::string> kCommands = {"sim", "run", "demo", "simulate", "status", "top", "report", "agent",
                                            "version", "slice", "help"};

TEST(EditDistance, CountsASwapOfNeighboursOnce) {
  EXPECT_EQ(EditDistance("status", "status"), 0u);
  EXPECT_EQ(EditDistance("stauts", "status"), 1u);
  EXPECT_EQ(EditDistance("memroy", "memory"), 1u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
}

TEST(Suggest, MisspeltCommandsAndOptions) {
  EXPECT_EQ(Suggest("stauts", kCommands), "status");
  EXPECT_EQ(Suggest("reprot", kCommands), "report");
  EXPECT_EQ(Suggest("agnet", kCommands), "agent");
  EXPECT_EQ(Suggest("STATUS", kCommands), "status");
  EXPECT_EQ(Suggest("memroy", {"memory", "compute", "compute-mode", "tier"}), "memory");
  EXPECT_EQ(Suggest("compute-mod", {"memory", "compute", "compute-mode", "tier"}), "compute-mode");
}

TEST(Suggest, AnAbbreviationOfOneCommand) {
  EXPECT_EQ(Suggest("vers", kCommands), "version");
  EXPECT_EQ(Suggest("simul", kCommands), "simulate");
}

TEST(Suggest, NothingWhenNothingIsClose) {
  EXPECT_EQ(Suggest("frobnicate", kCommands), std::nullopt);
  EXPECT_EQ(Suggest("x", kCommands), std::nullopt);
  EXPECT_EQ(Suggest("zzz", {}), std::nullopt);
}

TEST(JoinChoices, ReadsAsAList) {
  EXPECT_EQ(JoinChoices({"cap"}), "cap");
  EXPECT_EQ(JoinChoices({"cap", "share"}), "cap or share");
  EXPECT_EQ(JoinChoices({"latency", "standard", "batch"}), "latency, standard or batch");
}

}  // namespace
}  // namespace fgpu::cli
