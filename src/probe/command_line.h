// The probe's command line:
//   fgpu-probe [--device N] [--lookup MODE] [--cuda-version V] COMMAND [ARGS]
// parsed completely before the driver is touched, so bad usage exits 2 without
// loading anything.
//
// Contract
// - Global options come before COMMAND; command options after it. Every option takes
//   a value, as `--name VALUE` or `--name=VALUE`. Unknown options, missing or
//   malformed values, repeated options and positional arguments are usage errors.
// - ParseCommandLine returns kParsed, kHelp (--help/-h anywhere) or kUsageError with
//   a one-line message.
#ifndef FGPU_PROBE_COMMAND_LINE_H_
#define FGPU_PROBE_COMMAND_LINE_H_

#include <string>
#include <vector>

#include "probe/commands.h"
#include "probe/session.h"

namespace fgpu::probe {

enum class CommandName { kInfo, kAlloc, kFill, kSpin, kSymbols, kAttributes };

struct CommandLine {
  SessionOptions session;
  CommandName command = CommandName::kInfo;
  AllocOptions alloc;
  FillOptions fill;
  SpinOptions spin;
  SymbolsOptions symbols;
};

enum class ParseOutcome { kParsed, kHelp, kUsageError };

ParseOutcome ParseCommandLine(const std::vector<std::string>& args, CommandLine* line, std::string* error);

// The usage text printed by --help (stdout) and after a usage error (stderr).
const char* UsageText();

}  // namespace fgpu::probe

#endif  // FGPU_PROBE_COMMAND_LINE_H_
