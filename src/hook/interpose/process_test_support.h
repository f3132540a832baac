// Process-level test support for the interposer: a private simulated GPU, a slice, and
// programs run under LD_PRELOAD=libfgpu.so with their exit status, stdout and stderr.
// Tests only (compiled into fgpu_hook_test, never into libfgpu.so).
#pragma once

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "slice/slice.h"

extern char** environ;

namespace fgpu::hook::testing {

inline constexpr const char* kDeviceUuid = "GPU-6f6b6f6b-0000-4000-8000-00000000f9a1";

struct ProcessResult {
  int exit_code = -1;  // 128 + signal when killed
  std::string out;
  std::string err;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// One simulated GPU on a private segment, a scratch directory and (on demand) a slice of it.
class HookEnvironment {
 public:
  HookEnvironment() {
    std::string pattern = (std::filesystem::temp_directory_path() / "fgpu-hook-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp failed";
      return;
    }
    dir_ = pattern;
    config_ = dir_ + "/sim.json";
    std::ofstream(config_) << R"({"devices": [{"uuid": ")" << kDeviceUuid
                           << R"(", "memory": "8GiB", "context_overhead": "100MiB"}]})";
    segment_ = "/fgpu-hook-test-" + std::to_string(getpid()) + "-" + std::to_string(counter_++);
  }
  ~HookEnvironment() {
    shm_unlink(segment_.c_str());
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  HookEnvironment(const HookEnvironment&) = delete;
  HookEnvironment& operator=(const HookEnvironment&) = delete;

  const std::string& dir() const { return dir_; }

  // Creates a one-device slice of the simulated GPU; returns its directory.
  std::string CreateSlice(uint64_t cap = uint64_t{6} << 30) { return CreateSliceAt(dir_ + "/slice", cap); }
  // The same at `path` (its parent must exist), with a compute share.
  std::string CreateSliceAt(const std::string& path, uint64_t cap, uint32_t share = 100) {
    slice::SliceSpec spec;
    spec.id = "hook-test";
    spec.devices.push_back({kDeviceUuid, cap, share});
    Result<slice::SliceAdmin> admin = slice::SliceAdmin::Create(path, spec);
    EXPECT_TRUE(admin.ok()) << admin.status().message();
    // As a node's slice is (docs/hook.md "Managed nodes"), whatever the umask.
    EXPECT_EQ(::chmod(path.c_str(), 0755), 0) << path;
    return path;
  }

  // Lets `uid` run programs here (RunAs): the scratch directory 0755, so that it can read the
  // simulator's configuration, and the simulator's segment its own if it exists (the simulator
  // creates it 0600 for whoever comes first).
  void ShareWith(uid_t uid, gid_t gid) const {
    EXPECT_EQ(::chmod(dir_.c_str(), 0755), 0);
    const int fd = shm_open(segment_.c_str(), O_RDWR, 0);
    if (fd >= 0) {
      EXPECT_EQ(::fchown(fd, uid, gid), 0);
      ::close(fd);
    }
  }

  // Runs argv[0] on the simulated GPU with `env` added ("NAME=value"), after removing every
  // inherited LD_PRELOAD, LD_LIBRARY_PATH and FGPU_* so only the test decides them.
  ProcessResult Run(const std::vector<std::string>& argv, const std::vector<std::string>& env) const {
    return Start(argv, env, nullptr);
  }
  // The same as another user (root only): no supplementary groups, `uid`/`gid` set before exec,
  // the way a job launcher starts a tenant's program.
  ProcessResult RunAs(uid_t uid, gid_t gid, const std::vector<std::string>& argv,
                      const std::vector<std::string>& env) const {
    const Identity identity{uid, gid};
    return Start(argv, env, &identity);
  }

 private:
  struct Identity {
    uid_t uid;
    gid_t gid;
  };

  ProcessResult Start(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                      const Identity* identity) const {
    std::vector<std::string> env_storage;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry(*e);
      if (entry.rfind("LD_PRELOAD=", 0) == 0 || entry.rfind("LD_LIBRARY_PATH=", 0) == 0 ||
          entry.rfind("FGPU_", 0) == 0 || entry.rfind("ASAN_OPTIONS=", 0) == 0) {
        continue;
      }
      env_storage.push_back(entry);
    }
    env_storage.push_back(std::string("LD_LIBRARY_PATH=") + FGPU_SIM_LIBDIR);
    env_storage.push_back("FGPU_SIM_SEGMENT=" + segment_);
    env_storage.push_back("FGPU_SIM_CONFIG=" + config_);
#if defined(__SANITIZE_ADDRESS__)
    // An instrumented libfgpu.so preloaded ahead of the sanitizer runtime the program links.
    env_storage.push_back("ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0");
#endif
    env_storage.insert(env_storage.end(), env.begin(), env.end());
    std::vector<char*> envp;
    for (std::string& entry : env_storage) envp.push_back(entry.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_storage = argv;
    std::vector<char*> args;
    for (std::string& arg : argv_storage) args.push_back(arg.data());
    args.push_back(nullptr);

    const std::string out_path = dir_ + "/out", err_path = dir_ + "/err";
    pid_t pid = -1;
    int spawned = 0;
    if (identity == nullptr) {
      posix_spawn_file_actions_t actions;
      posix_spawn_file_actions_init(&actions);
      posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      spawned = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
      posix_spawn_file_actions_destroy(&actions);
    } else {
      // Output files opened before the identity changes (the scratch directory is root's).
      const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      pid = fork();
      if (pid == 0) {
        // Only async-signal-safe calls between fork and exec.
        if (::dup2(out, 1) < 0 || ::dup2(err, 2) < 0 || ::setgroups(0, nullptr) != 0 || ::setgid(identity->gid) != 0 ||
            ::setuid(identity->uid) != 0) {
          _exit(126);
        }
        ::execve(args[0], args.data(), envp.data());
        _exit(127);
      }
      ::close(out);
      ::close(err);
      spawned = pid > 0 ? 0 : errno;
    }
    ProcessResult result;
    if (spawned != 0) {
      ADD_FAILURE() << "cannot start " << argv[0];
      return result;
    }
    int status = 0;
    if (waitpid(pid, &status, 0) == pid) {
      result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    result.out = ReadFile(out_path);
    result.err = ReadFile(err_path);
    return result;
  }

  static inline int counter_ = 0;
  std::string dir_;
  std::string config_;
  std::string segment_;
};

inline std::string Preload() { return std::string("LD_PRELOAD=") + FGPU_HOOK_PATH; }

}  // namespace fgpu::hook::testing
