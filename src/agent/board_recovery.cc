// Recovering a GPU's sealed pair from a live process's mappings (see board_recovery.h).
#include "agent/board_recovery.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <set>
#include <utility>

#include "compute/board.h"
#include "compute/board_layout.h"

namespace fgpu::agent {
namespace {

struct Opened {
  int fd = -1;
  uint64_t inode = 0;
};

// The memfd name of a /proc/<pid>/maps line ("... /memfd:NAME (deleted)"), or "".
std::string MemfdName(const std::string& line) {
  const size_t at = line.find("/memfd:");
  if (at == std::string::npos) return "";
  std::string name = line.substr(at + 7);
  const std::string deleted = " (deleted)";
  if (name.size() >= deleted.size() && name.compare(name.size() - deleted.size(), deleted.size(), deleted) == 0) {
    name.resize(name.size() - deleted.size());
  }
  return name;
}

}  // namespace

std::optional<compute::SealedPair> RecoverSealedPair(const std::string& uuid, const std::vector<pid_t>& candidates,
                                                     uid_t owner) {
  const std::string board_name = compute::BoardMemfdName(uuid);
  const std::string policy_name = compute::PolicyMemfdName(uuid);
  std::vector<Opened> boards, policies;
  std::set<std::pair<dev_t, ino_t>> seen;
  const std::set<pid_t> pids(candidates.begin(), candidates.end());
  for (const pid_t pid : pids) {
    if (pid <= 0) continue;
    const std::string proc = "/proc/" + std::to_string(pid);
    std::ifstream maps(proc + "/maps");
    for (std::string line; std::getline(maps, line);) {
      const std::string name = MemfdName(line);
      const bool is_board = name == board_name;
      if (!is_board && name != policy_name) continue;
      const std::string range = line.substr(0, line.find(' '));
      const int fd = ::open((proc + "/map_files/" + range).c_str(), O_RDWR | O_CLOEXEC);
      if (fd < 0) continue;
      struct stat info {};
      const uint64_t size = is_board ? compute::layout::BoardFileSize() : compute::layout::PolicyFileSize();
      if (::fstat(fd, &info) != 0 || !seen.emplace(info.st_dev, info.st_ino).second ||
          !compute::CheckSealed(fd, size, name, /*read_only=*/false, owner).ok()) {
        ::close(fd);
        continue;
      }
      (is_board ? boards : policies).push_back({fd, static_cast<uint64_t>(info.st_ino)});
    }
  }
  // The newest pair whose headers are valid and whose policy names its board.
  std::optional<compute::SealedPair> best;
  int64_t best_created = 0;
  for (const Opened& policy : policies) {
    compute::layout::PolicyHeader header{};
    if (::pread(policy.fd, &header, sizeof(header), 0) != static_cast<ssize_t>(sizeof(header))) continue;
    for (const Opened& board : boards) {
      if (board.inode != header.board_inode) continue;
      Result<compute::Board*> mapped =
          compute::Board::Map(board.fd, policy.fd, uuid, compute::MapOptions{.writable_policy = true, .owner = owner});
      if (!mapped.ok()) continue;
      delete *mapped;
      if (!best || header.created_ns > best_created) {
        best = compute::SealedPair{board.fd, policy.fd};
        best_created = header.created_ns;
      }
    }
  }
  for (const std::vector<Opened>* opened : {&boards, &policies}) {
    for (const Opened& one : *opened) {
      if (!best || (one.fd != best->board && one.fd != best->policy)) ::close(one.fd);
    }
  }
  return best;
}

}  // namespace fgpu::agent
