// Completion and the man page list every command and option of the tree they are made from.
#include "cli/cli_reference.h"

#include <gtest/gtest.h>

#include "cli/command_line.h"
#include "cli/commands.h"

namespace fgpu::cli {
namespace {

class CliReferenceTest : public ::testing::Test {
 protected:
  CliReferenceTest() : cli_("fgpu: fractional GPU slices with enforced limits") {
    CLI::App& sim = cli_.AddGroup(cli_.root(), "sim", "Simulated GPU");
    cli_.AddLeaf(AddSimRunFlags(sim, &sim_run_), [] { return 0; });
    cli_.AddLeaf(AddRunFlags(cli_.root(), &run_), [] { return 0; });
    cli_.AddLeaf(AddAgentFlags(cli_.root(), &agent_), [] { return 0; });
    CLI::App& slice = cli_.AddGroup(cli_.root(), "slice", "Slices");
    cli_.AddLeaf(AddSliceResizeFlags(slice, &slice_), [] { return 0; });
    cli_.AddLeaf(AddCompletionFlags(cli_.root(), &completion_), [] { return 0; });
    const char* argv[] = {"fgpu", "completion", "bash"};  // a parse adds `help`, as in the binary
    cli_.Parse(3, argv);
  }

  // Every command and every option name of the tree.
  std::vector<std::string> AllWords() {
    std::vector<std::string> words;
    for (const CommandReference& command : DescribeCommands(cli_.root())) {
      for (const std::string& sub : command.subcommands) words.push_back(sub);
      for (const OptionReference& option : command.options) {
        for (const std::string& name : option.names) words.push_back(name);
      }
    }
    return words;
  }

  CommandLine cli_;
  SimRunOptions sim_run_;
  RunOptions run_;
  AgentOptions agent_;
  SliceOptions slice_;
  CompletionOptions completion_;
};

TEST_F(CliReferenceTest, DescribesTheTreeWithChoices) {
  const std::vector<CommandReference> commands = DescribeCommands(cli_.root());
  ASSERT_FALSE(commands.empty());
  EXPECT_TRUE(commands.front().path.empty());
  EXPECT_EQ(commands.front().subcommands, (std::vector<std::string>{"sim", "run", "agent", "slice", "completion", "help"}));
  const auto run = std::find_if(commands.begin(), commands.end(),
                                [](const CommandReference& c) { return c.path == std::vector<std::string>{"run"}; });
  ASSERT_NE(run, commands.end());
  const auto tier = std::find_if(run->options.begin(), run->options.end(),
                                 [](const OptionReference& o) { return o.names == std::vector<std::string>{"--tier"}; });
  ASSERT_NE(tier, run->options.end());
  EXPECT_EQ(tier->choices, (std::vector<std::string>{"latency", "standard", "batch"}));
  EXPECT_FALSE(tier->value_name.empty());
  const auto wait = std::find_if(run->options.begin(), run->options.end(),
                                 [](const OptionReference& o) { return o.names == std::vector<std::string>{"--wait"}; });
  ASSERT_NE(wait, run->options.end());
  EXPECT_TRUE(wait->value_name.empty());
  EXPECT_EQ(run->positionals, (std::vector<std::string>{"command"}));
}

TEST_F(CliReferenceTest, EveryCommandAndOptionIsInTheCompletionsAndTheManPage) {
  const std::string bash = BashCompletion(cli_.root());
  const std::string zsh = ZshCompletion(cli_.root());
  const std::string man = ManPage(cli_.root(), "fgpu 9.9.9");
  for (const std::string& word : AllWords()) {
    EXPECT_NE(bash.find(word), std::string::npos) << word;
    EXPECT_NE(zsh.find(word), std::string::npos) << word;
    std::string roff;  // the man page escapes hyphens
    for (char c : word) roff += c == '-' ? std::string("\\-") : std::string(1, c);
    EXPECT_NE(man.find(roff), std::string::npos) << roff;
  }
  EXPECT_NE(bash.find("_fgpu_choices['fgpu run --tier']='latency standard batch'"), std::string::npos) << bash;
  EXPECT_NE(zsh.find("--tier["), std::string::npos);
  EXPECT_NE(zsh.find("(latency standard batch)"), std::string::npos);
  EXPECT_NE(man.find(".TH FGPU 1"), std::string::npos);
  EXPECT_NE(man.find("fgpu 9.9.9"), std::string::npos);
  EXPECT_NE(man.find(".SS \"fgpu slice resize [OPTIONS] id...\""), std::string::npos) << man;
}

}  // namespace
}  // namespace fgpu::cli
