// What `fgpu simulate` shares between its two modes: the progress bar it draws on a terminal
// while runs are in flight, and writing its output files.
#pragma once

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.h"
#include "simulate/runner.h"

namespace fgpu::cli {

// Redraws a one-line progress bar on stderr while runs are in flight (terminals only).
class ProgressBar {
 public:
  explicit ProgressBar(const simulate::Progress& progress)
      : progress_(progress), thread_([this] { Draw(); }) {}
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  ~ProgressBar();

 private:
  void Draw();

  const simulate::Progress& progress_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;
};

// Writes `text` to `path` (replacing it); Unavailable naming the path when it cannot.
Status WriteFile(const std::filesystem::path& path, const std::string& text);

}  // namespace fgpu::cli
