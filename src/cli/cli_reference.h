// Shell completion (bash, zsh) and the man page, generated from the CLI's own definitions (the
// CLI11 tree main() builds), so they list exactly the commands and options the parser accepts
// and cannot drift from it. `fgpu completion bash|zsh` and `fgpu man` print them.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace fgpu::cli {

struct OptionReference {
  std::vector<std::string> names;    // "--memory", "-h", "--help"
  std::string value_name;            // "SIZE"-like type name; empty for a flag
  std::vector<std::string> choices;  // from an IsMember check: the only values allowed
  std::string description;
};

struct CommandReference {
  std::vector<std::string> path;  // {"sim", "run"}; empty for fgpu itself
  std::string description;
  std::string footer;
  std::vector<std::string> subcommands;
  std::vector<OptionReference> options;
  std::vector<std::string> positionals;  // "command", "id"
};

// Every command of the tree, parents before children, in the order they were added.
std::vector<CommandReference> DescribeCommands(const CLI::App& root);

std::string BashCompletion(const CLI::App& root);
std::string ZshCompletion(const CLI::App& root);
// fgpu(1) in roff (man -l - reads it).
std::string ManPage(const CLI::App& root, const std::string& version_line);

}  // namespace fgpu::cli
