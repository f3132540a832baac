#include "cli/command_line.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/exit_codes.h"

namespace fgpu::cli {
namespace {

// The real tree of subcommands, with actions that report which leaf was chosen instead of
// doing the work.
class CommandLineTest : public ::testing::Test {
 protected:
  CommandLineTest() : cli_("test") {
    CLI::App& sim = cli_.AddGroup(cli_.root(), "sim", "");
    const auto chose_sim_run = [] { return 101; };
    cli_.AddLeaf(AddSimRunFlags(sim, &run_), chose_sim_run, kSimRunExtrasHint);
    cli_.AddLeaf(AddSimStatusFlags(sim, &status_), [] { return 102; });
    cli_.AddLeaf(AddSimResetFlags(sim, &reset_), [] { return 103; });
    cli_.AddLeaf(AddDemoFlags(cli_.root(), &demo_), [] { return 104; });
    cli_.AddLeaf(AddVersionFlags(cli_.root()), [] { return 105; });
  }

  // Parses `fgpu args...`; returns the chosen leaf's code, or the parse's exit code.
  int Parse(std::initializer_list<const char*> args) {
    std::vector<const char*> argv = {"fgpu"};
    argv.insert(argv.end(), args.begin(), args.end());
    CommandLine::Parsed parsed = cli_.Parse(static_cast<int>(argv.size()), argv.data());
    return parsed.action ? parsed.action() : parsed.exit_code;
  }

  CommandLine cli_;
  SimRunOptions run_;
  SimStatusOptions status_;
  SimResetOptions reset_;
  DemoOptions demo_;
};

TEST_F(CommandLineTest, SimRunTakesEverythingAfterDoubleDashAsTheCommand) {
  EXPECT_EQ(Parse({"sim", "run", "--config", "d.json", "--segment", "/s", "--", "sh", "-c", "exit 7"}), 101);
  EXPECT_EQ(run_.config, "d.json");
  EXPECT_EQ(run_.segment, "/s");
  EXPECT_EQ(run_.command, (std::vector<std::string>{"sh", "-c", "exit 7"}));
}

TEST_F(CommandLineTest, SimRunPassesOptionsThatLookLikeFgpusToTheCommand) {
  EXPECT_EQ(Parse({"sim", "run", "--", "prog", "--config", "x", "--", "--segment"}), 101);
  EXPECT_TRUE(run_.config.empty());
  EXPECT_EQ(run_.command, (std::vector<std::string>{"prog", "--config", "x", "--", "--segment"}));
}

TEST_F(CommandLineTest, SimRunAcceptsACommandWithoutOptionsWithoutDoubleDash) {
  EXPECT_EQ(Parse({"sim", "run", "true"}), 101);
  EXPECT_EQ(run_.command, (std::vector<std::string>{"true"}));
}

TEST_F(CommandLineTest, SimRunWithoutCommandIsAUsageError) {
  EXPECT_EQ(Parse({"sim", "run"}), kExitUsage);
  EXPECT_EQ(Parse({"sim", "run", "--config", "d.json", "--"}), kExitUsage);
}

TEST_F(CommandLineTest, SimRunCommandOptionsBeforeDoubleDashAreAUsageError) {
  EXPECT_EQ(Parse({"sim", "run", "sh", "-c", "true"}), kExitUsage);
}

TEST_F(CommandLineTest, OptionWithoutValueIsAUsageError) {
  EXPECT_EQ(Parse({"sim", "status", "--config"}), kExitUsage);
}

TEST_F(CommandLineTest, SimStatusFlags) {
  EXPECT_EQ(Parse({"sim", "status", "--json", "--segment", "/x"}), 102);
  EXPECT_TRUE(status_.json);
  EXPECT_EQ(status_.segment, "/x");
  EXPECT_TRUE(status_.config.empty());
}

TEST_F(CommandLineTest, SimStatusDefaultsToATable) {
  EXPECT_EQ(Parse({"sim", "status"}), 102);
  EXPECT_FALSE(status_.json);
}

TEST_F(CommandLineTest, SimResetFlags) {
  EXPECT_EQ(Parse({"sim", "reset", "--config", "c.json"}), 103);
  EXPECT_EQ(reset_.config, "c.json");
}

TEST_F(CommandLineTest, DemoAndVersion) {
  EXPECT_EQ(Parse({"demo", "--config", "c.json"}), 104);
  EXPECT_EQ(demo_.config, "c.json");
  EXPECT_EQ(Parse({"version"}), 105);
}

TEST_F(CommandLineTest, MissingOrUnknownSubcommandIsAUsageError) {
  EXPECT_EQ(Parse({}), kExitUsage);
  EXPECT_EQ(Parse({"sim"}), kExitUsage);
  EXPECT_EQ(Parse({"sim", "launch"}), kExitUsage);
  EXPECT_EQ(Parse({"frobnicate"}), kExitUsage);
  EXPECT_EQ(Parse({"version", "extra"}), kExitUsage);
  EXPECT_EQ(Parse({"sim", "status", "--bogus"}), kExitUsage);
}

TEST_F(CommandLineTest, HelpSucceedsWithoutRunningAnything) {
  testing::internal::CaptureStdout();
  EXPECT_EQ(Parse({"--help"}), kExitOk);
  EXPECT_EQ(Parse({"sim", "run", "--help"}), kExitOk);
  const std::string help = testing::internal::GetCapturedStdout();
  EXPECT_NE(help.find("sim"), std::string::npos);
  EXPECT_NE(help.find("--segment"), std::string::npos);
}

}  // namespace
}  // namespace fgpu::cli
