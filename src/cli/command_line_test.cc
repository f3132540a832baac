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
    cli_.AddLeaf(AddRunFlags(cli_.root(), &fgpu_run_), [] { return 106; }, kSimRunExtrasHint);
    cli_.AddLeaf(AddStatusFlags(cli_.root(), &agent_status_), [] { return 107; });
  }

  // Parses and returns what went to stderr; the exit code in *code.
  std::string ParseErr(std::initializer_list<const char*> args, int* code) {
    testing::internal::CaptureStderr();
    *code = Parse(args);
    return testing::internal::GetCapturedStderr();
  }

  std::string ParseOut(std::initializer_list<const char*> args, int* code) {
    testing::internal::CaptureStdout();
    *code = Parse(args);
    return testing::internal::GetCapturedStdout();
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
  RunOptions fgpu_run_;
  StatusOptions agent_status_;
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

TEST_F(CommandLineTest, AMisspeltCommandIsNamedWithTheClosestOne) {
  int code = 0;
  EXPECT_EQ(ParseErr({"stauts"}, &code), "fgpu: unknown command 'stauts'; did you mean 'status'?\n");
  EXPECT_EQ(code, kExitUsage);
  const std::string nested = ParseErr({"sim", "rest"}, &code);
  EXPECT_EQ(code, kExitUsage);
  EXPECT_NE(nested.find("fgpu sim: unknown command 'rest'; did you mean 'reset'?"), std::string::npos) << nested;
}

TEST_F(CommandLineTest, AnUnknownCommandWithNothingCloseListsTheCommands) {
  int code = 0;
  const std::string err = ParseErr({"frobnicate"}, &code);
  EXPECT_EQ(code, kExitUsage);
  EXPECT_NE(err.find("unknown command 'frobnicate'; the commands are sim, demo, version, run, status"),
            std::string::npos) << err;
}

TEST_F(CommandLineTest, AMisspeltOptionIsNamedNotItsNeighbours) {
  int code = 0;
  const std::string err = ParseErr({"run", "--memroy", "4GiB", "--", "true"}, &code);
  EXPECT_EQ(code, kExitUsage);
  EXPECT_EQ(err, "fgpu run: unknown option '--memroy'; did you mean '--memory'?\n");
  EXPECT_NE(ParseErr({"run", "--memroy=4GiB", "--", "true"}, &code).find("'--memroy'"), std::string::npos);
  const std::string far = ParseErr({"sim", "status", "--bogus"}, &code);
  EXPECT_EQ(code, kExitUsage);
  EXPECT_NE(far.find("unknown option '--bogus'; run `fgpu help sim status` for its options"), std::string::npos) << far;
}

TEST_F(CommandLineTest, OptionValuesAndTheProgramsOwnWordsAreNotCheckedAsFgpus) {
  EXPECT_EQ(Parse({"run", "--tenant", "status", "--memory", "4G", "--", "prog", "--memroy"}), 106);
  EXPECT_EQ(fgpu_run_.tenant, "status");
  EXPECT_EQ(fgpu_run_.command, (std::vector<std::string>{"prog", "--memroy"}));
  EXPECT_EQ(Parse({"run", "--memory=4G", "true"}), 106);
  // A flag takes no value: the word after it is checked.
  int code = 0;
  EXPECT_NE(ParseErr({"run", "--wait", "--memroy", "4G", "--", "true"}, &code).find("'--memroy'"), std::string::npos);
  EXPECT_EQ(code, kExitUsage);
}

TEST_F(CommandLineTest, AGroupWithoutACommandListsItsCommands) {
  int code = 0;
  const std::string err = ParseErr({"sim"}, &code);
  EXPECT_EQ(code, kExitUsage);
  EXPECT_NE(err.find("fgpu sim: a command is required: run, status or reset"), std::string::npos) << err;
  EXPECT_NE(ParseErr({}, &code).find("fgpu: a command is required: sim, demo"), std::string::npos);
}

TEST_F(CommandLineTest, HelpCommandShowsTheHelpOfTheCommandNamed) {
  int code = -1;
  EXPECT_NE(ParseOut({"help"}, &code).find("demo"), std::string::npos);
  EXPECT_EQ(code, kExitOk);
  const std::string run = ParseOut({"help", "run"}, &code);
  EXPECT_EQ(code, kExitOk);
  EXPECT_NE(run.find("--memory"), std::string::npos) << run;
  EXPECT_NE(run.find("fgpu run"), std::string::npos) << run;
  EXPECT_NE(ParseOut({"help", "sim", "run"}, &code).find("--segment"), std::string::npos);
  EXPECT_EQ(code, kExitOk);
  EXPECT_NE(ParseErr({"help", "stauts"}, &code).find("did you mean 'status'?"), std::string::npos);
  EXPECT_EQ(code, kExitUsage);
}

TEST_F(CommandLineTest, VersionFlag) {
  int code = -1;
  const std::string out = ParseOut({"--version"}, &code);
  EXPECT_EQ(code, kExitOk);
  EXPECT_EQ(out.rfind("fgpu ", 0), 0u) << out;
}

TEST_F(CommandLineTest, ChoicesAreCheckedAndListed) {
  int code = 0;
  const std::string err = ParseErr({"run", "--tier", "fast", "--", "true"}, &code);
  EXPECT_EQ(code, kExitUsage);
  EXPECT_NE(err.find("latency"), std::string::npos) << err;
  EXPECT_NE(ParseErr({"run", "--compute-mode", "hard", "--", "true"}, &code).find("cap"), std::string::npos);
  EXPECT_EQ(Parse({"run", "--tier", "Batch", "--compute-mode", "cap", "--", "true"}), 106);
  EXPECT_EQ(fgpu_run_.tier, "batch");
  int help = 0;
  const std::string text = ParseOut({"help", "run"}, &help);
  EXPECT_NE(text.find("latency, standard, batch"), std::string::npos) << text;
  EXPECT_NE(text.find("CUDA context"), std::string::npos) << text;
}

TEST(UnknownWordMessageTest, NoneForAWellFormedLine) {
  CLI::App root("test", "fgpu");
  root.add_subcommand("status")->add_option("--agent");
  EXPECT_EQ(UnknownWordMessage(root, {"status", "--agent", "x"}), std::nullopt);
  EXPECT_EQ(UnknownWordMessage(root, {"--help"}), std::nullopt);
  EXPECT_NE(UnknownWordMessage(root, {"status", "--agnet", "x"}), std::nullopt);
}

}  // namespace
}  // namespace fgpu::cli
