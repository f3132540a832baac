// Test helpers: temporary files with given contents, the checked-in small trace (tests only).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "simulate/replay.h"

namespace fgpu::simulate::testing {

// A file under the test's temporary directory, removed when the object goes.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& contents) {
    const char* tmp = std::getenv("TMPDIR");
    path_ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/fgpu-simulate-" +
            std::to_string(getpid()) + "-" + name;
    std::ofstream(path_) << contents;
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::string SmallNodes() { return std::string(FGPU_SIMULATE_TESTDATA) + "/nodes.csv"; }
inline std::string SmallPods() { return std::string(FGPU_SIMULATE_TESTDATA) + "/pods.csv"; }

// The small trace loaded once per test binary (read-only, as runs use a Scenario).
inline const Scenario& SmallScenario() {
  static const Scenario* scenario = [] {
    Result<Scenario> loaded = Scenario::Load(SmallNodes(), SmallPods());
    EXPECT_TRUE(loaded.ok()) << loaded.status().message();
    return new Scenario(std::move(*loaded));
  }();
  return *scenario;
}

}  // namespace fgpu::simulate::testing
