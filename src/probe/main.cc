// fgpu-probe: a CUDA driver API workload that runs unchanged on a real GPU and on
// fgpu's simulated driver. See README.md and docs/probe.md for the output contract.
#include <cstdio>
#include <string>
#include <vector>

#include "probe/command_line.h"
#include "probe/commands.h"
#include "probe/session.h"

namespace {

using fgpu::probe::CommandLine;
using fgpu::probe::CommandName;
using fgpu::probe::ParseOutcome;

int RunCommand(const fgpu::probe::Session& session, const CommandLine& line) {
  switch (line.command) {
    case CommandName::kInfo: return fgpu::probe::RunInfo(session);
    case CommandName::kAlloc: return fgpu::probe::RunAlloc(session, line.alloc);
    case CommandName::kFill: return fgpu::probe::RunFill(session, line.fill);
    case CommandName::kSpin: return fgpu::probe::RunSpin(session, line.spin);
    case CommandName::kSymbols: return fgpu::probe::RunSymbols(session, line.symbols);
    case CommandName::kAttributes: return fgpu::probe::RunAttributes(session);
  }
  return fgpu::probe::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  CommandLine line;
  std::string error;
  switch (fgpu::probe::ParseCommandLine(args, &line, &error)) {
    case ParseOutcome::kHelp:
      std::fputs(fgpu::probe::UsageText(), stdout);
      return fgpu::probe::kExitOk;
    case ParseOutcome::kUsageError:
      std::fprintf(stderr, "fgpu-probe: %s\n\n%s", error.c_str(), fgpu::probe::UsageText());
      return fgpu::probe::kExitUsage;
    case ParseOutcome::kParsed:
      break;
  }
  fgpu::probe::Session session;
  if (!session.Open(line.session)) return fgpu::probe::kExitCudaError;
  return RunCommand(session, line);
}
