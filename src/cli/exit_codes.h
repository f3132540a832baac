// Exit statuses shared by every fgpu subcommand, so scripts can tell a usage mistake from
// a failure of the work itself, whichever path the command took (a private slice or the
// agent). `fgpu sim run` and `fgpu run` are the exceptions once the program started: their
// status is then the program's. docs/cli.md "Exit status" is the user's copy of this table.
#pragma once

#include "core/status.h"

namespace fgpu::cli {

inline constexpr int kExitOk = 0;
// Understood, and refused or failed at run time: no room now (--wait would queue), no agent
// answering, a permission the agent denies.
inline constexpr int kExitFailure = 1;
// The command line cannot be right on this machine: an unknown command, option or choice, a
// malformed value, a device or slice that does not exist, a request larger than every GPU
// here (waiting cannot help it).
inline constexpr int kExitUsage = 2;
inline constexpr int kExitCannotExec = 127;  // as in sh: the program to run could not be started

// The exit status for a failed Status: malformed or naming nothing that exists → usage.
inline int ExitCodeOf(const Status& status) {
  return status.code() == StatusCode::kInvalidArgument || status.code() == StatusCode::kNotFound ? kExitUsage
                                                                                                 : kExitFailure;
}

}  // namespace fgpu::cli
