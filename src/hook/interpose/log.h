// The interposer's only output: one line "fgpu: <message>" on stderr, for real problems.
//
// Contract: formats into a stack buffer (vsnprintf, no allocation) and writes it with a
// single write(2), so lines of concurrent threads or processes do not interleave; a message
// longer than the buffer is truncated, never split. Never writes to stdout. Safe to call
// from any wrapper and from the hook's init.
#pragma once

namespace fgpu::hook {

void LogProblem(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace fgpu::hook
