// Test support for the memory hook's internal objects: a real slice in a scratch directory
// (attached as this process's Ledger) and a scripted fake of the real driver and NVML behind a
// RealCalls table. Tests only; one FakeDriver at a time (its functions are plain C pointers, so
// they reach the active fake through a global).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/units.h"
#include "hook/interpose/real_calls.h"
#include "slice/ledger_counters_print.h"
#include "slice/slice.h"

namespace fgpu::hook::testing {

// Bytes i of the UUID of fake CUDA device d: d * 16 + i, so device d formats as below.
inline std::string FakeUuidText(int device) {
  static const char* kTexts[] = {
      "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f", "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f",
      "GPU-20212223-2425-2627-2829-2a2b2c2d2e2f", "GPU-30313233-3435-3637-3839-3a3b3c3d3e3f"};
  return kTexts[device];
}

// A slice over the given fake devices' UUIDs (in that order, with those caps), attached.
class TestSlice {
 public:
  TestSlice(const std::vector<int>& fake_devices, const std::vector<uint64_t>& caps)
      : TestSlice(kByUuid, UuidsOf(fake_devices), caps) {}
  // A slice over devices named by UUID (a MIG instance's "MIG-…", say). The tag keeps `{0}`
  // from reading as a list of strings.
  struct ByUuid {};
  static constexpr ByUuid kByUuid{};
  TestSlice(ByUuid, const std::vector<std::string>& uuids, const std::vector<uint64_t>& caps) {
    std::string pattern = (std::filesystem::temp_directory_path() / "fgpu-hookmem-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp failed";
      return;
    }
    dir_ = pattern;
    slice::SliceSpec spec;
    spec.id = "hookmem";
    for (size_t i = 0; i < uuids.size(); ++i) spec.devices.push_back({uuids[i], caps[i], 100});
    Result<slice::SliceAdmin> admin = slice::SliceAdmin::Create(dir_ + "/slice", spec);
    if (!admin.ok()) {
      ADD_FAILURE() << admin.status().message();
      return;
    }
    Result<slice::Ledger*> ledger = slice::Ledger::Attach((dir_ + "/slice").c_str());
    if (!ledger.ok()) {
      ADD_FAILURE() << ledger.status().message();
      return;
    }
    ledger_ = *ledger;
  }
  ~TestSlice() {
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  TestSlice(const TestSlice&) = delete;
  TestSlice& operator=(const TestSlice&) = delete;

  static std::vector<std::string> UuidsOf(const std::vector<int>& fake_devices) {
    std::vector<std::string> uuids;
    for (int device : fake_devices) uuids.push_back(FakeUuidText(device));
    return uuids;
  }

  slice::Ledger* ledger() const { return ledger_; }
  // What the slice's ledger counted (refusals, degraded modes).
  slice::LedgerCounters counters() const { return ledger_->Counters(); }

 private:
  std::string dir_;
  slice::Ledger* ledger_ = nullptr;
};

// The scripted driver. Contexts are fake handles (1000 + n) with a device each.
struct FakeDriver {
  static inline FakeDriver* active = nullptr;

  int device_count = 2;
  uint64_t granularity = 2 * kMiB;
  CUcontext current = nullptr;
  std::map<CUcontext, CUdevice> context_devices;
  std::map<CUstream, CUcontext> stream_contexts;
  bool has_ctx_get_device_of = true;
  // Device memory as cuMemGetInfo reports it, per device.
  std::map<CUdevice, uint64_t> free_bytes;
  std::vector<CUcontext> pushed;
  // Primary contexts.
  std::map<CUdevice, int> primary_active;
  int primary_releases = 0;
  std::vector<CUcontext> destroyed;
  // Green contexts: handle -> the CUcontext cuCtxFromGreenCtx gives.
  std::map<CUgreenCtx, CUcontext> green_contexts;
  std::vector<CUgreenCtx> green_destroyed;
  uintptr_t greens_made = 0;
  // NVML: this process's usage per device; absent device: pid not listed.
  bool nvml_available = true;
  bool nvml_lists_pid = true;
  std::map<CUdevice, uint64_t> nvml_usage;

  FakeDriver() { active = this; }
  ~FakeDriver() { active = nullptr; }
  FakeDriver(const FakeDriver&) = delete;
  FakeDriver& operator=(const FakeDriver&) = delete;

  CUcontext NewContext(CUdevice device) {
    auto ctx = reinterpret_cast<CUcontext>(uintptr_t{1000} + context_devices.size());
    context_devices[ctx] = device;
    return ctx;
  }

  // A green context on `device` with a context of its own (not made current), as the simulator has.
  CUgreenCtx NewGreenContext(CUdevice device) {
    auto green = reinterpret_cast<CUgreenCtx>(uintptr_t{5000} + ++greens_made);
    green_contexts[green] = NewContext(device);
    return green;
  }

  RealCalls Calls() const {
    RealCalls calls;
    calls.ctx_get_current = [](CUcontext* ctx) {
      *ctx = active->current;
      return CUDA_SUCCESS;
    };
    calls.ctx_get_device = [](CUdevice* out) {
      if (active->current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
      *out = active->context_devices[active->current];
      return CUDA_SUCCESS;
    };
    if (has_ctx_get_device_of) {
      calls.ctx_get_device_of = [](CUdevice* device, CUcontext ctx) {
        auto it = active->context_devices.find(ctx);
        if (it == active->context_devices.end()) return CUDA_ERROR_INVALID_CONTEXT;
        *device = it->second;
        return CUDA_SUCCESS;
      };
    }
    calls.stream_get_ctx = [](CUstream stream, CUcontext* ctx) {
      if (stream == nullptr) {
        *ctx = active->current;
        return CUDA_SUCCESS;
      }
      auto it = active->stream_contexts.find(stream);
      if (it == active->stream_contexts.end()) return CUDA_ERROR_INVALID_HANDLE;
      *ctx = it->second;
      return CUDA_SUCCESS;
    };
    calls.device_get_uuid = [](CUuuid* uuid, CUdevice device) {
      if (device < 0 || device >= active->device_count) return CUDA_ERROR_INVALID_DEVICE;
      for (int i = 0; i < 16; ++i) uuid->bytes[i] = static_cast<char>(device * 16 + i);
      return CUDA_SUCCESS;
    };
    calls.allocation_granularity = [](size_t* out, const CUmemAllocationProp*,
                                      CUmemAllocationGranularity_flags) {
      *out = active->granularity;
      return CUDA_SUCCESS;
    };
    calls.mem_get_info = [](size_t* free, size_t* total) {
      if (active->current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
      *free = active->free_bytes[active->context_devices[active->current]];
      *total = 80ull << 30;
      return CUDA_SUCCESS;
    };
    calls.ctx_push_current = [](CUcontext ctx) {
      active->pushed.push_back(active->current);
      active->current = ctx;
      return CUDA_SUCCESS;
    };
    calls.ctx_pop_current = [](CUcontext* ctx) {
      *ctx = active->current;
      active->current = active->pushed.back();
      active->pushed.pop_back();
      return CUDA_SUCCESS;
    };
    calls.ctx_destroy = [](CUcontext ctx) {
      active->destroyed.push_back(ctx);
      return CUDA_SUCCESS;
    };
    calls.ctx_from_green_ctx = [](CUcontext* ctx, CUgreenCtx green) {
      auto it = active->green_contexts.find(green);
      if (it == active->green_contexts.end()) return CUDA_ERROR_INVALID_HANDLE;
      *ctx = it->second;
      return CUDA_SUCCESS;
    };
    calls.green_ctx_destroy = [](CUgreenCtx green) {
      active->green_destroyed.push_back(green);
      active->green_contexts.erase(green);
      return CUDA_SUCCESS;
    };
    calls.primary_ctx_get_state = [](CUdevice device, unsigned int* flags, int* is_active) {
      if (device < 0 || device >= active->device_count) return CUDA_ERROR_INVALID_DEVICE;
      *flags = 0;
      *is_active = active->primary_active[device] > 0 ? 1 : 0;
      return CUDA_SUCCESS;
    };
    calls.primary_ctx_release = [](CUdevice device) {
      ++active->primary_releases;
      if (active->primary_active[device] > 0) --active->primary_active[device];
      return CUDA_SUCCESS;
    };
    calls.nvml_init = [] { return active->nvml_available ? NVML_SUCCESS : NVML_ERROR_LIBRARY_NOT_FOUND; };
    calls.nvml_get_handle_by_uuid = [](const char* uuid, nvmlDevice_t* handle) {
      for (int d = 0; d < active->device_count; ++d) {
        if (FakeUuidText(d) == uuid) {
          *handle = reinterpret_cast<nvmlDevice_t>(uintptr_t{500} + static_cast<uintptr_t>(d));
          return NVML_SUCCESS;
        }
      }
      return NVML_ERROR_NOT_FOUND;
    };
    calls.nvml_device_get_uuid = [](nvmlDevice_t handle, char* uuid, unsigned int length) {
      const std::string text = FakeUuidText(static_cast<int>(reinterpret_cast<uintptr_t>(handle) - 500));
      if (length < text.size() + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
      std::memcpy(uuid, text.c_str(), text.size() + 1);
      return NVML_SUCCESS;
    };
    calls.nvml_compute_processes = [](nvmlDevice_t handle, unsigned int* count, nvmlProcessInfo_t* infos) {
      const auto device = static_cast<CUdevice>(reinterpret_cast<uintptr_t>(handle) - 500);
      // Another process first, so our pid is not always entry 0.
      nvmlProcessInfo_t entries[2] = {};
      entries[0].pid = 1;
      entries[0].usedGpuMemory = 12345;
      unsigned int n = 1;
      if (active->nvml_lists_pid && active->nvml_usage.count(device) != 0) {
        entries[1].pid = static_cast<unsigned int>(getpid());
        entries[1].usedGpuMemory = active->nvml_usage[device];
        n = 2;
      }
      if (*count < n) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
      }
      std::memcpy(infos, entries, sizeof(nvmlProcessInfo_t) * n);
      *count = n;
      return NVML_SUCCESS;
    };
    return calls;
  }
};

}  // namespace fgpu::hook::testing
