// Small socket helpers shared by the server and the client: deadline-bounded reads and
// writes that never raise SIGPIPE, and address formatting.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace fgpu::net {

int64_t NowMs();

// Writes all of `bytes` before `deadline_ms` (NowMs clock). False on error or timeout.
bool WriteAll(int fd, std::string_view bytes, int64_t deadline_ms);

// Reads what is available, waiting until `deadline_ms`. >0 bytes read, 0 peer closed,
// -1 error, -2 timed out.
long ReadSome(int fd, char* buffer, unsigned long size, int64_t deadline_ms);

}  // namespace fgpu::net
