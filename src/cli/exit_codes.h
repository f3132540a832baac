// Exit statuses shared by every fgpu subcommand, so scripts can tell a usage mistake from
// a failure of the work itself. `fgpu sim run` is the exception: on success it becomes the
// command it runs, so its status is that command's.
#pragma once

namespace fgpu::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;       // the command was understood but did not succeed
inline constexpr int kExitUsage = 2;         // bad flags, arguments or configuration
inline constexpr int kExitCannotExec = 127;  // as in sh: the program to run could not be started

}  // namespace fgpu::cli
