#include "k8s/plugin/plugin_log.h"

#include <cstdio>
#include <mutex>

namespace fgpu::k8s {

void Log(const char* level, const char* event, std::initializer_list<std::pair<const char*, std::string>> fields) {
  std::string line = std::string("fgpu k8s: ") + level + " " + event;
  for (const auto& [key, value] : fields) {
    std::string cleaned;
    for (char c : value) cleaned += (c == '\n' || c == '\r') ? ' ' : c;
    const bool quote = cleaned.empty() || cleaned.find_first_of(" \"=") != std::string::npos;
    if (quote) {
      std::string escaped;
      for (char c : cleaned) escaped += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
      cleaned = "\"" + escaped + "\"";
    }
    line += std::string(" ") + key + "=" + cleaned;
  }
  line += "\n";
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace fgpu::k8s
