#include "hook/interpose/deep_bind.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "hook/interpose/options.h"
#include "hook/interpose/real_driver.h"
#include "hook/interpose/real_driver_internal.h"
#include "slice/node_config.h"

extern char** environ;

namespace fgpu::hook {

int OpenModeFor(int mode, bool pass_through) { return pass_through ? mode : mode & ~RTLD_DEEPBIND; }

namespace {

// Before init, pass-through is honoured only where no node configuration can deny it (init
// decides with the configuration; this early path makes one lstat and reads no file).
bool UnmanagedAtAGlance() {
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, "FGPU_NODE_CONFIG=", 17) == 0 && (*entry)[17] != '\0') return false;
  }
  struct stat info {};
  return lstat(slice::kNodeConfigPath, &info) != 0 && errno == ENOENT;
}

}  // namespace

int DlopenMode(int mode) {
  const State* state = ReadyHookState();
  const bool pass_through =
      state != nullptr ? state->mode == Mode::kPassThrough : DisabledIn(environ) && UnmanagedAtAGlance();
  return OpenModeFor(mode, pass_through);
}

}  // namespace fgpu::hook
