#include "slice/node_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "slice/layout.h"
#include "slice/ledger_counters.h"
#include "slice/slice_files.h"

#ifndef FGPU_NODE_CONFIG_PATH
#define FGPU_NODE_CONFIG_PATH "/etc/fgpu/node.conf"
#endif

namespace fgpu::slice {

const char kNodeConfigPath[] = FGPU_NODE_CONFIG_PATH;

namespace {

// Every value is shorter than the file, so it fits a PATH_MAX buffer with its NUL (the interposer
// copies compute_dir into one).
static_assert(kNodeConfigMaxBytes <= PATH_MAX);

constexpr const char* kSliceRootKey = "slice_root";
constexpr const char* kComputeDirKey = "compute_dir";
constexpr const char* kPassThroughKey = "pass_through";
constexpr const char* kBoardSocketKey = "board_socket";
constexpr const char* kStrictPriorityKey = "strict_priority";

std::string ErrnoText(int err) { return std::strerror(err); }

std::string Octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::string_view Trim(std::string_view text) {
  while (!text.empty() && IsBlank(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsBlank(text.back())) text.remove_suffix(1);
  return text;
}

// Edit distance, for "did you mean": keys are short, and this runs only on an error.
size_t Distance(std::string_view a, std::string_view b) {
  std::vector<size_t> previous(b.size() + 1, 0), current(b.size() + 1, 0);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitute = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min(substitute, std::min(previous[j], current[j - 1]) + 1);
    }
    std::swap(previous, current);
  }
  return previous[b.size()];
}

// Who may have written what we are about to trust: root, or the tests' stand-in.
bool TrustedOwner(const struct stat& st, const TrustRules& rules) { return st.st_uid == 0 || st.st_uid == rules.owner; }

std::string OwnerProblem(const std::string& path, const struct stat& st) {
  return path + " is owned by uid " + std::to_string(st.st_uid) + ", not root";
}

// A directory on the way to something trusted: nobody but root may add, remove or rename its
// entries. Sticky (/tmp): others may add their own entries but not touch root's.
Status CheckDirectory(const std::string& path, const struct stat& st, const TrustRules& rules, bool sticky_ok) {
  if (S_ISLNK(st.st_mode)) return Status::Unavailable(path + " is a symbolic link");
  if (!S_ISDIR(st.st_mode)) return Status::Unavailable(path + " is not a directory");
  if (!TrustedOwner(st, rules)) return Status::Unavailable(OwnerProblem(path, st));
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && !(sticky_ok && (st.st_mode & S_ISVTX) != 0)) {
    return Status::Unavailable(path + " is writable by group or others (mode " + Octal(st.st_mode) +
                               (sticky_ok ? ", not sticky)" : ")"));
  }
  return Status::Ok();
}

Status CheckFile(const std::string& path, const struct stat& st, const TrustRules& rules) {
  if (S_ISLNK(st.st_mode)) return Status::Unavailable(path + " is a symbolic link");
  if (!S_ISREG(st.st_mode)) return Status::Unavailable(path + " is not a regular file");
  if (!TrustedOwner(st, rules)) return Status::Unavailable(OwnerProblem(path, st));
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return Status::Unavailable(path + " is writable by group or others (mode " + Octal(st.st_mode) + ")");
  }
  return Status::Ok();
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

enum class Leaf { kDirectory, kFile };

// Opens `path` (absolute and resolved) one component at a time from "/", each relative to the
// descriptor of its parent with O_NOFOLLOW, and checks each with fstat on its own descriptor:
// every directory by CheckDirectory (sticky allowed), the last one as `leaf`. What is checked is
// what is opened: a path swapped meanwhile fails a check instead of slipping past it.
// Returns the leaf's descriptor (O_PATH for a directory, O_RDONLY for a file).
Result<int> OpenTrustedPath(const std::string& path, Leaf leaf, const TrustRules& rules) {
  if (path.empty() || path[0] != '/') return Status::InvalidArgument(path + " is not an absolute path");
  Fd current(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (current.get() < 0) return Status::Unavailable("/: " + ErrnoText(errno));
  std::string walked;  // "" stands for "/"
  size_t start = 1;
  for (;;) {
    const std::string here = walked.empty() ? "/" : walked;
    struct stat st {};
    if (::fstat(current.get(), &st) != 0) return Status::Unavailable(here + ": fstat: " + ErrnoText(errno));
    while (start < path.size() && path[start] == '/') ++start;
    const bool last = start >= path.size();
    if (last) {
      Status status = leaf == Leaf::kFile ? CheckFile(here, st, rules) : CheckDirectory(here, st, rules, true);
      if (!status.ok()) return status;
      return current.release();
    }
    if (Status status = CheckDirectory(here, st, rules, true); !status.ok()) return status;
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string name = path.substr(start, end - start);
    if (name == "." || name == "..") return Status::InvalidArgument(path + " is not a resolved path");
    walked += "/" + name;
    size_t after = end;
    while (after < path.size() && path[after] == '/') ++after;
    const bool leaf_next = after >= path.size();
    // O_NONBLOCK: a FIFO planted under the name must not hang us; fstat then refuses it.
    const int flags = leaf_next && leaf == Leaf::kFile ? O_RDONLY | O_NONBLOCK : O_PATH;
    const int next = ::openat(current.get(), name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) {
      const int err = errno;
      if (err == ENOENT) return Status::NotFound(walked + ": no such file or directory");
      if (err == ELOOP) return Status::Unavailable(walked + " is a symbolic link");
      return Status::Unavailable(walked + ": " + ErrnoText(err));
    }
    current.reset(next);
    start = after;
  }
}

// The realpath of `path`; the error says only what went wrong (callers name the path).
Result<std::string> RealPath(const char* path) {
  char resolved[PATH_MAX];
  if (::realpath(path, resolved) == nullptr) {
    const int err = errno;
    if (err == ENOENT) return Status::NotFound("no such file or directory");
    return Status::Unavailable(ErrnoText(err));
  }
  return std::string(resolved);
}

// Reads the configuration at `path` (which exists) through OpenTrustedPath, and parses it.
Result<NodeConfig> ReadTrusted(const char* path, const std::string& source, const TrustRules& rules) {
  Result<std::string> resolved = RealPath(path);
  if (!resolved.ok()) {
    if (resolved.status().code() == StatusCode::kNotFound) return Status::NotFound(source + ": no such file");
    return Status::Unavailable(source + ": " + resolved.status().message());
  }
  Result<int> opened = OpenTrustedPath(*resolved, Leaf::kFile, rules);
  if (!opened.ok()) {
    if (opened.status().code() == StatusCode::kNotFound) return Status::NotFound(source + ": " + opened.status().message());
    return Status::Unavailable(source + " is not trusted: " + opened.status().message() +
                               " (only a file that root alone can change is)");
  }
  Fd fd(*opened);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Status::Unavailable(source + ": fstat: " + ErrnoText(errno));
  if (static_cast<uint64_t>(st.st_size) > kNodeConfigMaxBytes) {
    return Status::InvalidArgument(source + ": " + std::to_string(st.st_size) + " bytes; a node configuration is at most " +
                                   std::to_string(kNodeConfigMaxBytes));
  }
  // One byte more than allowed: a file that grew since the fstat is refused, not cut short.
  char buffer[kNodeConfigMaxBytes + 1];
  size_t length = 0;
  while (length < sizeof(buffer)) {
    const ssize_t got = ::read(fd.get(), buffer + length, sizeof(buffer) - length);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Status::Unavailable(source + ": read: " + ErrnoText(errno));
    if (got == 0) break;
    length += static_cast<size_t>(got);
  }
  return ParseNodeConfig(std::string_view(buffer, length), source);
}

// The name of `resolved` inside `root` (both realpaths) when it is a direct child, else "".
std::string ChildName(const std::string& root, const std::string& resolved) {
  const std::string prefix = root == "/" ? root : root + "/";
  if (resolved.size() <= prefix.size() || resolved.compare(0, prefix.size(), prefix) != 0) return "";
  const std::string name = resolved.substr(prefix.size());
  return name.find('/') == std::string::npos ? name : "";
}

}  // namespace

namespace {

// `all`, or GPU UUIDs separated by commas (no blanks): GPU-… or MIG-…, each at most 47 bytes.
Status ValidateStrictPriority(std::string_view value) {
  const std::string prefix = std::string(kStrictPriorityKey) + " = '" + std::string(value) + "': ";
  if (value == "all") return Status::Ok();
  if (value.empty()) return Status::InvalidArgument(prefix + "give 'all' or GPU UUIDs separated by commas");
  for (size_t start = 0; start <= value.size();) {
    const size_t comma = std::min(value.find(',', start), value.size());
    const std::string_view uuid = value.substr(start, comma - start);
    const bool named = uuid.rfind("GPU-", 0) == 0 || uuid.rfind("MIG-", 0) == 0;
    if (!named || uuid.size() < 5 || uuid.size() > 47) {
      return Status::InvalidArgument(prefix + "'" + std::string(uuid) +
                                     "' is not a GPU UUID (GPU-… or MIG-…); give 'all' or UUIDs separated by commas");
    }
    for (const char c : uuid) {
      if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
        return Status::InvalidArgument(prefix + "a blank or control character (one word: UUIDs separated by commas)");
      }
    }
    start = comma + 1;
  }
  return Status::Ok();
}

}  // namespace

bool StrictPriorityFor(const NodeConfig& config, std::string_view uuid) {
  if (config.strict_priority == "all") return true;
  std::string_view list = config.strict_priority;
  while (!list.empty()) {
    const size_t comma = std::min(list.find(','), list.size());
    if (list.substr(0, comma) == uuid) return true;
    list.remove_prefix(std::min(comma + 1, list.size()));
  }
  return false;
}

Result<NodeConfig> ParseNodeConfig(std::string_view text, std::string_view source) {
  const std::string where(source);
  if (text.size() > kNodeConfigMaxBytes) {
    return Status::InvalidArgument(where + ": " + std::to_string(text.size()) +
                                   " bytes; a node configuration is at most " + std::to_string(kNodeConfigMaxBytes));
  }
  if (text.find('\0') != std::string_view::npos) {
    return Status::InvalidArgument(where + ": contains a NUL byte (not a text file)");
  }
  NodeConfig config;
  int slice_root_line = 0, compute_dir_line = 0, pass_through_line = 0, board_socket_line = 0;
  int strict_priority_line = 0;
  int number = 0;
  for (size_t position = 0; position < text.size();) {
    const size_t newline = text.find('\n', position);
    const size_t end = newline == std::string_view::npos ? text.size() : newline;
    const std::string_view line = Trim(text.substr(position, end - position));
    position = end + 1;
    ++number;
    if (line.empty() || line.front() == '#') continue;
    const std::string at = where + ":" + std::to_string(number) + ": ";
    const size_t equals = line.find('=');
    if (equals == std::string_view::npos) {
      return Status::InvalidArgument(at + "expected 'key = value', got '" + std::string(line) + "'");
    }
    const std::string_view key = Trim(line.substr(0, equals));
    const std::string_view value = Trim(line.substr(equals + 1));
    if (key.empty()) return Status::InvalidArgument(at + "a value without a key: '" + std::string(line) + "'");
    std::string* field = nullptr;
    int* seen = nullptr;
    if (key == kPassThroughKey) {
      if (pass_through_line != 0) {
        return Status::InvalidArgument(at + kPassThroughKey + " is set twice (first at line " +
                                       std::to_string(pass_through_line) + ")");
      }
      if (value != "allow" && value != "deny") {
        return Status::InvalidArgument(at + kPassThroughKey + " must be allow or deny, got '" + std::string(value) + "'");
      }
      config.allow_pass_through = value == "allow";
      pass_through_line = number;
      continue;
    }
    if (key == kStrictPriorityKey) {
      if (strict_priority_line != 0) {
        return Status::InvalidArgument(at + kStrictPriorityKey + " is set twice (first at line " +
                                       std::to_string(strict_priority_line) + ")");
      }
      if (Status valid = ValidateStrictPriority(value); !valid.ok()) return Status::InvalidArgument(at + valid.message());
      config.strict_priority = std::string(value);
      strict_priority_line = number;
      continue;
    }
    if (key == kSliceRootKey) {
      field = &config.slice_root;
      seen = &slice_root_line;
    } else if (key == kComputeDirKey) {
      field = &config.compute_dir;
      seen = &compute_dir_line;
    } else if (key == kBoardSocketKey) {
      field = &config.board_socket;
      seen = &board_socket_line;
    } else {
      std::string message = at + "unknown key '" + std::string(key) + "'";
      const char* nearest = nullptr;
      size_t nearest_distance = 4;  // only a near miss is worth suggesting
      for (const char* known : {kSliceRootKey, kComputeDirKey, kPassThroughKey, kBoardSocketKey, kStrictPriorityKey}) {
        const size_t distance = Distance(key, known);
        if (distance < nearest_distance) {
          nearest = known;
          nearest_distance = distance;
        }
      }
      if (nearest != nullptr) {
        message += std::string("; did you mean ") + nearest + "?";
      } else {
        message += std::string(" (the keys are ") + kSliceRootKey + ", " + kComputeDirKey + ", " + kPassThroughKey +
                   ", " + kBoardSocketKey + " and " + kStrictPriorityKey + ")";
      }
      return Status::InvalidArgument(message);
    }
    const std::string name(key);
    if (*seen != 0) {
      return Status::InvalidArgument(at + name + " is set twice (first at line " + std::to_string(*seen) + ")");
    }
    if (value.empty()) return Status::InvalidArgument(at + name + " has no value");
    for (const char c : value) {
      if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
        return Status::InvalidArgument(at + name + " = '" + std::string(value) +
                                       "' has a blank or control character (a value is one path; a comment must "
                                       "start its own line)");
      }
    }
    if (value.front() != '/') {
      return Status::InvalidArgument(at + name + " must be an absolute path, got '" + std::string(value) + "'");
    }
    *field = std::string(value);
    *seen = number;
  }
  if (slice_root_line == 0) {
    return Status::InvalidArgument(where + ": " + kSliceRootKey +
                                   " is not set (the directory every slice of this node lives under)");
  }
  if (compute_dir_line == 0) {
    return Status::InvalidArgument(where + ": " + kComputeDirKey + " is not set (the directory of this node's compute boards)");
  }
  return config;
}

Result<NodePolicy> LoadNodePolicy(const char* override_path, const char* fixed_path, const TrustRules& rules) {
  NodePolicy policy;
  if (override_path != nullptr && *override_path != '\0') {
    const std::string source = std::string(kNodeConfigEnv) + "=" + override_path;
    if (override_path[0] != '/') return Status::InvalidArgument(source + ": must be an absolute path");
    Result<NodeConfig> config = ReadTrusted(override_path, source, rules);
    if (!config.ok()) return config.status();
    policy.managed = true;
    policy.source = override_path;
    policy.config = std::move(*config);
    return policy;
  }
  if (fixed_path == nullptr || *fixed_path == '\0') return policy;
  struct stat st {};
  if (::lstat(fixed_path, &st) != 0) {
    const int err = errno;
    // Only "nothing there" makes the node unmanaged: a configuration we may not read (a
    // directory above it closed to us) is still the node's policy.
    if (err == ENOENT) return policy;
    return Status::Unavailable(std::string(fixed_path) + ": " + ErrnoText(err));
  }
  Result<NodeConfig> config = ReadTrusted(fixed_path, fixed_path, rules);
  if (!config.ok()) return config.status();
  policy.managed = true;
  policy.source = fixed_path;
  policy.config = std::move(*config);
  return policy;
}

TrustedSlice::TrustedSlice(int fd, std::string real_path)
    : fd_(fd), path_("/proc/self/fd/" + std::to_string(fd)), real_path_(std::move(real_path)) {}

TrustedSlice::TrustedSlice(TrustedSlice&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)), real_path_(std::move(other.real_path_)) {}

TrustedSlice& TrustedSlice::operator=(TrustedSlice&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    real_path_ = std::move(other.real_path_);
  }
  return *this;
}

TrustedSlice::~TrustedSlice() {
  if (fd_ >= 0) ::close(fd_);
}

std::string TrustedSlice::Describe(std::string message) const {
  for (size_t at = message.find(path_); at != std::string::npos; at = message.find(path_, at + real_path_.size())) {
    message.replace(at, path_.size(), real_path_);
  }
  return message;
}

Result<TrustedSlice> OpenTrustedSlice(const NodeConfig& config, const char* slice_dir, const TrustRules& rules) {
  if (slice_dir == nullptr || *slice_dir == '\0') return Status::InvalidArgument("slice directory is empty");
  Result<std::string> resolved = RealPath(slice_dir);
  if (!resolved.ok()) {
    if (resolved.status().code() == StatusCode::kNotFound) return Status::NotFound(std::string(slice_dir) + ": no such directory");
    return Status::Unavailable(std::string(slice_dir) + ": " + resolved.status().message());
  }
  Result<std::string> root = RealPath(config.slice_root.c_str());
  if (!root.ok()) return Status::Unavailable("slice_root " + config.slice_root + ": " + root.status().message());
  const std::string name = ChildName(*root, *resolved);
  if (name.empty()) {
    return Status::Unavailable("not a slice of this node: " + *resolved + " is not a directory directly under slice_root " +
                               *root);
  }
  Result<int> root_fd = OpenTrustedPath(*root, Leaf::kDirectory, rules);
  if (!root_fd.ok()) return Status::Unavailable("slice_root " + *root + " is not trusted: " + root_fd.status().message());
  const Fd parent(*root_fd);
  Fd dir(::openat(parent.get(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir.get() < 0) {
    const int err = errno;
    if (err == ENOENT) return Status::NotFound(*resolved + ": no such directory");
    return Status::Unavailable(*resolved + ": " + ErrnoText(err));
  }
  struct stat st {};
  if (::fstat(dir.get(), &st) != 0) return Status::Unavailable(*resolved + ": fstat: " + ErrnoText(errno));
  // No sticky exception here: whoever may add entries to the slice directory could plant a limits.
  if (Status status = CheckDirectory(*resolved, st, rules, /*sticky_ok=*/false); !status.ok()) return status;
  const std::string limits_path = *resolved + "/" + kLimitsFileName;
  const Fd limits(::openat(dir.get(), kLimitsFileName, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC));
  if (limits.get() < 0) {
    const int err = errno;
    if (err == ENOENT) return Status::NotFound(limits_path + ": no such file");
    if (err == ELOOP) return Status::Unavailable(limits_path + " is a symbolic link");
    return Status::Unavailable(limits_path + ": " + ErrnoText(err));
  }
  if (::fstat(limits.get(), &st) != 0) return Status::Unavailable(limits_path + ": fstat: " + ErrnoText(errno));
  if (Status status = CheckFile(limits_path, st, rules); !status.ok()) return status;
  return TrustedSlice(dir.release(), *resolved);
}

bool CountRefusedNodeSlice(const NodeConfig& config, const char* slice_dir) {
  if (slice_dir == nullptr || *slice_dir == '\0') return false;
  Result<std::string> resolved = RealPath(slice_dir);
  Result<std::string> root = RealPath(config.slice_root.c_str());
  if (!resolved.ok() || !root.ok() || ChildName(*root, *resolved).empty()) return false;
  Result<MappedFile> limits = MapLimits(*resolved + "/" + kLimitsFileName, /*writable=*/false, /*keep_fd=*/false);
  if (!limits.ok()) return false;
  const uint32_t device_count = reinterpret_cast<const layout::LimitsHeader*>(limits->base())->device_count;
  Result<MappedFile> ledger = MapLedger(*resolved + "/" + kLedgerFileName, device_count, /*keep_fd=*/false);
  if (!ledger.ok()) return false;
  CountIn(ledger->base(), Counter::kFailClosedRefusals);
  return true;
}

}  // namespace fgpu::slice
