// fgpu completion bash|zsh and fgpu man: print what cli_reference.h generates from the tree.
#include <iostream>

#include "cli/cli_reference.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"

namespace fgpu::cli {

CLI::App* AddCompletionFlags(CLI::App& root, CompletionOptions* options) {
  CLI::App* completion = root.add_subcommand("completion", "Print the shell completion script for bash or zsh");
  completion->add_option("shell", options->shell, "The shell, one of: bash, zsh")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh"}));
  completion->footer("bash: fgpu completion bash > /usr/share/bash-completion/completions/fgpu (or source <(fgpu completion bash))\n"
                     "zsh:  fgpu completion zsh > \"${fpath[1]}/_fgpu\" (or source <(fgpu completion zsh) after compinit)");
  return completion;
}

int RunCompletion(const CompletionOptions& options, const CLI::App& root) {
  std::cout << (options.shell == "zsh" ? ZshCompletion(root) : BashCompletion(root));
  return kExitOk;
}

CLI::App* AddManFlags(CLI::App& root) {
  CLI::App* man = root.add_subcommand("man", "Print the fgpu(1) man page (roff)");
  man->footer("Read it: fgpu man | man -l -    Install: fgpu man > /usr/share/man/man1/fgpu.1");
  return man;
}

int RunMan(const CLI::App& root) {
  std::cout << ManPage(root, VersionLine());
  return kExitOk;
}

}  // namespace fgpu::cli
