// GPU coredump settings (cuCoredumpGet/SetAttribute[Global]): kept as the driver documents them,
// globally and per context (a context reads the global setting of every attribute it has not set
// itself; its creation flags set the two enables).
// No coredump is ever written: simulated kernels raise no exceptions.
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "core/abi/cuda_api.h"
#include "sim/cuda/memory_registry.h"
#include "sim/cuda/runtime.h"

namespace fgpu::sim::cuda {
namespace {

constexpr size_t kCoredumpPathBytes = 1024;  // "a string of up to 1023 characters"

struct CoredumpSettings {
  bool enable_on_exception = false;
  bool trigger_host = true;
  bool user_trigger = false;
  int flags = CU_COREDUMP_DEFAULT_FLAGS;
  std::string file;
  std::string pipe;
};

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  return gethostname(name, sizeof name - 1) == 0 ? name : "localhost";
}

// A context's own settings: those whose attribute bit (1 << attribute) is in `set`.
struct ContextCoredump {
  CoredumpSettings own;
  unsigned set = 0;
};

struct CoredumpStore {
  std::mutex mu;
  CoredumpSettings global;
  std::map<unsigned long long, ContextCoredump> contexts;  // by context id (never reused)
  CoredumpStore() {
    const std::string suffix = HostName() + "." + std::to_string(getpid());
    global.file = "core.cuda." + suffix;
    global.pipe = "corepipe.cuda." + suffix;
  }
};
CoredumpStore& Coredumps() {
  static auto* store = new CoredumpStore;  // never destroyed: entry points may run during exit
  return *store;
}

// The current context's own settings (caller holds the store's lock), its creation flags set.
CUresult ContextSettings(ContextCoredump** out) {
  CoredumpStore& store = Coredumps();
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  auto [it, made] = store.contexts.try_emplace(ctx->id);
  if (made) {
    if ((ctx->flags & CU_CTX_COREDUMP_ENABLE) != 0) {
      it->second.own.enable_on_exception = true;
      it->second.set |= 1u << CU_COREDUMP_ENABLE_ON_EXCEPTION;
    }
    if ((ctx->flags & CU_CTX_USER_COREDUMP_ENABLE) != 0) {
      it->second.own.user_trigger = true;
      it->second.set |= 1u << CU_COREDUMP_ENABLE_USER_TRIGGER;
    }
  }
  *out = &it->second;
  return CUDA_SUCCESS;
}

// The settings a read of `attribute` sees: the context's own where it set it, else the global ones.
CUresult ReadSettings(bool global, int attribute, const CoredumpSettings** out) {
  CoredumpStore& store = Coredumps();
  *out = &store.global;
  if (global) return CUDA_SUCCESS;
  ContextCoredump* local = nullptr;
  if (CUresult rc = ContextSettings(&local); rc != CUDA_SUCCESS) return rc;
  const int bit = attribute == CU_COREDUMP_LIGHTWEIGHT ? CU_COREDUMP_GENERATION_FLAGS : attribute;
  if ((local->set & (1u << bit)) != 0) *out = &local->own;
  return CUDA_SUCCESS;
}

// The settings a write of `attribute` changes (the context's copy starts from the global value).
CUresult WriteSettings(bool global, int attribute, CoredumpSettings** out) {
  CoredumpStore& store = Coredumps();
  if (global) {
    *out = &store.global;
    return CUDA_SUCCESS;
  }
  ContextCoredump* local = nullptr;
  if (CUresult rc = ContextSettings(&local); rc != CUDA_SUCCESS) return rc;
  const int bit = attribute == CU_COREDUMP_LIGHTWEIGHT ? CU_COREDUMP_GENERATION_FLAGS : attribute;
  if ((local->set & (1u << bit)) == 0) {
    CoredumpSettings& own = local->own;
    switch (bit) {
      case CU_COREDUMP_ENABLE_ON_EXCEPTION: own.enable_on_exception = store.global.enable_on_exception; break;
      case CU_COREDUMP_TRIGGER_HOST: own.trigger_host = store.global.trigger_host; break;
      case CU_COREDUMP_ENABLE_USER_TRIGGER: own.user_trigger = store.global.user_trigger; break;
      case CU_COREDUMP_GENERATION_FLAGS: own.flags = store.global.flags; break;
      case CU_COREDUMP_FILE: own.file = store.global.file; break;
      default: own.pipe = store.global.pipe; break;
    }
    local->set |= 1u << bit;
  }
  *out = &local->own;
  return CUDA_SUCCESS;
}

// Bytes an attribute's value takes; 0 for an attribute that does not exist.
size_t ValueBytes(int attribute) {
  switch (attribute) {
    case CU_COREDUMP_ENABLE_ON_EXCEPTION:
    case CU_COREDUMP_TRIGGER_HOST:
    case CU_COREDUMP_LIGHTWEIGHT:
    case CU_COREDUMP_ENABLE_USER_TRIGGER: return sizeof(bool);
    case CU_COREDUMP_GENERATION_FLAGS: return sizeof(int);
    case CU_COREDUMP_FILE:
    case CU_COREDUMP_PIPE: return kCoredumpPathBytes;
    default: return 0;
  }
}

CUresult GetCoredump(CUcoredumpSettings attrib, void* value, size_t* size, bool global) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  int attribute = 0;  // a C caller may pass any int: read it as one, not as the enum
  std::memcpy(&attribute, &attrib, sizeof attribute);
  const size_t bytes = ValueBytes(attribute);
  if (size == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(Coredumps().mu);
  const CoredumpSettings* settings = nullptr;
  if (CUresult rc = ReadSettings(global, attribute, &settings); rc != CUDA_SUCCESS) return rc;
  if (value == nullptr) {  // the size the value needs
    *size = bytes;
    return CUDA_SUCCESS;
  }
  const auto put_bool = [&](bool b) { std::memcpy(value, &b, sizeof b); };
  switch (attribute) {
    case CU_COREDUMP_ENABLE_ON_EXCEPTION: put_bool(settings->enable_on_exception); break;
    case CU_COREDUMP_TRIGGER_HOST: put_bool(settings->trigger_host); break;
    case CU_COREDUMP_LIGHTWEIGHT: put_bool(settings->flags == CU_COREDUMP_LIGHTWEIGHT_FLAGS); break;
    case CU_COREDUMP_ENABLE_USER_TRIGGER: put_bool(settings->user_trigger); break;
    case CU_COREDUMP_GENERATION_FLAGS:
      if (*size < sizeof(int)) return CUDA_ERROR_INVALID_VALUE;
      std::memcpy(value, &settings->flags, sizeof(int));
      break;
    default: {  // FILE, PIPE
      const std::string& text = attribute == CU_COREDUMP_FILE ? settings->file : settings->pipe;
      if (*size < text.size() + 1) return CUDA_ERROR_INVALID_VALUE;
      std::memcpy(value, text.c_str(), text.size() + 1);
    }
  }
  return CUDA_SUCCESS;
}

CUresult SetCoredump(CUcoredumpSettings attrib, void* value, size_t* size, bool global) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  int attribute = 0;
  std::memcpy(&attribute, &attrib, sizeof attribute);
  const size_t bytes = ValueBytes(attribute);
  if (size == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(Coredumps().mu);
  if (value == nullptr) {
    *size = bytes;
    return CUDA_SUCCESS;
  }
  // "CU_COREDUMP_ENABLE_USER_TRIGGER and CU_COREDUMP_PIPE cannot be set on a per-context basis."
  if (!global && (attribute == CU_COREDUMP_ENABLE_USER_TRIGGER || attribute == CU_COREDUMP_PIPE)) {
    return CUDA_ERROR_NOT_PERMITTED;
  }
  CoredumpSettings* settings = nullptr;
  if (CUresult rc = WriteSettings(global, attribute, &settings); rc != CUDA_SUCCESS) return rc;
  if (*size < (bytes == kCoredumpPathBytes ? 1 : bytes)) return CUDA_ERROR_INVALID_VALUE;
  bool flag = false;
  if (bytes == sizeof(bool)) std::memcpy(&flag, value, sizeof flag);
  switch (attribute) {
    case CU_COREDUMP_ENABLE_ON_EXCEPTION: settings->enable_on_exception = flag; break;
    case CU_COREDUMP_TRIGGER_HOST: settings->trigger_host = flag; break;
    case CU_COREDUMP_LIGHTWEIGHT:
      settings->flags = flag ? CU_COREDUMP_LIGHTWEIGHT_FLAGS : CU_COREDUMP_DEFAULT_FLAGS;
      break;
    case CU_COREDUMP_ENABLE_USER_TRIGGER: settings->user_trigger = flag; break;
    case CU_COREDUMP_GENERATION_FLAGS: {
      int flags = 0;
      std::memcpy(&flags, value, sizeof flags);
      constexpr int kKnown = CU_COREDUMP_LIGHTWEIGHT_FLAGS | CU_COREDUMP_SKIP_ABORT;
      if ((flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
      settings->flags = flags;
      break;
    }
    default: {  // FILE, PIPE: a terminated string of at most 1023 characters inside *size bytes
      const auto* text = static_cast<const char*>(value);
      const size_t length = strnlen(text, std::min(*size, kCoredumpPathBytes));
      if (length == std::min(*size, kCoredumpPathBytes)) return CUDA_ERROR_INVALID_VALUE;
      (attribute == CU_COREDUMP_FILE ? settings->file : settings->pipe).assign(text, length);
    }
  }
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace fgpu::sim::cuda

namespace sim = fgpu::sim::cuda;

extern "C" {

CUresult cuCoredumpGetAttribute(CUcoredumpSettings attrib, void* value, size_t* size) {
  return sim::Guarded([&] { return sim::GetCoredump(attrib, value, size, false); });
}
CUresult cuCoredumpGetAttributeGlobal(CUcoredumpSettings attrib, void* value, size_t* size) {
  return sim::Guarded([&] { return sim::GetCoredump(attrib, value, size, true); });
}
CUresult cuCoredumpSetAttribute(CUcoredumpSettings attrib, void* value, size_t* size) {
  return sim::Guarded([&] { return sim::SetCoredump(attrib, value, size, false); });
}
CUresult cuCoredumpSetAttributeGlobal(CUcoredumpSettings attrib, void* value, size_t* size) {
  return sim::Guarded([&] { return sim::SetCoredump(attrib, value, size, true); });
}

}  // extern "C"
