// The plugins' log lines on stderr, in the agent's form ("fgpu k8s: LEVEL EVENT key=value ..."),
// one line per event, values quoted when they hold spaces, so a DaemonSet's logs grep and parse.
#pragma once

#include <initializer_list>
#include <string>
#include <utility>

namespace fgpu::k8s {

void Log(const char* level, const char* event, std::initializer_list<std::pair<const char*, std::string>> fields);

}  // namespace fgpu::k8s
