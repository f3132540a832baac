#include "cli/command_line.h"

#include <iostream>
#include <sstream>

#include "cli/exit_codes.h"
#include "cli/suggest.h"

namespace fgpu::cli {
namespace {

bool LooksLikeOption(const std::string& word) { return word.size() > 1 && word[0] == '-'; }

const CLI::Option* FindOption(const CLI::App& app, const std::string& name) {
  for (const CLI::Option* option : app.get_options()) {
    if (option->nonpositional() && option->check_name(name)) return option;
  }
  return nullptr;
}

const CLI::App* FindCommand(const CLI::App& app, const std::string& name) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App* sub) { return !sub->get_name().empty(); })) {
    if (sub->check_name(name)) return sub;
  }
  return nullptr;
}

std::vector<std::string> OptionNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back(name);
  }
  return names;
}

// `fgpu help run` for a leaf's options, `fgpu help` for the top level's commands.
std::string HelpHint(const CLI::App& app) {
  const std::string path = CommandPath(app);
  return "run `fgpu help" + (path == "fgpu" ? std::string() : path.substr(4)) + "`";
}

std::string UnknownOption(const CLI::App& app, const std::string& word) {
  const std::string name = word.substr(0, word.find('='));
  std::string message = CommandPath(app) + ": unknown option '" + name + "'";
  const std::string bare = name.substr(name.find_first_not_of('-'));
  if (std::optional<std::string> meant = Suggest(bare, OptionNames(app))) return message + "; did you mean '--" + *meant + "'?";
  return message + "; " + HelpHint(app) + " for its options";
}

std::string UnknownCommand(const CLI::App& app, const std::string& word) {
  const std::vector<std::string> commands = CommandNames(app);
  const std::string message = CommandPath(app) + ": unknown command '" + word + "'";
  if (std::optional<std::string> meant = Suggest(word, commands)) return message + "; did you mean '" + *meant + "'?";
  return message + "; the commands are " + JoinChoices(commands);
}

// Whether `option` reads the next word as its value (`--memory 4GiB`, not `--wait`).
bool TakesAValue(const CLI::Option& option, const std::string& word) {
  return option.get_expected_max() > 0 && word.find('=') == std::string::npos;
}

}  // namespace

std::vector<std::string> CommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App* sub) { return !sub->get_name().empty(); })) {
    names.push_back(sub->get_name());
  }
  return names;
}

std::string CommandPath(const CLI::App& app) {
  return app.get_parent() == nullptr ? app.get_name() : CommandPath(*app.get_parent()) + " " + app.get_name();
}

std::optional<std::string> UnknownWordMessage(const CLI::App& root, const std::vector<std::string>& args) {
  const CLI::App* app = &root;
  bool help_or_version = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") break;
    if (LooksLikeOption(word)) {
      const CLI::Option* option = FindOption(*app, word.substr(0, word.find('=')));
      if (option == nullptr) return UnknownOption(*app, word);
      if (option == app->get_help_ptr() || option->get_lnames() == std::vector<std::string>{"version"}) {
        help_or_version = true;
      }
      if (TakesAValue(*option, word)) ++i;
      continue;
    }
    if (CommandNames(*app).empty()) break;  // a leaf's arguments: the rest may be the program's own
    const CLI::App* command = FindCommand(*app, word);
    if (command == nullptr) return UnknownCommand(*app, word);
    app = command;
  }
  if (!help_or_version && !CommandNames(*app).empty()) {
    return CommandPath(*app) + ": a command is required: " + JoinChoices(CommandNames(*app)) + " (" + HelpHint(*app) +
           " for what each does)";
  }
  return std::nullopt;
}

CommandLine::CommandLine(const std::string& description) : root_(description, "fgpu") {
  root_.require_subcommand(1);
  // Usage mistakes get the message plus a pointer to --help, never the whole help text.
  root_.failure_message(CLI::FailureMessage::simple);
}

CLI::App& CommandLine::AddGroup(CLI::App& parent, const std::string& name, const std::string& description) {
  CLI::App* group = parent.add_subcommand(name, description);
  group->require_subcommand(1);
  return *group;
}

void CommandLine::AddLeaf(CLI::App* leaf, Action action, std::string extras_hint) {
  leaves_.push_back({leaf, std::move(action), std::move(extras_hint)});
}

void CommandLine::AddHelpCommand() {
  if (help_added_) return;
  help_added_ = true;
  CLI::App* help = root_.add_subcommand("help", "Show the help of fgpu or of a command: fgpu help run, fgpu help sim run");
  help->add_option("command", help_topic_, "The command, as you would type it");
  AddLeaf(help, [this] { return ShowHelp(); });
  // Set last: a subcommand inherits the footer its parent has when it is added.
  root_.footer("Run `fgpu help COMMAND` for a command's options (docs/cli.md).\n"
               "Exit status: 0 done; 1 refused or failed at run time (no room: try --wait); 2 a usage error.");
}

int CommandLine::ShowHelp() const {
  const CLI::App* app = &root_;
  for (const std::string& word : help_topic_) {
    const CLI::App* command = FindCommand(*app, word);
    if (command == nullptr) {
      std::cerr << UnknownCommand(*app, word) << "\n";
      return kExitUsage;
    }
    app = command;
  }
  // The formatter, not App::help(): that shows the parsed subcommand's help (this one's).
  const std::string parent = app->get_parent() == nullptr ? "" : CommandPath(*app->get_parent()) + " ";
  std::cout << app->get_formatter()->make_help(app, parent + app->get_name(), CLI::AppFormatMode::Normal);
  return kExitOk;
}

CommandLine::Parsed CommandLine::Parse(int argc, const char* const* argv) {
  AddHelpCommand();
  const std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
  if (std::optional<std::string> unknown = UnknownWordMessage(root_, args)) {
    std::cerr << *unknown << "\n";
    return {{}, kExitUsage};
  }
  try {
    root_.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    std::ostringstream out;
    std::ostringstream err;
    const int code = root_.exit(error, out, err);
    std::cout << out.str() << std::flush;
    // Named by the command it is about ("fgpu run: --tier: vip not in {…}"), as our own errors are.
    std::string who = "fgpu";
    for (const Leaf& leaf : leaves_) {
      if (leaf.app->parsed()) who = CommandPath(*leaf.app);
    }
    if (!err.str().empty()) std::cerr << who << ": " << err.str() << std::flush;
    if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
      for (const Leaf& leaf : leaves_) {
        if (leaf.app->parsed() && !leaf.extras_hint.empty()) {
          std::cerr << "fgpu: " << leaf.extras_hint << "\n";
        }
      }
    }
    return {{}, code == 0 ? kExitOk : kExitUsage};
  }
  for (const Leaf& leaf : leaves_) {
    if (leaf.app->parsed()) return {leaf.action, kExitOk};
  }
  // Unreachable while every group requires a subcommand; kept so a wiring mistake is a
  // clear usage error rather than a silent success.
  std::cerr << "fgpu: no command chosen; run `fgpu help`\n";
  return {{}, kExitUsage};
}

int CommandLine::Run(int argc, const char* const* argv) {
  Parsed parsed = Parse(argc, argv);
  return parsed.action ? parsed.action() : parsed.exit_code;
}

}  // namespace fgpu::cli
