// ProbeClient: runs fgpu-probe and reads the JSON-line events it prints on stdout.
//
// The probe's contract (docs/cli.md has the full list): one JSON object per line, each
// with an "event" key; diagnostics on stderr; exit 0 on success, 1 on a CUDA error, 2 on
// bad usage. A line that is not such an object is a broken contract and reported as one.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "cli/child_process.h"
#include "core/status.h"

namespace fgpu::cli {

class ProbeProcess {
 public:
  ProbeProcess(ChildProcess child, std::string description)
      : child_(std::move(child)), description_(std::move(description)) {}

  pid_t pid() const { return child_.pid(); }
  // "fgpu-probe alloc --bytes 20GiB", for messages.
  const std::string& description() const { return description_; }

  // Reads events until one named `event` arrives and returns it (earlier ones are kept in
  // events()). Corrupt for a malformed line; Unavailable if the probe closes stdout first
  // (naming its exit status) or the deadline passes.
  Result<nlohmann::json> WaitForEvent(std::string_view event, Deadline deadline);
  // Reads the remaining events and waits for the exit. OK only for exit status 0.
  Status Finish(Deadline deadline);

  const std::vector<nlohmann::json>& events() const { return events_; }
  // The last event named `event` read so far, or nullptr.
  const nlohmann::json* LastEvent(std::string_view event) const;

 private:
  // Reads one line. nullptr at end of output.
  Result<const nlohmann::json*> ReadEvent(Deadline deadline);
  std::string ExitDescription(Deadline deadline);

  ChildProcess child_;
  std::string description_;
  std::vector<nlohmann::json> events_;
};

class ProbeClient {
 public:
  explicit ProbeClient(std::string probe_path) : probe_path_(std::move(probe_path)) {}
  const std::string& path() const { return probe_path_; }

  // Starts `fgpu-probe args...` with this process's environment.
  Result<ProbeProcess> Start(const std::vector<std::string>& args) const;
  // Start + Finish: every event of a probe that must exit 0.
  Result<std::vector<nlohmann::json>> Run(const std::vector<std::string>& args, Deadline deadline) const;

 private:
  std::string probe_path_;
};

// The last of `events` named `name`, or nullptr.
const nlohmann::json* FindLastEvent(const std::vector<nlohmann::json>& events, std::string_view name);

// Reads typed fields of one event by dotted path ("mem_get_info.free"). A missing or
// mistyped field reads as zero / empty and is remembered: a step reads everything it needs,
// then checks status() once, which names the first bad field and quotes the event.
class EventReader {
 public:
  explicit EventReader(const nlohmann::json& event) : event_(event) {}

  uint64_t Uint(std::string_view path);
  double Number(std::string_view path);
  std::string String(std::string_view path);
  bool Bool(std::string_view path);
  const nlohmann::json& Array(std::string_view path);

  Status status() const { return status_; }

 private:
  const nlohmann::json* Find(std::string_view path) const;
  void Fail(std::string_view path, const char* expected);

  const nlohmann::json& event_;
  Status status_;
};

}  // namespace fgpu::cli
