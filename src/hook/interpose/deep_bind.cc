#include "hook/interpose/deep_bind.h"

#include <dlfcn.h>

#include "hook/interpose/options.h"
#include "hook/interpose/real_driver.h"
#include "hook/interpose/real_driver_internal.h"

extern char** environ;

namespace fgpu::hook {

int OpenModeFor(int mode, bool pass_through) { return pass_through ? mode : mode & ~RTLD_DEEPBIND; }

int DlopenMode(int mode) {
  const State* state = ReadyHookState();
  const bool pass_through = state != nullptr ? state->mode == Mode::kPassThrough : DisabledIn(environ);
  return OpenModeFor(mode, pass_through);
}

}  // namespace fgpu::hook
