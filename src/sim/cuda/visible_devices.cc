#include "sim/cuda/visible_devices.h"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace fgpu::sim::cuda {
namespace {

std::string_view Trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

bool StartsWithIgnoringCase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) != std::tolower(static_cast<unsigned char>(prefix[i]))) {
      return false;
    }
  }
  return true;
}

// The physical index an entry names, or -1 if it names none (or several, for a short UUID prefix).
int Resolve(std::string_view entry, const std::vector<std::string>& uuids) {
  if (!entry.empty() && std::all_of(entry.begin(), entry.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    if (entry.size() > 4) return -1;
    const int index = std::stoi(std::string(entry));
    return index < static_cast<int>(uuids.size()) ? index : -1;
  }
  if (!StartsWithIgnoringCase(entry, "GPU-") || entry.size() == 4) return -1;
  int match = -1;
  for (size_t i = 0; i < uuids.size(); ++i) {
    if (StartsWithIgnoringCase(uuids[i], entry)) {
      if (match != -1) return -1;  // ambiguous prefix
      match = static_cast<int>(i);
    }
  }
  return match;
}

}  // namespace

std::vector<int> ParseVisibleDevices(const char* value, const std::vector<std::string>& uuids) {
  std::vector<int> visible;
  if (value == nullptr) {
    for (size_t i = 0; i < uuids.size(); ++i) visible.push_back(static_cast<int>(i));
    return visible;
  }
  std::string_view rest(value);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view entry = Trim(rest.substr(0, comma));
    const int index = Resolve(entry, uuids);
    if (index < 0 || std::find(visible.begin(), visible.end(), index) != visible.end()) break;
    visible.push_back(index);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return visible;
}

}  // namespace fgpu::sim::cuda
