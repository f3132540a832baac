// Exported NVML entry points: device and per-process utilization.
//
// gpu / smUtil: the share of the sample period (SimConfig::utilization_period_ns)
// during which the device's kernel timeline was busy, from SharedDevices. Kernels of
// all processes serialise on one timeline, so per-process shares add up to the
// device's.
// memory / memUtil: the simulator has no memory-traffic model, so it assumes a kernel
// reads or writes device memory during half of its run time: memory = gpu / 2.
// Encoder, decoder, JPEG and OFA engines are idle (0).
// Per-process samples: one per process whose kernels ran in the window
// [max(lastSeenTimeStamp, now - period), now] (lastSeenTimeStamp in CPU µs, see
// cpu_clock.h; 0 = the whole period), time-stamped with the end of that process's last
// kernel there, and only if that timestamp is newer than lastSeenTimeStamp. smUtil is
// the process's busy share of that window. No sample -> NVML_ERROR_NOT_FOUND.
#include <cstdint>
#include <vector>

#include "core/abi/nvml_api.h"
#include "sim/nvml/cpu_clock.h"
#include "sim/nvml/library.h"
#include "sim/nvml/mig_view.h"

namespace {

using fgpu::sim::ProcessUtilization;
using fgpu::sim::nvml::CpuMicrosToMonotonicNs;
using fgpu::sim::nvml::Library;
using fgpu::sim::nvml::MonotonicNsToCpuMicros;
using fgpu::sim::nvml::Session;
using fgpu::sim::nvml::MigEnabled;
using fgpu::sim::nvml::MigRef;
using fgpu::sim::nvml::WithSession;

// Utilization is "not currently supported" on MIG-enabled GPUs, through the parent handle or a
// MIG device handle (nvml.h; cuda.md §3.3): NVML_ERROR_NOT_SUPPORTED for both.
template <typename Fn>
nvmlReturn_t WithUtilizationDevice(nvmlDevice_t handle, Fn&& fn) noexcept {
  return WithSession([&](Session& session) {
    int index = 0;
    if (session.Resolve(handle, &index) != NVML_SUCCESS) {
      MigRef ref;
      return session.ResolveMigDevice(handle, &ref) == NVML_SUCCESS ? NVML_ERROR_NOT_SUPPORTED
                                                                     : NVML_ERROR_INVALID_ARGUMENT;
    }
    if (MigEnabled(session, index)) return NVML_ERROR_NOT_SUPPORTED;
    return fn(session, index);
  });
}

unsigned int MemoryPercentForBusyPercent(uint32_t busy_percent) { return busy_percent / 2; }

struct ProcessSample {
  unsigned int pid;
  unsigned long long cpu_timestamp_us;
  unsigned int sm_percent;
};

std::vector<ProcessSample> SamplesSince(Session& session, int device, unsigned long long last_seen_us) {
  const int64_t offset = Library::Get().realtime_minus_monotonic_ns();
  const uint64_t since_ns = last_seen_us == 0 ? 0 : CpuMicrosToMonotonicNs(last_seen_us, offset);
  const std::vector<ProcessUtilization> busy =
      session.shared().ProcessUtilizations(device, since_ns, session.shared().config().utilization_period_ns);
  std::vector<ProcessSample> samples;
  samples.reserve(busy.size());
  for (const ProcessUtilization& process : busy) {
    const unsigned long long timestamp_us = MonotonicNsToCpuMicros(process.last_seen_ns, offset);
    // The shared state keeps busy time in 10 ms buckets and prorates the one where the
    // window starts, so a kernel that ended just before lastSeenTimeStamp can still
    // count. NVML's rule is exact: only samples newer than lastSeenTimeStamp.
    if (last_seen_us != 0 && timestamp_us <= last_seen_us) continue;
    samples.push_back({static_cast<unsigned int>(process.pid), timestamp_us, process.sm_percent});
  }
  return samples;
}

// The sizing protocol both per-process calls share: NOT_FOUND when there is nothing
// to report, INSUFFICIENT_SIZE with the needed count when the buffer is missing or
// short, otherwise the count written.
template <typename Entry, typename Fill>
nvmlReturn_t WriteSamples(const std::vector<ProcessSample>& samples, Entry* buffer, unsigned int* count,
                          Fill fill) {
  const auto needed = static_cast<unsigned int>(samples.size());
  if (needed == 0) {
    *count = 0;
    return NVML_ERROR_NOT_FOUND;
  }
  if (buffer == nullptr || *count < needed) {
    *count = needed;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (unsigned int i = 0; i < needed; ++i) {
    Entry entry{};
    fill(samples[i], &entry);
    buffer[i] = entry;
  }
  *count = needed;
  return NVML_SUCCESS;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  return WithUtilizationDevice(device, [&](Session& session, int index) {
    if (utilization == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const uint32_t busy =
        session.shared().UtilizationPercent(index, session.shared().config().utilization_period_ns);
    utilization->gpu = busy;
    utilization->memory = MemoryPercentForBusyPercent(busy);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t* utilization,
                                             unsigned int* processSamplesCount,
                                             unsigned long long lastSeenTimeStamp) {
  return WithUtilizationDevice(device, [&](Session& session, int index) {
    if (processSamplesCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    return WriteSamples(SamplesSince(session, index, lastSeenTimeStamp), utilization, processSamplesCount,
                        [](const ProcessSample& sample, nvmlProcessUtilizationSample_t* entry) {
                          entry->pid = sample.pid;
                          entry->timeStamp = sample.cpu_timestamp_us;
                          entry->smUtil = sample.sm_percent;
                          entry->memUtil = MemoryPercentForBusyPercent(sample.sm_percent);
                        });
  });
}

nvmlReturn_t nvmlDeviceGetProcessesUtilizationInfo(nvmlDevice_t device,
                                                   nvmlProcessesUtilizationInfo_t* procesesUtilInfo) {
  return WithUtilizationDevice(device, [&](Session& session, int index) {
    if (procesesUtilInfo == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (procesesUtilInfo->version != nvmlProcessesUtilizationInfo_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    return WriteSamples(SamplesSince(session, index, procesesUtilInfo->lastSeenTimeStamp),
                        procesesUtilInfo->procUtilArray, &procesesUtilInfo->processSamplesCount,
                        [](const ProcessSample& sample, nvmlProcessUtilizationInfo_v1_t* entry) {
                          entry->timeStamp = sample.cpu_timestamp_us;
                          entry->pid = sample.pid;
                          entry->smUtil = sample.sm_percent;
                          entry->memUtil = MemoryPercentForBusyPercent(sample.sm_percent);
                        });
  });
}

}  // extern "C"
