#include "hook/interpose/options.h"

#include <cstring>

#include "slice/node_config.h"
#include "slice/slice.h"

namespace fgpu::hook {

namespace {

// The value of NAME in one "NAME=value" entry, or NULL when the entry is another variable.
const char* ValueOf(const char* entry, const char* name) {
  const size_t length = std::strlen(name);
  if (std::strncmp(entry, name, length) != 0 || entry[length] != '=') return nullptr;
  return entry + length + 1;
}

bool EqualsIgnoringCase(const char* text, const char* lower) {
  for (; *text != '\0' && *lower != '\0'; ++text, ++lower) {
    const char c = (*text >= 'A' && *text <= 'Z') ? static_cast<char>(*text - 'A' + 'a') : *text;
    if (c != *lower) return false;
  }
  return *text == '\0' && *lower == '\0';
}

bool MeansYes(const char* value) {
  return EqualsIgnoringCase(value, "1") || EqualsIgnoringCase(value, "true") ||
         EqualsIgnoringCase(value, "yes") || EqualsIgnoringCase(value, "on");
}

// Copies a path-valued variable: empty counts as unset, too long is flagged rather than cut
// into another path.
void CopyPath(const char* value, char (&to)[PATH_MAX], bool* set, bool* too_long) {
  const size_t length = std::strlen(value);
  if (length == 0) return;
  if (length >= sizeof(to)) {
    *too_long = true;
    return;
  }
  std::memcpy(to, value, length + 1);
  *set = true;
}

}  // namespace

bool DisabledIn(const char* const* env) {
  if (env == nullptr) return false;
  for (const char* const* entry = env; *entry != nullptr; ++entry) {
    if (const char* value = ValueOf(*entry, kDisableEnv); value != nullptr) return MeansYes(value);
  }
  return false;
}

void ReadOptions(const char* const* env, Options* options) {
  *options = Options{};
  std::memcpy(options->compute_dir, kDefaultComputeDir, std::strlen(kDefaultComputeDir) + 1);
  if (env == nullptr) return;
  // The first definition wins, as getenv would answer.
  bool seen_disable = false;
  bool seen_slice = false;
  bool seen_compute_dir = false;
  bool seen_node_config = false;
  for (const char* const* entry = env; *entry != nullptr; ++entry) {
    if (const char* value = ValueOf(*entry, kDisableEnv); value != nullptr && !seen_disable) {
      seen_disable = true;
      options->disabled = MeansYes(value);
    } else if (const char* boards = ValueOf(*entry, kComputeDirEnv); boards != nullptr && !seen_compute_dir) {
      seen_compute_dir = true;
      const size_t length = std::strlen(boards);
      if (length > 0 && length < sizeof(options->compute_dir)) std::memcpy(options->compute_dir, boards, length + 1);
    } else if (const char* dir = ValueOf(*entry, slice::kSliceEnv); dir != nullptr && !seen_slice) {
      seen_slice = true;
      CopyPath(dir, options->slice_dir, &options->slice_set, &options->slice_too_long);
    } else if (const char* file = ValueOf(*entry, slice::kNodeConfigEnv); file != nullptr && !seen_node_config) {
      seen_node_config = true;
      CopyPath(file, options->node_config, &options->node_config_set, &options->node_config_too_long);
    }
  }
}

}  // namespace fgpu::hook
