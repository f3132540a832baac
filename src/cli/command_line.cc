#include "cli/command_line.h"

#include <iostream>
#include <sstream>

#include "cli/exit_codes.h"

namespace fgpu::cli {

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

CommandLine::Parsed CommandLine::Parse(int argc, const char* const* argv) {
  try {
    root_.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    std::ostringstream out;
    std::ostringstream err;
    const int code = root_.exit(error, out, err);
    std::cout << out.str() << std::flush;
    if (!err.str().empty()) std::cerr << "fgpu: " << err.str() << std::flush;
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
  std::cerr << "fgpu: no command chosen; run `fgpu --help`\n";
  return {{}, kExitUsage};
}

int CommandLine::Run(int argc, const char* const* argv) {
  Parsed parsed = Parse(argc, argv);
  return parsed.action ? parsed.action() : parsed.exit_code;
}

}  // namespace fgpu::cli
