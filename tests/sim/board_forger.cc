// A hostile tenant on a managed node (tests/sim/sealed_board_test.cc): as `--uid`, it asks the
// agent for its GPU's sealed board as the interposer does, tries to truncate it and to write the
// policy table, then for `--seconds` keeps writing the most favourable settings it can into its
// slice's board row (share 100, latency tier) — everything it can map. Prints one JSON line
// ({"event":"forger",...}) with what each attempt did.
//
//   board_forger --socket PATH --uuid GPU --slice DIR --uid N --seconds S
#include <fcntl.h>
#include <grp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "compute/board.h"
#include "compute/board_handout.h"
#include "compute/board_layout.h"
#include "compute/sealed.h"

namespace {

using fgpu::compute::layout::PackModeTier;

std::string Outcome(bool failed) { return failed ? std::strerror(errno) : "succeeded"; }

int Main(int argc, char** argv) {
  std::string socket, uuid, slice;
  uid_t uid = 0;
  double seconds = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--socket") socket = argv[i + 1];
    if (flag == "--uuid") uuid = argv[i + 1];
    if (flag == "--slice") slice = argv[i + 1];
    if (flag == "--uid") uid = static_cast<uid_t>(std::strtoul(argv[i + 1], nullptr, 10));
    if (flag == "--seconds") seconds = std::strtod(argv[i + 1], nullptr);
  }
  if (uid != 0 && (setgroups(0, nullptr) != 0 || setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0)) {
    std::printf("{\"event\":\"forger\",\"error\":\"cannot become uid %u\"}\n", uid);
    return 1;
  }
  fgpu::Result<fgpu::compute::SealedPair> fds = fgpu::compute::RequestBoard(socket, uuid);
  if (!fds.ok()) {
    std::printf("{\"event\":\"forger\",\"refused\":\"%s\"}\n", fds.status().message().c_str());
    return 0;
  }
  errno = 0;
  const std::string truncate = Outcome(::ftruncate(fds->board, 0) != 0);
  void* writable = ::mmap(nullptr, fgpu::compute::layout::PolicyFileSize(), PROT_READ | PROT_WRITE, MAP_SHARED,
                          fds->policy, 0);
  const std::string map_policy = Outcome(writable == MAP_FAILED);
  const std::string self = "/proc/self/fd/" + std::to_string(fds->policy);
  const std::string reopen = Outcome(::open(self.c_str(), O_RDWR | O_CLOEXEC) < 0);
  fgpu::Result<fgpu::compute::Board*> board =
      fgpu::compute::Board::Map(fds->board, fds->policy, uuid, {.writable_policy = false, .owner = 0});
  if (!board.ok()) {
    std::printf("{\"event\":\"forger\",\"error\":\"%s\"}\n", board.status().message().c_str());
    return 1;
  }
  char resolved[PATH_MAX];
  const int row = (*board)->Find(fgpu::compute::SliceKey(::realpath(slice.c_str(), resolved) ? resolved : slice.c_str()));
  const std::string protect = Outcome(::mprotect((*board)->policy_header(), fgpu::compute::layout::PolicyFileSize(),
                                                 PROT_READ | PROT_WRITE) != 0);
  long writes = 0;
  if (row >= 0) {
    fgpu::compute::layout::BoardEntry* entry = (*board)->entry(row);
    const uint32_t latency = PackModeTier(1 /* share mode */, 2 /* latency */);
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
      __atomic_store_n(&entry->share, 100u, __ATOMIC_RELEASE);
      __atomic_store_n(&entry->mode_tier, latency, __ATOMIC_RELEASE);
      ++writes;
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  }
  std::printf(
      "{\"event\":\"forger\",\"row\":%d,\"truncate\":\"%s\",\"map_policy_writable\":\"%s\",\"reopen_policy_rw\":\"%s\","
      "\"mprotect_policy_writable\":\"%s\",\"forged_writes\":%ld,\"policy_share\":%u,\"policy_mode_tier\":%u}\n",
      row, truncate.c_str(), map_policy.c_str(), reopen.c_str(), protect.c_str(), writes,
      row >= 0 ? *(*board)->share_word(row) : 0u, row >= 0 ? *(*board)->mode_tier_word(row) : 0u);
  delete *board;
  fgpu::compute::ClosePair(&*fds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
