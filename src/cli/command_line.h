// CommandLine: fgpu's tree of subcommands. Every leaf (`sim run`, `version`, ...) registers
// the action that runs when it is chosen, so main() only wires and each subcommand keeps
// its flags and its work in its own file.
//
// Parsing never runs an action by itself (unlike CLI11 callbacks): tests parse argv and
// inspect the options a leaf filled without running anything.
//
// It guides: a word that names no command or option is named, with the closest one that
// exists (`fgpu stauts` → "did you mean 'status'?"), before CLI11 sees it (whose messages for
// those are "A subcommand is required" and "The following argument was not expected"); `fgpu
// help [CMD...]` prints a command's help (added last, so it lists last).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fgpu::cli {

class CommandLine {
 public:
  using Action = std::function<int()>;

  explicit CommandLine(const std::string& description);
  CommandLine(const CommandLine&) = delete;
  CommandLine& operator=(const CommandLine&) = delete;

  CLI::App& root() { return root_; }
  // An inner node that only groups leaves (`fgpu sim ...`); one of its leaves is required.
  CLI::App& AddGroup(CLI::App& parent, const std::string& name, const std::string& description);
  // `leaf` belongs to this tree; `action` returns the process exit status. `extras_hint`,
  // if any, is printed when the leaf is given arguments it does not take.
  void AddLeaf(CLI::App* leaf, Action action, std::string extras_hint = "");

  struct Parsed {
    Action action;      // empty when parsing ended the run (help, usage error)
    int exit_code = 0;  // meaningful only when `action` is empty
  };
  // Parses argv (argv[0] is the program name). Help goes to stdout with status 0; usage
  // errors go to stderr with kExitUsage.
  Parsed Parse(int argc, const char* const* argv);
  // Parse, then run the chosen leaf.
  int Run(int argc, const char* const* argv);

 private:
  struct Leaf {
    CLI::App* app;
    Action action;
    std::string extras_hint;
  };
  void AddHelpCommand();
  int ShowHelp() const;

  CLI::App root_;
  std::vector<Leaf> leaves_;
  std::vector<std::string> help_topic_;  // `fgpu help sim run` → {"sim", "run"}
  bool help_added_ = false;
};

// Why `args` (argv without the program name) cannot be right, naming the first word that is no
// command or option where it stands and the closest one that is; none when every word up to
// the first argument of a leaf (or `--`) is known. "a command is required" for a group left
// without one, unless help or the version was asked for.
std::optional<std::string> UnknownWordMessage(const CLI::App& root, const std::vector<std::string>& args);

// The subcommands of `app` a user can name, in the order they were added.
std::vector<std::string> CommandNames(const CLI::App& app);
// "fgpu sim run" for the `run` under `sim`.
std::string CommandPath(const CLI::App& app);

}  // namespace fgpu::cli
