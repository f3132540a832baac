// Spawns fgpu-probe on the simulated driver and collects its JSON lines: the harness of
// the multi-process simulator tests.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace fgpu::testing {

struct ProbeResult {
  int exit_code = -1;
  std::vector<nlohmann::json> events;
  std::string stderr_text;

  // The last event named `name`, or null.
  nlohmann::json Event(const std::string& name) const {
    for (auto it = events.rbegin(); it != events.rend(); ++it) {
      if (it->value("event", "") == name) return *it;
    }
    return nullptr;
  }
};

// A program started on the simulated GPU (LD_LIBRARY_PATH to the simulated driver, a private
// segment and config), its stdout and stderr captured to files.
class RunningProbe {
 public:
  // Runs fgpu-probe with `args`.
  RunningProbe(const std::string& segment, const std::string& config, const std::vector<std::string>& args)
      : RunningProbe(segment, config, WithProbe(args), {}) {}

  // Runs `argv` (argv[0] a path) with `extra_env` ("NAME=value") added.
  RunningProbe(const std::string& segment, const std::string& config, const std::vector<std::string>& argv_in,
               const std::vector<std::string>& extra_env) {
    out_path_ = "/tmp/fgpu-probe-" + std::to_string(getpid()) + "-" + std::to_string(counter_++);
    std::vector<std::string> env_storage;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry(*e);
      if (entry.rfind("LD_LIBRARY_PATH=", 0) == 0 || entry.rfind("FGPU_SIM_", 0) == 0) continue;
      env_storage.push_back(entry);
    }
    env_storage.push_back(std::string("LD_LIBRARY_PATH=") + FGPU_SIM_LIBDIR);
    env_storage.push_back("FGPU_SIM_SEGMENT=" + segment);
    if (!config.empty()) env_storage.push_back("FGPU_SIM_CONFIG=" + config);
    env_storage.insert(env_storage.end(), extra_env.begin(), extra_env.end());
    std::vector<char*> envp;
    for (auto& entry : env_storage) envp.push_back(entry.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_storage = argv_in;
    std::vector<char*> argv;
    for (auto& arg : argv_storage) argv.push_back(arg.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, (out_path_ + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&actions, 2, (out_path_ + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~RunningProbe() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    unlink((out_path_ + ".out").c_str());
    unlink((out_path_ + ".err").c_str());
  }
  RunningProbe(const RunningProbe&) = delete;
  RunningProbe& operator=(const RunningProbe&) = delete;

  static std::vector<std::string> WithProbe(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {FGPU_PROBE_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  pid_t pid() const { return pid_; }
  void Kill() { kill(pid_, SIGKILL); }

  ProbeResult Wait() {
    ProbeResult result;
    int status = 0;
    if (pid_ > 0 && waitpid(pid_, &status, 0) == pid_) {
      reaped_ = true;
      result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::ifstream out(out_path_ + ".out");
    for (std::string line; std::getline(out, line);) {
      auto parsed = nlohmann::json::parse(line, nullptr, false);
      if (!parsed.is_discarded()) result.events.push_back(parsed);
    }
    std::ifstream err(out_path_ + ".err");
    std::stringstream text;
    text << err.rdbuf();
    result.stderr_text = text.str();
    return result;
  }

  // Waits until the probe printed an event named `name` (e.g. "mem_get_info" while holding).
  bool WaitForEvent(const std::string& name, int timeout_ms = 20000) {
    for (int waited = 0; waited < timeout_ms; waited += 20) {
      std::ifstream out(out_path_ + ".out");
      for (std::string line; std::getline(out, line);) {
        if (line.find("\"event\":\"" + name + "\"") != std::string::npos) return true;
      }
      usleep(20'000);
    }
    return false;
  }

 private:
  static inline int counter_ = 0;
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::string out_path_;
};

inline ProbeResult RunProbe(const std::string& segment, const std::string& config,
                            const std::vector<std::string>& args) {
  RunningProbe probe(segment, config, args);
  return probe.Wait();
}

}  // namespace fgpu::testing
