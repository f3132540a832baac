#include "cli/progress_bar.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>

namespace fgpu::cli {

ProgressBar::~ProgressBar() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  wake_.notify_one();
  thread_.join();
  std::fputs("\r\033[K", stderr);
}

void ProgressBar::Draw() {
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, std::chrono::milliseconds(200), [this] { return done_; })) {
    const double total = static_cast<double>(std::max<int64_t>(progress_.pods_total.load(), 1));
    const double fraction = std::min(1.0, static_cast<double>(progress_.pods_done.load()) / total);
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const int filled = static_cast<int>(fraction * 30);
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(30, '.');
    const double eta = fraction > 0.01 ? elapsed * (1 - fraction) / fraction : 0;
    std::fprintf(stderr, "\r[%s] %3.0f%%  %d/%d runs  %.0fs elapsed, ~%.0fs left\033[K", bar.c_str(),
                 100 * fraction, progress_.runs_done.load(), progress_.runs_total.load(), elapsed, eta);
    std::fflush(stderr);
  }
}


Status WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return Status::Unavailable("cannot write " + path.string());
  return Status::Ok();
}

}  // namespace fgpu::cli
