// Process-level test support for the memory hook: a private simulated machine (config,
// segment) with slices of it, and fgpu-probe processes run on it — with or without
// LD_PRELOAD=libfgpu.so — in the background, their JSON lines read while they run.
// Tests only (compiled into fgpu_hook_test, never into libfgpu.so).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "slice/slice.h"

extern char** environ;

namespace fgpu::hook::testing {

inline constexpr uint64_t kMiBytes = uint64_t{1} << 20;

// A probe (or any program) running in the background with its stdout/stderr in files.
class BackgroundProcess {
 public:
  BackgroundProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                    const std::string& output_prefix)
      : out_path_(output_prefix + ".out"), err_path_(output_prefix + ".err") {
    std::vector<std::string> env_storage;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry(*e);
      if (entry.rfind("LD_PRELOAD=", 0) == 0 || entry.rfind("LD_LIBRARY_PATH=", 0) == 0 ||
          entry.rfind("FGPU_", 0) == 0 || entry.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0 ||
          entry.rfind("ASAN_OPTIONS=", 0) == 0) {
        continue;
      }
      env_storage.push_back(entry);
    }
#if defined(__SANITIZE_ADDRESS__)
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
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&actions, 2, err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), envp.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    EXPECT_GT(pid_, 0) << "cannot start " << argv[0];
  }
  ~BackgroundProcess() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    unlink(out_path_.c_str());
    unlink(err_path_.c_str());
  }
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  pid_t pid() const { return pid_; }

  // The JSON lines printed so far.
  std::vector<nlohmann::json> Events() const {
    std::vector<nlohmann::json> events;
    std::ifstream out(out_path_);
    for (std::string line; std::getline(out, line);) {
      nlohmann::json parsed = nlohmann::json::parse(line, nullptr, false);
      if (!parsed.is_discarded()) events.push_back(std::move(parsed));
    }
    return events;
  }
  // The last event named `name` printed so far, or null.
  nlohmann::json Event(const std::string& name) const {
    const std::vector<nlohmann::json> events = Events();
    for (auto it = events.rbegin(); it != events.rend(); ++it) {
      if (it->value("event", "") == name) return *it;
    }
    return nullptr;
  }
  // Waits until an event named `name` is printed; false if the process ends first or on timeout.
  bool WaitForEvent(const std::string& name, int timeout_ms = 20000) {
    for (int waited = 0; waited < timeout_ms; waited += 5) {
      if (!Event(name).is_null()) return true;
      if (!reaped_ && waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
      if (reaped_) return !Event(name).is_null();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }
  // Exit status (128 + signal when killed).
  int Wait() {
    if (!reaped_ && waitpid(pid_, &status_, 0) == pid_) reaped_ = true;
    return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
  }
  void Kill() const { kill(pid_, SIGKILL); }
  std::string Stderr() const {
    std::ifstream err(err_path_);
    std::stringstream text;
    text << err.rdbuf();
    return text.str();
  }

 private:
  std::string out_path_;
  std::string err_path_;
  pid_t pid_ = -1;
  int status_ = 0;
  bool reaped_ = false;
};

// A private simulated machine: a config, a segment of its own and a scratch directory.
class SimMachine {
 public:
  // `devices_json`: the config's "devices" array.
  explicit SimMachine(const std::string& devices_json) {
    std::string pattern = (std::filesystem::temp_directory_path() / "fgpu-hookmem-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp failed";
      return;
    }
    dir_ = pattern;
    config_ = dir_ + "/sim.json";
    std::ofstream(config_) << R"({"devices": )" << devices_json << "}";
    segment_ = "/fgpu-hookmem-" + std::to_string(getpid()) + "-" + std::to_string(counter_++);
  }
  ~SimMachine() {
    shm_unlink(segment_.c_str());
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  SimMachine(const SimMachine&) = delete;
  SimMachine& operator=(const SimMachine&) = delete;

  // Creates a slice with one device (by UUID) and cap; returns its directory.
  std::string CreateSlice(const std::string& name, const std::string& uuid, uint64_t cap) {
    const std::string slice_dir = dir_ + "/" + name;
    slice::SliceSpec spec;
    spec.id = name;
    spec.devices.push_back({uuid, cap, 100});
    Result<slice::SliceAdmin> admin = slice::SliceAdmin::Create(slice_dir, spec);
    EXPECT_TRUE(admin.ok()) << admin.status().message();
    return slice_dir;
  }

  std::vector<std::string> SimEnv() const {
    return {std::string("LD_LIBRARY_PATH=") + FGPU_SIM_LIBDIR, "FGPU_SIM_SEGMENT=" + segment_,
            "FGPU_SIM_CONFIG=" + config_};
  }
  // The environment of a workload under the hook in `slice_dir`, plus `extra`.
  std::vector<std::string> HookedEnv(const std::string& slice_dir,
                                     const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> env = SimEnv();
    env.push_back(std::string("LD_PRELOAD=") + FGPU_HOOK_PATH);
    env.push_back("FGPU_SLICE=" + slice_dir);
    env.insert(env.end(), extra.begin(), extra.end());
    return env;
  }

  // Starts fgpu-probe with `args` in `env`.
  std::unique_ptr<BackgroundProcess> Probe(const std::vector<std::string>& args,
                                           const std::vector<std::string>& env) {
    std::vector<std::string> argv = {FGPU_PROBE_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    return std::make_unique<BackgroundProcess>(argv, env, dir_ + "/probe-" + std::to_string(runs_++));
  }
  // Runs fgpu-probe to completion; its exit code in *exit_code.
  std::vector<nlohmann::json> RunProbe(const std::vector<std::string>& args,
                                       const std::vector<std::string>& env, int* exit_code,
                                       std::string* err = nullptr) {
    std::unique_ptr<BackgroundProcess> probe = Probe(args, env);
    *exit_code = probe->Wait();
    if (err != nullptr) *err = probe->Stderr();
    return probe->Events();
  }

 private:
  static inline int counter_ = 0;
  std::string dir_;
  std::string config_;
  std::string segment_;
  int runs_ = 0;
};

// The last event named `name` in `events`, or null.
inline nlohmann::json FindEvent(const std::vector<nlohmann::json>& events, const std::string& name) {
  for (auto it = events.rbegin(); it != events.rend(); ++it) {
    if (it->value("event", "") == name) return *it;
  }
  return nullptr;
}

// The simulator's own per-process usage of `pid`, read by a probe without the hook.
inline uint64_t PhysicalUsage(SimMachine& machine, pid_t pid) {
  int exit_code = -1;
  const nlohmann::json info = FindEvent(machine.RunProbe({"info"}, machine.SimEnv(), &exit_code), "info");
  EXPECT_EQ(exit_code, 0);
  if (info.is_null()) return UINT64_MAX;
  for (const nlohmann::json& process : info["nvml"]["processes"]) {
    if (process["pid"].get<pid_t>() == pid) return process["used"].get<uint64_t>();
  }
  ADD_FAILURE() << "pid " << pid << " not in " << info.dump();
  return UINT64_MAX;
}

// What the slice's ledger says its first device uses.
inline uint64_t SliceUsed(const std::string& slice_dir) {
  Result<slice::SliceAdmin> admin = slice::SliceAdmin::Open(slice_dir);
  EXPECT_TRUE(admin.ok()) << admin.status().message();
  return admin.ok() ? admin->Usage().used.at(0) : UINT64_MAX;
}

}  // namespace fgpu::hook::testing
