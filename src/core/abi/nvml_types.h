// NVML C ABI types: our own declarations of the subset of `nvml.h` (NVML_API_VERSION
// 13) that fgpu produces or consumes.
//
// Contract
// - Layouts are the real header's on x86-64 / aarch64 LP64; the static_asserts at the
//   end pin every size and offset listed in reference/cuda.md §3.2. They also run
//   against the real header when it was included first (its types are used then), so
//   they double as a check of that file.
// - Declares no functions (see core/abi/nvml_api.h) and no unversioned-name macros
//   (`#define nvmlInit nvmlInit_v2` in the real header): fgpu exports v1 and
//   versioned functions as distinct symbols.
// - Pure C-compatible declarations; nothing here allocates or fails.
#ifndef FGPU_CORE_ABI_NVML_TYPES_H_
#define FGPU_CORE_ABI_NVML_TYPES_H_

#ifndef NVML_API_VERSION  // the real nvml.h was not included: declare our own
#define FGPU_NVML_OWN_TYPES 1
#define NVML_API_VERSION 13
#define NVML_API_VERSION_STR "13"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nvmlReturn_enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_DEPRECATED = 26,
  NVML_ERROR_NOT_READY = 27,
  NVML_ERROR_GPU_NOT_FOUND = 28,
  NVML_ERROR_INVALID_STATE = 29,
  NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

// Opaque to callers; the library decides what a handle points at.
typedef struct nvmlDevice_st* nvmlDevice_t;

// Versioned structs carry sizeof(struct) | (version << 24) in their first field.
#define NVML_STRUCT_VERSION(data, ver) \
  (unsigned int)(sizeof(nvml##data##_v##ver##_t) | ((unsigned int)(ver) << 24U))

// Marks a field whose value the driver cannot report (e.g. usedGpuMemory under WDDM).
#define NVML_VALUE_NOT_AVAILABLE (-1)

#define NVML_DEVICE_NAME_BUFFER_SIZE 64
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_BUFFER_SIZE 80
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE 80
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16

#define NVML_INIT_FLAG_NO_GPUS 1
#define NVML_INIT_FLAG_NO_ATTACH 2

#define NVML_DEVICE_MIG_DISABLE 0x0
#define NVML_DEVICE_MIG_ENABLE 0x1

typedef enum nvmlEnableState_enum {
  NVML_FEATURE_DISABLED = 0,
  NVML_FEATURE_ENABLED = 1
} nvmlEnableState_t;

typedef enum nvmlTemperatureSensors_enum {
  NVML_TEMPERATURE_GPU = 0,
  NVML_TEMPERATURE_COUNT
} nvmlTemperatureSensors_t;

typedef struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;  // reserved + allocated
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
  unsigned int version;  // must be nvmlMemory_v2
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_v2_t;
#define nvmlMemory_v2 NVML_STRUCT_VERSION(Memory, 2)

typedef struct nvmlUtilization_st {
  unsigned int gpu;     // % of the sample period during which one or more kernels ran
  unsigned int memory;  // % of the sample period during which memory was read or written
} nvmlUtilization_t;

typedef struct nvmlProcessInfo_v1_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct nvmlProcessInfo_v2_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;      // 0xFFFFFFFF when MIG is disabled
  unsigned int computeInstanceId;  // 0xFFFFFFFF when MIG is disabled
} nvmlProcessInfo_v2_t;

// The _v3 process-list functions' element; same layout as v2 since 535.98.
typedef struct nvmlProcessInfo_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;

typedef struct nvmlProcessUtilizationSample_st {
  unsigned int pid;
  unsigned long long timeStamp;  // CPU timestamp, microseconds
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

typedef struct nvmlProcessUtilizationInfo_v1_st {
  unsigned long long timeStamp;  // CPU timestamp, microseconds
  unsigned int pid;
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
  unsigned int jpgUtil;
  unsigned int ofaUtil;
} nvmlProcessUtilizationInfo_v1_t;

typedef struct nvmlProcessesUtilizationInfo_v1_st {
  unsigned int version;              // must be nvmlProcessesUtilizationInfo_v1
  unsigned int processSamplesCount;  // in: entries in procUtilArray; out: entries needed/written
  unsigned long long lastSeenTimeStamp;
  nvmlProcessUtilizationInfo_v1_t* procUtilArray;
} nvmlProcessesUtilizationInfo_v1_t;
typedef nvmlProcessesUtilizationInfo_v1_t nvmlProcessesUtilizationInfo_t;
#define nvmlProcessesUtilizationInfo_v1 NVML_STRUCT_VERSION(ProcessesUtilizationInfo, 1)

// PCI information, v3 layout (nvmlDeviceGetPciInfo_v3).
typedef struct nvmlPciInfo_st {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];  // "%04X:%02X:%02X.0"
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;     // (device id << 16) | vendor id
  unsigned int pciSubSystemId;  // (subsystem device id << 16) | subsystem vendor id
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];  // "%08X:%02X:%02X.0"
} nvmlPciInfo_t;

// ---- Multi-Instance GPU --------------------------------------------------------------

// What nvmlDeviceGetGpuInstanceProfileInfo takes: a profile index, not nvidia-smi's id.
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE 0x0
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE 0x1
#define NVML_GPU_INSTANCE_PROFILE_3_SLICE 0x2
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE 0x3
#define NVML_GPU_INSTANCE_PROFILE_7_SLICE 0x4
#define NVML_GPU_INSTANCE_PROFILE_8_SLICE 0x5
#define NVML_GPU_INSTANCE_PROFILE_6_SLICE 0x6
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 0x7  // 1g with the media engines (+me)
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 0x8
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 0x9  // 1g with 2 memory slices
#define NVML_GPU_INSTANCE_PROFILE_COUNT 0xA

#define NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE 0x0
#define NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE 0x1
#define NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE 0x2
#define NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE 0x3
#define NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE 0x4
#define NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE 0x5
#define NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE 0x6
#define NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 0x7
#define NVML_COMPUTE_INSTANCE_PROFILE_COUNT 0x8

// Every engine but the SMs is shared by a GPU instance's compute instances.
#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED 0x0
#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT 0x1

// nvmlGpuInstanceProfileInfo_v3_t.capabilities bits.
#define NVML_GPU_INSTANCE_PROFILE_CAPS_P2P 0x1

typedef struct nvmlGpuInstance_st* nvmlGpuInstance_t;
typedef struct nvmlComputeInstance_st* nvmlComputeInstance_t;

typedef struct nvmlGpuInstancePlacement_st {
  unsigned int start;  // first memory slice
  unsigned int size;   // memory slices
} nvmlGpuInstancePlacement_t;

typedef struct nvmlGpuInstanceProfileInfo_st {
  unsigned int id;  // nvidia-smi's profile id
  unsigned int isP2pSupported;
  unsigned int sliceCount;     // compute slices
  unsigned int instanceCount;  // how many the GPU can hold
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
} nvmlGpuInstanceProfileInfo_t;

// v2: a version word first and the profile's name last.
typedef struct nvmlGpuInstanceProfileInfo_v2_st {
  unsigned int version;  // nvmlGpuInstanceProfileInfo_v2
  unsigned int id;
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
} nvmlGpuInstanceProfileInfo_v2_t;
#define nvmlGpuInstanceProfileInfo_v2 NVML_STRUCT_VERSION(GpuInstanceProfileInfo, 2)

// v3: isP2pSupported becomes a capabilities bit field at the end.
typedef struct nvmlGpuInstanceProfileInfo_v3_st {
  unsigned int version;  // nvmlGpuInstanceProfileInfo_v3
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  unsigned int capabilities;  // NVML_GPU_INSTANCE_PROFILE_CAPS_*
} nvmlGpuInstanceProfileInfo_v3_t;
#define nvmlGpuInstanceProfileInfo_v3 NVML_STRUCT_VERSION(GpuInstanceProfileInfo, 3)

typedef struct nvmlGpuInstanceInfo_st {
  nvmlDevice_t device;  // the parent GPU
  unsigned int id;
  unsigned int profileId;
  nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

typedef struct nvmlComputeInstancePlacement_st {
  unsigned int start;  // first compute slice of the GPU instance
  unsigned int size;   // compute slices
} nvmlComputeInstancePlacement_t;

typedef struct nvmlComputeInstanceProfileInfo_st {
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;

typedef struct nvmlComputeInstanceProfileInfo_v2_st {
  unsigned int version;  // nvmlComputeInstanceProfileInfo_v2
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
} nvmlComputeInstanceProfileInfo_v2_t;
#define nvmlComputeInstanceProfileInfo_v2 NVML_STRUCT_VERSION(ComputeInstanceProfileInfo, 2)

typedef struct nvmlComputeInstanceProfileInfo_v3_st {
  unsigned int version;  // nvmlComputeInstanceProfileInfo_v3
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  unsigned int capabilities;
} nvmlComputeInstanceProfileInfo_v3_t;
#define nvmlComputeInstanceProfileInfo_v3 NVML_STRUCT_VERSION(ComputeInstanceProfileInfo, 3)

typedef struct nvmlComputeInstanceInfo_st {
  nvmlDevice_t device;             // the parent GPU
  nvmlGpuInstance_t gpuInstance;   // the parent GPU instance
  unsigned int id;
  unsigned int profileId;
  nvmlComputeInstancePlacement_t placement;
} nvmlComputeInstanceInfo_t;

// Clocks, architecture and events (what nvml-wrapper's examples call: docs/sim.md).

typedef enum nvmlClockType_enum {
  NVML_CLOCK_GRAPHICS = 0,
  NVML_CLOCK_SM = 1,
  NVML_CLOCK_MEM = 2,
  NVML_CLOCK_VIDEO = 3,
  NVML_CLOCK_COUNT
} nvmlClockType_t;

typedef unsigned int nvmlDeviceArchitecture_t;
#define NVML_DEVICE_ARCH_KEPLER 2
#define NVML_DEVICE_ARCH_MAXWELL 3
#define NVML_DEVICE_ARCH_PASCAL 4
#define NVML_DEVICE_ARCH_VOLTA 5
#define NVML_DEVICE_ARCH_TURING 6
#define NVML_DEVICE_ARCH_AMPERE 7
#define NVML_DEVICE_ARCH_ADA 8
#define NVML_DEVICE_ARCH_HOPPER 9
#define NVML_DEVICE_ARCH_BLACKWELL 10
#define NVML_DEVICE_ARCH_T23X 11
#define NVML_DEVICE_ARCH_UNKNOWN 0xffffffff

// Event types (bits of an unsigned long long).
#define nvmlEventTypeSingleBitEccError 0x0000000000000001LL
#define nvmlEventTypeDoubleBitEccError 0x0000000000000002LL
#define nvmlEventTypePState 0x0000000000000004LL
#define nvmlEventTypeXidCriticalError 0x0000000000000008LL
#define nvmlEventTypeClock 0x0000000000000010LL
#define nvmlEventTypePowerSourceChange 0x0000000000000080LL
#define nvmlEventMigConfigChange 0x0000000000000100LL
#define nvmlEventTypeNone 0x0000000000000000LL

typedef struct nvmlEventSet_st* nvmlEventSet_t;

typedef struct nvmlEventData_st {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;      // v2 only
  unsigned int computeInstanceId;  // v2 only
} nvmlEventData_t;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // !NVML_API_VERSION

// Layout checks (reference/cuda.md §3.2). offsetof on these standard-layout C structs
// is well defined in C++ too.
#ifdef __cplusplus
#include <cstddef>
#define FGPU_NVML_ASSERT_ static_assert
#else
#include <stddef.h>
#define FGPU_NVML_ASSERT_ _Static_assert
#endif

FGPU_NVML_ASSERT_(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t size");
FGPU_NVML_ASSERT_(offsetof(nvmlMemory_t, total) == 0, "nvmlMemory_t.total");
FGPU_NVML_ASSERT_(offsetof(nvmlMemory_t, free) == 8, "nvmlMemory_t.free");
FGPU_NVML_ASSERT_(offsetof(nvmlMemory_t, used) == 16, "nvmlMemory_t.used");

FGPU_NVML_ASSERT_(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t size");
FGPU_NVML_ASSERT_(offsetof(nvmlMemory_v2_t, version) == 0, "nvmlMemory_v2_t.version");
FGPU_NVML_ASSERT_(offsetof(nvmlMemory_v2_t, total) == 8, "nvmlMemory_v2_t.total");
FGPU_NVML_ASSERT_(offsetof(nvmlMemory_v2_t, reserved) == 16, "nvmlMemory_v2_t.reserved");
FGPU_NVML_ASSERT_(offsetof(nvmlMemory_v2_t, free) == 24, "nvmlMemory_v2_t.free");
FGPU_NVML_ASSERT_(offsetof(nvmlMemory_v2_t, used) == 32, "nvmlMemory_v2_t.used");
FGPU_NVML_ASSERT_(nvmlMemory_v2 == 0x02000028u, "nvmlMemory_v2 constant");

FGPU_NVML_ASSERT_(sizeof(nvmlUtilization_t) == 8, "nvmlUtilization_t size");
FGPU_NVML_ASSERT_(offsetof(nvmlUtilization_t, gpu) == 0, "nvmlUtilization_t.gpu");
FGPU_NVML_ASSERT_(offsetof(nvmlUtilization_t, memory) == 4, "nvmlUtilization_t.memory");

FGPU_NVML_ASSERT_(sizeof(nvmlProcessInfo_v1_t) == 16, "nvmlProcessInfo_v1_t size");
FGPU_NVML_ASSERT_(offsetof(nvmlProcessInfo_v1_t, pid) == 0, "nvmlProcessInfo_v1_t.pid");
FGPU_NVML_ASSERT_(offsetof(nvmlProcessInfo_v1_t, usedGpuMemory) == 8, "nvmlProcessInfo_v1_t.usedGpuMemory");

FGPU_NVML_ASSERT_(sizeof(nvmlProcessInfo_v2_t) == 24, "nvmlProcessInfo_v2_t size");
FGPU_NVML_ASSERT_(offsetof(nvmlProcessInfo_v2_t, pid) == 0, "nvmlProcessInfo_v2_t.pid");
FGPU_NVML_ASSERT_(offsetof(nvmlProcessInfo_v2_t, usedGpuMemory) == 8, "nvmlProcessInfo_v2_t.usedGpuMemory");
FGPU_NVML_ASSERT_(offsetof(nvmlProcessInfo_v2_t, gpuInstanceId) == 16, "nvmlProcessInfo_v2_t.gpuInstanceId");
FGPU_NVML_ASSERT_(offsetof(nvmlProcessInfo_v2_t, computeInstanceId) == 20,
                  "nvmlProcessInfo_v2_t.computeInstanceId");

FGPU_NVML_ASSERT_(sizeof(nvmlProcessInfo_t) == 24, "nvmlProcessInfo_t size");
FGPU_NVML_ASSERT_(offsetof(nvmlProcessInfo_t, pid) == 0, "nvmlProcessInfo_t.pid");
FGPU_NVML_ASSERT_(offsetof(nvmlProcessInfo_t, usedGpuMemory) == 8, "nvmlProcessInfo_t.usedGpuMemory");
FGPU_NVML_ASSERT_(offsetof(nvmlProcessInfo_t, gpuInstanceId) == 16, "nvmlProcessInfo_t.gpuInstanceId");
FGPU_NVML_ASSERT_(offsetof(nvmlProcessInfo_t, computeInstanceId) == 20, "nvmlProcessInfo_t.computeInstanceId");

FGPU_NVML_ASSERT_(sizeof(nvmlProcessUtilizationSample_t) == 32, "nvmlProcessUtilizationSample_t size");
FGPU_NVML_ASSERT_(offsetof(nvmlProcessUtilizationSample_t, pid) == 0, "nvmlProcessUtilizationSample_t.pid");
FGPU_NVML_ASSERT_(offsetof(nvmlProcessUtilizationSample_t, timeStamp) == 8,
                  "nvmlProcessUtilizationSample_t.timeStamp");
FGPU_NVML_ASSERT_(offsetof(nvmlProcessUtilizationSample_t, smUtil) == 16, "nvmlProcessUtilizationSample_t.smUtil");
FGPU_NVML_ASSERT_(offsetof(nvmlProcessUtilizationSample_t, memUtil) == 20,
                  "nvmlProcessUtilizationSample_t.memUtil");
FGPU_NVML_ASSERT_(offsetof(nvmlProcessUtilizationSample_t, encUtil) == 24,
                  "nvmlProcessUtilizationSample_t.encUtil");
FGPU_NVML_ASSERT_(offsetof(nvmlProcessUtilizationSample_t, decUtil) == 28,
                  "nvmlProcessUtilizationSample_t.decUtil");

FGPU_NVML_ASSERT_(sizeof(nvmlProcessUtilizationInfo_v1_t) == 40, "nvmlProcessUtilizationInfo_v1_t size");
FGPU_NVML_ASSERT_(offsetof(nvmlProcessUtilizationInfo_v1_t, timeStamp) == 0,
                  "nvmlProcessUtilizationInfo_v1_t.timeStamp");
FGPU_NVML_ASSERT_(offsetof(nvmlProcessUtilizationInfo_v1_t, pid) == 8, "nvmlProcessUtilizationInfo_v1_t.pid");
FGPU_NVML_ASSERT_(offsetof(nvmlProcessUtilizationInfo_v1_t, smUtil) == 12,
                  "nvmlProcessUtilizationInfo_v1_t.smUtil");
FGPU_NVML_ASSERT_(offsetof(nvmlProcessUtilizationInfo_v1_t, ofaUtil) == 32,
                  "nvmlProcessUtilizationInfo_v1_t.ofaUtil");

FGPU_NVML_ASSERT_(sizeof(nvmlProcessesUtilizationInfo_v1_t) == 24, "nvmlProcessesUtilizationInfo_v1_t size");
FGPU_NVML_ASSERT_(offsetof(nvmlProcessesUtilizationInfo_v1_t, version) == 0,
                  "nvmlProcessesUtilizationInfo_v1_t.version");
FGPU_NVML_ASSERT_(offsetof(nvmlProcessesUtilizationInfo_v1_t, processSamplesCount) == 4,
                  "nvmlProcessesUtilizationInfo_v1_t.processSamplesCount");
FGPU_NVML_ASSERT_(offsetof(nvmlProcessesUtilizationInfo_v1_t, lastSeenTimeStamp) == 8,
                  "nvmlProcessesUtilizationInfo_v1_t.lastSeenTimeStamp");
FGPU_NVML_ASSERT_(offsetof(nvmlProcessesUtilizationInfo_v1_t, procUtilArray) == 16,
                  "nvmlProcessesUtilizationInfo_v1_t.procUtilArray");
FGPU_NVML_ASSERT_(nvmlProcessesUtilizationInfo_v1 == 0x01000018u, "nvmlProcessesUtilizationInfo_v1 constant");

FGPU_NVML_ASSERT_(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t (v3) size");
FGPU_NVML_ASSERT_(offsetof(nvmlPciInfo_t, domain) == 16, "nvmlPciInfo_t.domain");
FGPU_NVML_ASSERT_(offsetof(nvmlPciInfo_t, pciSubSystemId) == 32, "nvmlPciInfo_t.pciSubSystemId");
FGPU_NVML_ASSERT_(offsetof(nvmlPciInfo_t, busId) == 36, "nvmlPciInfo_t.busId");

// MIG structs (LP64 layouts of nvml.h; sizes follow from the field lists).
FGPU_NVML_ASSERT_(sizeof(nvmlGpuInstancePlacement_t) == 8, "nvmlGpuInstancePlacement_t size");
FGPU_NVML_ASSERT_(sizeof(nvmlGpuInstanceProfileInfo_t) == 48, "nvmlGpuInstanceProfileInfo_t size");
FGPU_NVML_ASSERT_(offsetof(nvmlGpuInstanceProfileInfo_t, memorySizeMB) == 40, "nvmlGpuInstanceProfileInfo_t.memorySizeMB");
FGPU_NVML_ASSERT_(sizeof(nvmlGpuInstanceProfileInfo_v2_t) == 152, "nvmlGpuInstanceProfileInfo_v2_t size");
FGPU_NVML_ASSERT_(offsetof(nvmlGpuInstanceProfileInfo_v2_t, name) == 56, "nvmlGpuInstanceProfileInfo_v2_t.name");
FGPU_NVML_ASSERT_(sizeof(nvmlGpuInstanceProfileInfo_v3_t) == 152, "nvmlGpuInstanceProfileInfo_v3_t size");
FGPU_NVML_ASSERT_(offsetof(nvmlGpuInstanceProfileInfo_v3_t, memorySizeMB) == 40,
                  "nvmlGpuInstanceProfileInfo_v3_t.memorySizeMB");
FGPU_NVML_ASSERT_(offsetof(nvmlGpuInstanceProfileInfo_v3_t, capabilities) == 144,
                  "nvmlGpuInstanceProfileInfo_v3_t.capabilities");
FGPU_NVML_ASSERT_(nvmlGpuInstanceProfileInfo_v2 == 0x02000098u, "nvmlGpuInstanceProfileInfo_v2 constant");
FGPU_NVML_ASSERT_(nvmlGpuInstanceProfileInfo_v3 == 0x03000098u, "nvmlGpuInstanceProfileInfo_v3 constant");
FGPU_NVML_ASSERT_(sizeof(nvmlGpuInstanceInfo_t) == 24, "nvmlGpuInstanceInfo_t size");
FGPU_NVML_ASSERT_(offsetof(nvmlGpuInstanceInfo_t, placement) == 16, "nvmlGpuInstanceInfo_t.placement");
FGPU_NVML_ASSERT_(sizeof(nvmlComputeInstanceProfileInfo_t) == 36, "nvmlComputeInstanceProfileInfo_t size");
FGPU_NVML_ASSERT_(sizeof(nvmlComputeInstanceProfileInfo_v2_t) == 136, "nvmlComputeInstanceProfileInfo_v2_t size");
FGPU_NVML_ASSERT_(sizeof(nvmlComputeInstanceProfileInfo_v3_t) == 140, "nvmlComputeInstanceProfileInfo_v3_t size");
FGPU_NVML_ASSERT_(offsetof(nvmlComputeInstanceProfileInfo_v3_t, capabilities) == 136,
                  "nvmlComputeInstanceProfileInfo_v3_t.capabilities");
FGPU_NVML_ASSERT_(sizeof(nvmlComputeInstanceInfo_t) == 32, "nvmlComputeInstanceInfo_t size");
FGPU_NVML_ASSERT_(sizeof(nvmlEventData_t) == 32, "nvmlEventData_t is 32 bytes on LP64");
FGPU_NVML_ASSERT_(offsetof(nvmlComputeInstanceInfo_t, id) == 16, "nvmlComputeInstanceInfo_t.id");
FGPU_NVML_ASSERT_(offsetof(nvmlComputeInstanceInfo_t, placement) == 24, "nvmlComputeInstanceInfo_t.placement");

#undef FGPU_NVML_ASSERT_

#endif  // FGPU_CORE_ABI_NVML_TYPES_H_
