// NVML C entry points that fgpu implements (the simulated libnvidia-ml.so.1) or
// interposes. Declarations only; semantics are the real NVML's (NVML_API_VERSION 13).
//
// Contract
// - v1 and versioned names are distinct exported symbols (nvmlInit and nvmlInit_v2,
//   nvmlDeviceGetCount and _v2, ...); no unversioned-name macros are defined. If the
//   real nvml.h is included first it must be with NVML_NO_UNVERSIONED_FUNC_DEFS, or
//   its macros would fold the v1 declarations into the versioned ones.
// - FGPU_NVML_EXPORT gives the declarations default visibility so a library built
//   with -fvisibility=hidden still exports exactly these names.
// - Every function returns an nvmlReturn_t and never throws (nvmlErrorString returns
//   a static string).
#ifndef FGPU_CORE_ABI_NVML_API_H_
#define FGPU_CORE_ABI_NVML_API_H_

#include "core/abi/nvml_types.h"

#if !defined(FGPU_NVML_OWN_TYPES) && !defined(NVML_NO_UNVERSIONED_FUNC_DEFS)
#error "include the real nvml.h with NVML_NO_UNVERSIONED_FUNC_DEFS defined before core/abi/nvml_api.h"
#endif

#define FGPU_NVML_EXPORT __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

// Initialisation (reference counted: each successful init needs one shutdown).
FGPU_NVML_EXPORT nvmlReturn_t nvmlInit(void);
FGPU_NVML_EXPORT nvmlReturn_t nvmlInit_v2(void);
FGPU_NVML_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags);
FGPU_NVML_EXPORT nvmlReturn_t nvmlShutdown(void);
FGPU_NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t result);

// System queries.
FGPU_NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length);
FGPU_NVML_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length);
FGPU_NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* cudaDriverVersion);
FGPU_NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion);

// Device enumeration and identity.
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int* deviceCount);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId, nvmlDevice_t* device);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minorNumber);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode,
                                                   unsigned int* pendingMode);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                                       unsigned int* temp);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power);

// Memory.
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory);

// Running processes. infoCount: in = entries in infos, out = entries written (or
// needed, with NVML_ERROR_INSUFFICIENT_SIZE).
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                                   nvmlProcessInfo_v1_t* infos);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                                      nvmlProcessInfo_v2_t* infos);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                                      nvmlProcessInfo_t* infos);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                                    nvmlProcessInfo_v1_t* infos);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                                       nvmlProcessInfo_v2_t* infos);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                                       nvmlProcessInfo_t* infos);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses(nvmlDevice_t device, unsigned int* infoCount,
                                                                      nvmlProcessInfo_v1_t* infos);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(nvmlDevice_t device,
                                                                         unsigned int* infoCount,
                                                                         nvmlProcessInfo_v2_t* infos);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                         unsigned int* infoCount,
                                                                         nvmlProcessInfo_t* infos);

// Utilization.
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                                              nvmlProcessUtilizationSample_t* utilization,
                                                              unsigned int* processSamplesCount,
                                                              unsigned long long lastSeenTimeStamp);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetProcessesUtilizationInfo(nvmlDevice_t device,
                                                                    nvmlProcessesUtilizationInfo_t* procesesUtilInfo);

// Multi-Instance GPU. Mode changes and instance creation/destruction need root.
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode,
                                                   nvmlReturn_t* activationStatus);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile,
                                                                  nvmlGpuInstanceProfileInfo_t* info);
// info: a v2 or v3 struct whose version field says which.
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int profile,
                                                                   nvmlGpuInstanceProfileInfo_v2_t* info);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device,
                                                                            unsigned int profileId,
                                                                            nvmlGpuInstancePlacement_t* placements,
                                                                            unsigned int* count);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device, unsigned int profileId,
                                                                        unsigned int* count);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profileId,
                                                          nvmlGpuInstance_t* gpuInstance);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profileId,
                                                                       const nvmlGpuInstancePlacement_t* placement,
                                                                       nvmlGpuInstance_t* gpuInstance);
FGPU_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                                        nvmlGpuInstance_t* gpuInstances, unsigned int* count);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                                           nvmlGpuInstance_t* gpuInstance);
FGPU_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t* info);
FGPU_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gpuInstance,
                                                                           unsigned int profile,
                                                                           unsigned int engProfile,
                                                                           nvmlComputeInstanceProfileInfo_t* info);
FGPU_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfoV(
    nvmlGpuInstance_t gpuInstance, unsigned int profile, unsigned int engProfile,
    nvmlComputeInstanceProfileInfo_v2_t* info);
FGPU_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceRemainingCapacity(nvmlGpuInstance_t gpuInstance,
                                                                                 unsigned int profileId,
                                                                                 unsigned int* count);
FGPU_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstancePossiblePlacements(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId, nvmlComputeInstancePlacement_t* placements,
    unsigned int* count);
FGPU_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance,
                                                                   unsigned int profileId,
                                                                   nvmlComputeInstance_t* computeInstance);
FGPU_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceCreateComputeInstanceWithPlacement(
    nvmlGpuInstance_t gpuInstance, unsigned int profileId, const nvmlComputeInstancePlacement_t* placement,
    nvmlComputeInstance_t* computeInstance);
FGPU_NVML_EXPORT nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance);
FGPU_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance,
                                                                 unsigned int profileId,
                                                                 nvmlComputeInstance_t* computeInstances,
                                                                 unsigned int* count);
FGPU_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t gpuInstance, unsigned int id,
                                                                    nvmlComputeInstance_t* computeInstance);
FGPU_NVML_EXPORT nvmlReturn_t nvmlComputeInstanceGetInfo(nvmlComputeInstance_t computeInstance,
                                                         nvmlComputeInstanceInfo_t* info);
FGPU_NVML_EXPORT nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance,
                                                            nvmlComputeInstanceInfo_t* info);
// MIG device handles: one per compute instance, usable where a device handle is documented
// to accept one (name, UUID, memory, the queries below).
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int* isMigDevice);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                                  nvmlDevice_t* migDevice);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
                                                                           nvmlDevice_t* device);

// Clocks (MHz), current and maximum.
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                                     unsigned int* clock);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                                        unsigned int* clock);
// The PCIe link: current and maximum generation and width.
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device,
                                                                  unsigned int* currLinkGen);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device,
                                                             unsigned int* currLinkWidth);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device,
                                                                 unsigned int* maxLinkGen);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int* maxLinkWidth);
// The chip.
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNumGpuCores(nvmlDevice_t device, unsigned int* numCores);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, nvmlDeviceArchitecture_t* arch);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMultiGpuBoard(nvmlDevice_t device, unsigned int* multiGpuBool);

// Events. A set collects the registered events of any devices; a wait returns the next one,
// or NVML_ERROR_TIMEOUT after timeoutms. v1 and v2 waits differ only in v2 filling the
// GPU/compute instance ids of nvmlEventData_t.
FGPU_NVML_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                                       nvmlEventSet_t set);
FGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                                               unsigned long long* eventTypes);
FGPU_NVML_EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t* data,
                                               unsigned int timeoutms);
FGPU_NVML_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                                  unsigned int timeoutms);
FGPU_NVML_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // FGPU_CORE_ABI_NVML_API_H_
