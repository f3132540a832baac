// Test support: a short-lived directory short enough for Unix socket paths (sun_path is 108
// bytes, so not under a long build tree).
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace fgpu::k8s::testing {

class SocketDir {
 public:
  SocketDir() {
    char tmpl[] = "/tmp/fgpu-k8s-XXXXXX";
    path_ = mkdtemp(tmpl) ? tmpl : "";
  }
  ~SocketDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  SocketDir(const SocketDir&) = delete;
  SocketDir& operator=(const SocketDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace fgpu::k8s::testing
