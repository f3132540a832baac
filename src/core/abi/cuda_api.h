// fgpu's own prototypes of the CUDA driver API entry points (ABI of CUDA 13.0).
//
// Contract: each declaration names the exact symbol libcuda.so.1 exports and
// has exactly the signature the CUDA 13.0 toolkit gives that symbol. Unlike
// cuda.h, nothing is renamed by macros: `cuMemAlloc` is the legacy 32-bit entry
// point and `cuMemAlloc_v2` the current one, two functions with two signatures.
// Legacy variants take CUdeviceptr_v1 / unsigned int sizes, and the `_ptsz` /
// `_ptds` variants are the per-thread-default-stream twins of the plain ones.
//
// The simulated driver defines these functions; the probe and the interposer
// call or wrap them. The list of symbols, with the CUDA version that introduced
// each ABI variant, is cuda_symbols.inc. cuda_abi_check_api.cc compiles these
// prototypes against the real cuda.h and cudaTypedefs.h when the toolkit exists.
//
// After the real cuda.h (whose types this then uses), only with
// __CUDA_API_VERSION_INTERNAL defined first: otherwise cuda.h's renaming macros
// (cuMemAlloc -> cuMemAlloc_v2, ...) turn the legacy prototypes into conflicts.
// No CUDAAPI calling-convention macro: fgpu targets Linux, where it is empty.
#ifndef FGPU_CORE_ABI_CUDA_API_H
#define FGPU_CORE_ABI_CUDA_API_H

#include "core/abi/cuda_types.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- Initialization, version, errors, entry points
CUresult cuInit(unsigned int Flags);
CUresult cuDriverGetVersion(int* driverVersion);
CUresult cuGetErrorName(CUresult error, const char** pStr);
CUresult cuGetErrorString(CUresult error, const char** pStr);
CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags);
CUresult cuGetProcAddress_v2(
    const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
    CUdriverProcAddressQueryResult* symbolStatus);

// ---- Devices
CUresult cuDeviceGet(CUdevice* device, int ordinal);
CUresult cuDeviceGetCount(int* count);
CUresult cuDeviceGetName(char* name, int len, CUdevice dev);
CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice dev);
CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev);
CUresult cuDeviceTotalMem(unsigned int* bytes, CUdevice dev);
CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev);
CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev);
CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice dev);
CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev);
CUresult cuDeviceGetByPCIBusId(CUdevice* dev, const char* pciBusId);
CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev);
CUresult cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev);
CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool);
CUresult cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev);
CUresult cuDeviceGetProperties(CUdevprop* prop, CUdevice dev);

// ---- Primary contexts
CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev);
CUresult cuDevicePrimaryCtxRelease(CUdevice dev);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev);
CUresult cuDevicePrimaryCtxReset(CUdevice dev);
CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev);
CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active);
CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags);
CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags);

// ---- Contexts
CUresult cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev);
CUresult cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev);
CUresult cuCtxCreate_v3(
    CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams, unsigned int flags,
    CUdevice dev);
CUresult cuCtxCreate_v4(
    CUcontext* pctx, CUctxCreateParams* ctxCreateParams, unsigned int flags, CUdevice dev);
CUresult cuCtxDestroy(CUcontext ctx);
CUresult cuCtxDestroy_v2(CUcontext ctx);
CUresult cuCtxPushCurrent(CUcontext ctx);
CUresult cuCtxPushCurrent_v2(CUcontext ctx);
CUresult cuCtxPopCurrent(CUcontext* pctx);
CUresult cuCtxPopCurrent_v2(CUcontext* pctx);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuCtxGetCurrent(CUcontext* pctx);
CUresult cuCtxGetDevice(CUdevice* device);
CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx);
CUresult cuCtxSynchronize(void);
CUresult cuCtxSynchronize_v2(CUcontext ctx);
CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int* version);
CUresult cuCtxGetFlags(unsigned int* flags);
CUresult cuCtxSetFlags(unsigned int flags);
CUresult cuCtxGetId(CUcontext ctx, unsigned long long* ctxId);
CUresult cuCtxGetLimit(size_t* pvalue, CUlimit limit);
CUresult cuCtxSetLimit(CUlimit limit, size_t value);
CUresult cuCtxGetStreamPriorityRange(int* leastPriority, int* greatestPriority);

// ---- Memory: allocation, host memory, copies, sets
CUresult cuMemGetInfo(unsigned int* free, unsigned int* total);
CUresult cuMemGetInfo_v2(size_t* free, size_t* total);
CUresult cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize);
CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize);
CUresult cuMemAllocPitch(
    CUdeviceptr_v1* dptr, unsigned int* pPitch, unsigned int WidthInBytes, unsigned int Height,
    unsigned int ElementSizeBytes);
CUresult cuMemAllocPitch_v2(
    CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
    unsigned int ElementSizeBytes);
CUresult cuMemFree(CUdeviceptr_v1 dptr);
CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags);
CUresult cuMemAllocHost(void** pp, unsigned int bytesize);
CUresult cuMemAllocHost_v2(void** pp, size_t bytesize);
CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags);
CUresult cuMemFreeHost(void* p);
CUresult cuMemHostGetDevicePointer(CUdeviceptr_v1* pdptr, void* p, unsigned int Flags);
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* pdptr, void* p, unsigned int Flags);
CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags);
CUresult cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int Flags);
CUresult cuMemHostUnregister(void* p);
CUresult cuMemGetAddressRange(CUdeviceptr_v1* pbase, unsigned int* psize, CUdeviceptr_v1 dptr);
CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr);
CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr);
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream);
CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream);
CUresult cuMemcpyHtoD(CUdeviceptr_v1 dstDevice, const void* srcHost, unsigned int ByteCount);
CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount);
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount);
CUresult cuMemcpyDtoH(void* dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount);
CUresult cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemcpyDtoH_v2_ptds(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemcpyDtoD(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount);
CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemcpyHtoDAsync(
    CUdeviceptr_v1 dstDevice, const void* srcHost, unsigned int ByteCount, CUstream hStream);
CUresult cuMemcpyHtoDAsync_v2(
    CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount, CUstream hStream);
CUresult cuMemcpyHtoDAsync_v2_ptsz(
    CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount, CUstream hStream);
CUresult cuMemcpyDtoHAsync(
    void* dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount, CUstream hStream);
CUresult cuMemcpyDtoHAsync_v2(
    void* dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream);
CUresult cuMemcpyDtoHAsync_v2_ptsz(
    void* dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream);
CUresult cuMemcpyDtoDAsync(
    CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice, unsigned int ByteCount, CUstream hStream);
CUresult cuMemcpyDtoDAsync_v2(
    CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream);
CUresult cuMemcpyDtoDAsync_v2_ptsz(
    CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream);
CUresult cuMemcpy2D(const CUDA_MEMCPY2D_v1* pCopy);
CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D* pCopy);
CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D* pCopy);
CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D_v1* pCopy, CUstream hStream);
CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D* pCopy, CUstream hStream);
CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D* pCopy, CUstream hStream);
CUresult cuMemcpy2DUnaligned(const CUDA_MEMCPY2D_v1* pCopy);
CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D* pCopy);
CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D* pCopy);
CUresult cuMemcpy3D(const CUDA_MEMCPY3D_v1* pCopy);
CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D* pCopy);
CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D* pCopy);
CUresult cuMemcpy3DAsync(const CUDA_MEMCPY3D_v1* pCopy, CUstream hStream);
CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D* pCopy, CUstream hStream);
CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D* pCopy, CUstream hStream);
CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER* pCopy);
CUresult cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER* pCopy);
CUresult cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER* pCopy, CUstream hStream);
CUresult cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER* pCopy, CUstream hStream);
CUresult cuMemcpyDtoA(CUarray dstArray, unsigned int dstOffset, CUdeviceptr_v1 srcDevice, unsigned int ByteCount);
CUresult cuMemcpyDtoA_v2(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemcpyDtoA_v2_ptds(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemcpyAtoD(CUdeviceptr_v1 dstDevice, CUarray srcArray, unsigned int srcOffset, unsigned int ByteCount);
CUresult cuMemcpyAtoD_v2(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount);
CUresult cuMemcpyAtoD_v2_ptds(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount);
CUresult cuMemcpyHtoA(CUarray dstArray, unsigned int dstOffset, const void* srcHost, unsigned int ByteCount);
CUresult cuMemcpyHtoA_v2(CUarray dstArray, size_t dstOffset, const void* srcHost, size_t ByteCount);
CUresult cuMemcpyHtoA_v2_ptds(CUarray dstArray, size_t dstOffset, const void* srcHost, size_t ByteCount);
CUresult cuMemcpyAtoH(void* dstHost, CUarray srcArray, unsigned int srcOffset, unsigned int ByteCount);
CUresult cuMemcpyAtoH_v2(void* dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount);
CUresult cuMemcpyAtoH_v2_ptds(void* dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount);
CUresult cuMemcpyAtoA(CUarray dstArray, unsigned int dstOffset, CUarray srcArray, unsigned int srcOffset,
                      unsigned int ByteCount);
CUresult cuMemcpyAtoA_v2(CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset, size_t ByteCount);
CUresult cuMemcpyAtoA_v2_ptds(CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset,
                              size_t ByteCount);
CUresult cuMemcpyHtoAAsync(CUarray dstArray, unsigned int dstOffset, const void* srcHost, unsigned int ByteCount,
                           CUstream hStream);
CUresult cuMemcpyHtoAAsync_v2(CUarray dstArray, size_t dstOffset, const void* srcHost, size_t ByteCount,
                              CUstream hStream);
CUresult cuMemcpyHtoAAsync_v2_ptsz(CUarray dstArray, size_t dstOffset, const void* srcHost, size_t ByteCount,
                                   CUstream hStream);
CUresult cuMemcpyAtoHAsync(void* dstHost, CUarray srcArray, unsigned int srcOffset, unsigned int ByteCount,
                           CUstream hStream);
CUresult cuMemcpyAtoHAsync_v2(void* dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount, CUstream hStream);
CUresult cuMemcpyAtoHAsync_v2_ptsz(void* dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount,
                                   CUstream hStream);
// Batched copies: the 12.8 prototypes (with failIdx) and 13.0's _v2 (without).
CUresult cuMemcpyBatchAsync(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                            CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs, size_t* failIdx,
                            CUstream hStream);
CUresult cuMemcpyBatchAsync_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                 CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs, size_t* failIdx,
                                 CUstream hStream);
CUresult cuMemcpyBatchAsync_v2(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                               CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs, CUstream hStream);
CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                                    CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs,
                                    CUstream hStream);
CUresult cuMemcpy3DBatchAsync(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList, size_t* failIdx,
                              unsigned long long flags, CUstream hStream);
CUresult cuMemcpy3DBatchAsync_ptsz(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList, size_t* failIdx,
                                   unsigned long long flags, CUstream hStream);
CUresult cuMemcpy3DBatchAsync_v2(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList, unsigned long long flags,
                                 CUstream hStream);
CUresult cuMemcpy3DBatchAsync_v2_ptsz(size_t numOps, CUDA_MEMCPY3D_BATCH_OP* opList, unsigned long long flags,
                                      CUstream hStream);
// Array planes, sparse and deferred-mapping arrays.
CUresult cuArrayGetPlane(CUarray* pPlaneArray, CUarray hArray, unsigned int planeIdx);
CUresult cuArrayGetSparseProperties(CUDA_ARRAY_SPARSE_PROPERTIES* sparseProperties, CUarray array);
CUresult cuMipmappedArrayGetSparseProperties(CUDA_ARRAY_SPARSE_PROPERTIES* sparseProperties,
                                             CUmipmappedArray mipmap);
CUresult cuArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* memoryRequirements, CUarray array,
                                      CUdevice device);
CUresult cuMipmappedArrayGetMemoryRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* memoryRequirements,
                                               CUmipmappedArray mipmap, CUdevice device);
CUresult cuMemMapArrayAsync(CUarrayMapInfo* mapInfoList, unsigned int count, CUstream hStream);
CUresult cuMemMapArrayAsync_ptsz(CUarrayMapInfo* mapInfoList, unsigned int count, CUstream hStream);
CUresult cuMemsetD8(CUdeviceptr_v1 dstDevice, unsigned char uc, unsigned int N);
CUresult cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N);
CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N);
CUresult cuMemsetD16(CUdeviceptr_v1 dstDevice, unsigned short us, unsigned int N);
CUresult cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N);
CUresult cuMemsetD16_v2_ptds(CUdeviceptr dstDevice, unsigned short us, size_t N);
CUresult cuMemsetD32(CUdeviceptr_v1 dstDevice, unsigned int ui, unsigned int N);
CUresult cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N);
CUresult cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N);
CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream);
CUresult cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream);
CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream);
CUresult cuMemsetD16Async_ptsz(
    CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream);
CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream);
CUresult cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream);

// ---- Virtual memory management
CUresult cuMemCreate(
    CUmemGenericAllocationHandle* handle, size_t size, const CUmemAllocationProp* prop,
    unsigned long long flags);
CUresult cuMemRelease(CUmemGenericAllocationHandle handle);
CUresult cuMemAddressReserve(
    CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags);
CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size);
CUresult cuMemMap(
    CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
    unsigned long long flags);
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size);
CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count);
CUresult cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr);
CUresult cuMemGetAllocationGranularity(
    size_t* granularity, const CUmemAllocationProp* prop, CUmemAllocationGranularity_flags option);
CUresult cuMemGetAllocationPropertiesFromHandle(
    CUmemAllocationProp* prop, CUmemGenericAllocationHandle handle);
CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr);
CUresult cuMemExportToShareableHandle(
    void* shareableHandle, CUmemGenericAllocationHandle handle,
    CUmemAllocationHandleType handleType, unsigned long long flags);
CUresult cuMemImportFromShareableHandle(
    CUmemGenericAllocationHandle* handle, void* osHandle, CUmemAllocationHandleType shHandleType);

// ---- Stream-ordered allocation and memory pools
CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream);
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult cuMemAllocFromPoolAsync(
    CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream);
CUresult cuMemAllocFromPoolAsync_ptsz(
    CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream);
CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* poolProps);
CUresult cuMemPoolDestroy(CUmemoryPool pool);
CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value);
CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value);
CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep);
CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map, size_t count);

// ---- Arrays
CUresult cuArrayCreate(CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR_v1* pAllocateArray);
CUresult cuArrayCreate_v2(CUarray* pHandle, const CUDA_ARRAY_DESCRIPTOR* pAllocateArray);
CUresult cuArray3DCreate(CUarray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1* pAllocateArray);
CUresult cuArray3DCreate_v2(CUarray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* pAllocateArray);
CUresult cuArrayDestroy(CUarray hArray);
CUresult cuArrayGetDescriptor(CUDA_ARRAY_DESCRIPTOR_v1* pArrayDescriptor, CUarray hArray);
CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR* pArrayDescriptor, CUarray hArray);
CUresult cuArray3DGetDescriptor(CUDA_ARRAY3D_DESCRIPTOR_v1* pArrayDescriptor, CUarray hArray);
CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR* pArrayDescriptor, CUarray hArray);
CUresult cuMipmappedArrayCreate(
    CUmipmappedArray* pHandle, const CUDA_ARRAY3D_DESCRIPTOR* pMipmappedArrayDesc,
    unsigned int numMipmapLevels);
CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray);
CUresult cuMipmappedArrayGetLevel(
    CUarray* pLevelArray, CUmipmappedArray hMipmappedArray, unsigned int level);

// ---- Modules, libraries, functions
CUresult cuModuleLoad(CUmodule* module, const char* fname);
CUresult cuModuleLoadData(CUmodule* module, const void* image);
CUresult cuModuleLoadDataEx(
    CUmodule* module, const void* image, unsigned int numOptions, CUjit_option* options,
    void** optionValues);
CUresult cuModuleLoadFatBinary(CUmodule* module, const void* fatCubin);
CUresult cuModuleUnload(CUmodule hmod);
CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name);
CUresult cuModuleGetGlobal(
    CUdeviceptr_v1* dptr, unsigned int* bytes, CUmodule hmod, const char* name);
CUresult cuModuleGetGlobal_v2(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod, const char* name);
CUresult cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc);
CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value);
CUresult cuFuncGetName(const char** name, CUfunction hfunc);
CUresult cuLibraryLoadData(
    CUlibrary* library, const void* code, CUjit_option* jitOptions, void** jitOptionsValues,
    unsigned int numJitOptions, CUlibraryOption* libraryOptions, void** libraryOptionValues,
    unsigned int numLibraryOptions);
CUresult cuLibraryUnload(CUlibrary library);
CUresult cuLibraryGetKernel(CUkernel* pKernel, CUlibrary library, const char* name);
CUresult cuKernelGetFunction(CUfunction* pFunc, CUkernel kernel);

// ---- Launch
CUresult cuLaunchKernel(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
    unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra);
CUresult cuLaunchKernel_ptsz(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
    unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra);
CUresult cuLaunchKernelEx(
    const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra);
CUresult cuLaunchKernelEx_ptsz(
    const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra);
CUresult cuLaunchCooperativeKernel(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
    unsigned int sharedMemBytes, CUstream hStream, void** kernelParams);
CUresult cuLaunchCooperativeKernel_ptsz(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
    unsigned int sharedMemBytes, CUstream hStream, void** kernelParams);
CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void* userData);
CUresult cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void* userData);

// ---- Streams and stream capture
CUresult cuStreamCreate(CUstream* phStream, unsigned int Flags);
CUresult cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority);
CUresult cuStreamDestroy(CUstream hStream);
CUresult cuStreamDestroy_v2(CUstream hStream);
CUresult cuStreamSynchronize(CUstream hStream);
CUresult cuStreamSynchronize_ptsz(CUstream hStream);
CUresult cuStreamQuery(CUstream hStream);
CUresult cuStreamQuery_ptsz(CUstream hStream);
CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags);
CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags);
CUresult cuStreamGetPriority(CUstream hStream, int* priority);
CUresult cuStreamGetPriority_ptsz(CUstream hStream, int* priority);
CUresult cuStreamGetFlags(CUstream hStream, unsigned int* flags);
CUresult cuStreamGetFlags_ptsz(CUstream hStream, unsigned int* flags);
CUresult cuStreamGetCtx(CUstream hStream, CUcontext* pctx);
CUresult cuStreamGetCtx_ptsz(CUstream hStream, CUcontext* pctx);
CUresult cuStreamAddCallback(
    CUstream hStream, CUstreamCallback callback, void* userData, unsigned int flags);
CUresult cuStreamAddCallback_ptsz(
    CUstream hStream, CUstreamCallback callback, void* userData, unsigned int flags);
CUresult cuStreamBeginCapture(CUstream hStream);
CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode);
CUresult cuStreamBeginCapture_ptsz(CUstream hStream);
CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode);
CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph);
CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph);
CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus* captureStatus);
CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus);

// ---- Events
CUresult cuEventCreate(CUevent* phEvent, unsigned int Flags);
CUresult cuEventRecord(CUevent hEvent, CUstream hStream);
CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream);
CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags);
CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags);
CUresult cuEventQuery(CUevent hEvent);
CUresult cuEventSynchronize(CUevent hEvent);
CUresult cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd);
CUresult cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart, CUevent hEnd);
CUresult cuEventDestroy(CUevent hEvent);
CUresult cuEventDestroy_v2(CUevent hEvent);

// ---- Graphs
CUresult cuGraphCreate(CUgraph* phGraph, unsigned int flags);
CUresult cuGraphDestroy(CUgraph hGraph);
CUresult cuGraphAddKernelNode(
    CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
    size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams);
CUresult cuGraphAddKernelNode_v2(
    CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
    size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS* nodeParams);
CUresult cuGraphAddMemAllocNode(
    CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
    size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS* nodeParams);
CUresult cuGraphAddMemFreeNode(
    CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
    size_t numDependencies, CUdeviceptr dptr);
CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes);
CUresult cuGraphAddEmptyNode(
    CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
    size_t numDependencies);
CUresult cuGraphAddChildGraphNode(
    CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
    size_t numDependencies, CUgraph childGraph);
CUresult cuGraphAddNode(
    CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
    size_t numDependencies, CUgraphNodeParams* nodeParams);
CUresult cuGraphAddNode_v2(
    CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
    const CUgraphEdgeData* dependencyData, size_t numDependencies, CUgraphNodeParams* nodeParams);
CUresult cuGraphClone(CUgraph* phGraphClone, CUgraph originalGraph);
CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type);
CUresult cuGraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph* phGraph);
CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS* params_out);
CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr* dptr_out);
CUresult cuGraphInstantiate(
    CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode, char* logBuffer,
    size_t bufferSize);
CUresult cuGraphInstantiate_v2(
    CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode, char* logBuffer,
    size_t bufferSize);
CUresult cuGraphInstantiateWithFlags(
    CUgraphExec* phGraphExec, CUgraph hGraph, unsigned long long flags);
CUresult cuGraphInstantiateWithParams(
    CUgraphExec* phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams);
CUresult cuGraphInstantiateWithParams_ptsz(
    CUgraphExec* phGraphExec, CUgraph hGraph, CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams);
CUresult cuGraphLaunch(CUgraphExec hGraph, CUstream hStream);
CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream);
CUresult cuGraphExecDestroy(CUgraphExec hGraphExec);
CUresult cuGraphUpload(CUgraphExec hGraph, CUstream hStream);
CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream);
CUresult cuDeviceGraphMemTrim(CUdevice device);
CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void* value);
CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void* value);

// ---- Graph edges, node kinds, executable graph updates, user objects
CUresult cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to, size_t numDependencies);
CUresult cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                   const CUgraphEdgeData* edgeData, size_t numDependencies);
CUresult cuGraphRemoveDependencies(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                   size_t numDependencies);
CUresult cuGraphRemoveDependencies_v2(CUgraph hGraph, const CUgraphNode* from, const CUgraphNode* to,
                                      const CUgraphEdgeData* edgeData, size_t numDependencies);
CUresult cuGraphGetEdges(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to, size_t* numEdges);
CUresult cuGraphGetEdges_v2(CUgraph hGraph, CUgraphNode* from, CUgraphNode* to, CUgraphEdgeData* edgeData,
                            size_t* numEdges);
CUresult cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode* dependencies, size_t* numDependencies);
CUresult cuGraphNodeGetDependencies_v2(CUgraphNode hNode, CUgraphNode* dependencies, CUgraphEdgeData* edgeData,
                                       size_t* numDependencies);
CUresult cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode* dependentNodes, size_t* numDependentNodes);
CUresult cuGraphNodeGetDependentNodes_v2(CUgraphNode hNode, CUgraphNode* dependentNodes, CUgraphEdgeData* edgeData,
                                         size_t* numDependentNodes);
CUresult cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode* rootNodes, size_t* numRootNodes);
CUresult cuGraphDestroyNode(CUgraphNode hNode);
CUresult cuGraphNodeFindInClone(CUgraphNode* phNode, CUgraphNode hOriginalNode, CUgraph hClonedGraph);
CUresult cuGraphDebugDotPrint(CUgraph hGraph, const char* path, unsigned int flags);
CUresult cuGraphNodeSetParams(CUgraphNode hNode, CUgraphNodeParams* nodeParams);
CUresult cuGraphExecNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, CUgraphNodeParams* nodeParams);
CUresult cuGraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v1* nodeParams);
CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS* nodeParams);
CUresult cuGraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams);
CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS* nodeParams);
CUresult cuGraphKernelNodeGetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr, CUkernelNodeAttrValue* value_out);
CUresult cuGraphKernelNodeSetAttribute(CUgraphNode hNode, CUkernelNodeAttrID attr, const CUkernelNodeAttrValue* value);
CUresult cuGraphKernelNodeCopyAttributes(CUgraphNode dst, CUgraphNode src);
CUresult cuGraphAddMemsetNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                              size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS* memsetParams, CUcontext ctx);
CUresult cuGraphMemsetNodeGetParams(CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS* nodeParams);
CUresult cuGraphMemsetNodeSetParams(CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS* nodeParams);
CUresult cuGraphAddMemcpyNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                              size_t numDependencies, const CUDA_MEMCPY3D* copyParams, CUcontext ctx);
CUresult cuGraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D* nodeParams);
CUresult cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D* nodeParams);
CUresult cuGraphAddHostNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                            size_t numDependencies, const CUDA_HOST_NODE_PARAMS* nodeParams);
CUresult cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS* nodeParams);
CUresult cuGraphHostNodeSetParams(CUgraphNode hNode, const CUDA_HOST_NODE_PARAMS* nodeParams);
CUresult cuGraphAddEventRecordNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                   size_t numDependencies, CUevent event);
CUresult cuGraphEventRecordNodeGetEvent(CUgraphNode hNode, CUevent* event_out);
CUresult cuGraphEventRecordNodeSetEvent(CUgraphNode hNode, CUevent event);
CUresult cuGraphAddEventWaitNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                 size_t numDependencies, CUevent event);
CUresult cuGraphEventWaitNodeGetEvent(CUgraphNode hNode, CUevent* event_out);
CUresult cuGraphEventWaitNodeSetEvent(CUgraphNode hNode, CUevent event);
CUresult cuGraphAddExternalSemaphoresSignalNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                                const CUgraphNode* dependencies, size_t numDependencies,
                                                const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS* nodeParams);
CUresult cuGraphExternalSemaphoresSignalNodeGetParams(CUgraphNode hNode, CUDA_EXT_SEM_SIGNAL_NODE_PARAMS* params_out);
CUresult cuGraphExternalSemaphoresSignalNodeSetParams(CUgraphNode hNode,
                                                      const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS* nodeParams);
CUresult cuGraphAddExternalSemaphoresWaitNode(CUgraphNode* phGraphNode, CUgraph hGraph,
                                              const CUgraphNode* dependencies, size_t numDependencies,
                                              const CUDA_EXT_SEM_WAIT_NODE_PARAMS* nodeParams);
CUresult cuGraphExternalSemaphoresWaitNodeGetParams(CUgraphNode hNode, CUDA_EXT_SEM_WAIT_NODE_PARAMS* params_out);
CUresult cuGraphExternalSemaphoresWaitNodeSetParams(CUgraphNode hNode,
                                                    const CUDA_EXT_SEM_WAIT_NODE_PARAMS* nodeParams);
CUresult cuGraphAddBatchMemOpNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                  size_t numDependencies, const CUDA_BATCH_MEM_OP_NODE_PARAMS* nodeParams);
CUresult cuGraphBatchMemOpNodeGetParams(CUgraphNode hNode, CUDA_BATCH_MEM_OP_NODE_PARAMS* nodeParams_out);
CUresult cuGraphBatchMemOpNodeSetParams(CUgraphNode hNode, const CUDA_BATCH_MEM_OP_NODE_PARAMS* nodeParams);
CUresult cuGraphConditionalHandleCreate(CUgraphConditionalHandle* pHandle_out, CUgraph hGraph, CUcontext ctx,
                                        unsigned int defaultLaunchValue, unsigned int flags);
CUresult cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                        const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams);
CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
                                           const CUDA_KERNEL_NODE_PARAMS* nodeParams);
CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                        const CUDA_MEMSET_NODE_PARAMS* memsetParams, CUcontext ctx);
CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, const CUDA_MEMCPY3D* copyParams,
                                        CUcontext ctx);
CUresult cuGraphExecHostNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                      const CUDA_HOST_NODE_PARAMS* nodeParams);
CUresult cuGraphExecChildGraphNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, CUgraph childGraph);
CUresult cuGraphExecEventRecordNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode, CUevent event);
CUresult cuGraphExecEventWaitNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode, CUevent event);
CUresult cuGraphExecExternalSemaphoresSignalNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                          const CUDA_EXT_SEM_SIGNAL_NODE_PARAMS* nodeParams);
CUresult cuGraphExecExternalSemaphoresWaitNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                        const CUDA_EXT_SEM_WAIT_NODE_PARAMS* nodeParams);
CUresult cuGraphExecBatchMemOpNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                            const CUDA_BATCH_MEM_OP_NODE_PARAMS* nodeParams);
CUresult cuGraphNodeSetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int isEnabled);
CUresult cuGraphNodeGetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int* isEnabled);
CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode* hErrorNode_out,
                           CUgraphExecUpdateResult* updateResult_out);
CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo* resultInfo);
CUresult cuGraphExecGetFlags(CUgraphExec hGraphExec, cuuint64_t* flags);
CUresult cuUserObjectCreate(CUuserObject* object_out, void* ptr, CUhostFn destroy, unsigned int initialRefcount,
                            unsigned int flags);
CUresult cuUserObjectRetain(CUuserObject object, unsigned int count);
CUresult cuUserObjectRelease(CUuserObject object, unsigned int count);
CUresult cuGraphRetainUserObject(CUgraph graph, CUuserObject object, unsigned int count, unsigned int flags);
CUresult cuGraphReleaseUserObject(CUgraph graph, CUuserObject object, unsigned int count);

// ---- Stream capture info and dependencies, stream attributes
CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode* dependencies,
                                     const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                     CUstreamCaptureMode mode);
CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph, const CUgraphNode* dependencies,
                                          const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                          CUstreamCaptureMode mode);
CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus* captureStatus_out, cuuint64_t* id_out);
CUresult cuStreamGetCaptureInfo_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                     cuuint64_t* id_out);
CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus* captureStatus_out, cuuint64_t* id_out,
                                   CUgraph* graph_out, const CUgraphNode** dependencies_out,
                                   size_t* numDependencies_out);
CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                        cuuint64_t* id_out, CUgraph* graph_out,
                                        const CUgraphNode** dependencies_out, size_t* numDependencies_out);
CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus* captureStatus_out, cuuint64_t* id_out,
                                   CUgraph* graph_out, const CUgraphNode** dependencies_out,
                                   const CUgraphEdgeData** edgeData_out, size_t* numDependencies_out);
CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream, CUstreamCaptureStatus* captureStatus_out,
                                        cuuint64_t* id_out, CUgraph* graph_out,
                                        const CUgraphNode** dependencies_out, const CUgraphEdgeData** edgeData_out,
                                        size_t* numDependencies_out);
CUresult cuStreamUpdateCaptureDependencies(CUstream hStream, CUgraphNode* dependencies, size_t numDependencies,
                                           unsigned int flags);
CUresult cuStreamUpdateCaptureDependencies_ptsz(CUstream hStream, CUgraphNode* dependencies,
                                                size_t numDependencies, unsigned int flags);
CUresult cuStreamUpdateCaptureDependencies_v2(CUstream hStream, CUgraphNode* dependencies,
                                              const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                              unsigned int flags);
CUresult cuStreamUpdateCaptureDependencies_v2_ptsz(CUstream hStream, CUgraphNode* dependencies,
                                                   const CUgraphEdgeData* dependencyData, size_t numDependencies,
                                                   unsigned int flags);
CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode);
CUresult cuStreamGetAttribute(CUstream hStream, CUstreamAttrID attr, CUstreamAttrValue* value_out);
CUresult cuStreamGetAttribute_ptsz(CUstream hStream, CUstreamAttrID attr, CUstreamAttrValue* value_out);
CUresult cuStreamSetAttribute(CUstream hStream, CUstreamAttrID attr, const CUstreamAttrValue* value);
CUresult cuStreamSetAttribute_ptsz(CUstream hStream, CUstreamAttrID attr, const CUstreamAttrValue* value);
CUresult cuStreamCopyAttributes(CUstream dst, CUstream src);
CUresult cuStreamCopyAttributes_ptsz(CUstream dst, CUstream src);
CUresult cuStreamGetCtx_v2(CUstream hStream, CUcontext* pCtx, CUgreenCtx* pGreenCtx);
CUresult cuStreamGetCtx_v2_ptsz(CUstream hStream, CUcontext* pCtx, CUgreenCtx* pGreenCtx);

// Inter-process memory and events
CUresult cuIpcGetMemHandle(CUipcMemHandle* pHandle, CUdeviceptr dptr);
CUresult cuIpcOpenMemHandle(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags);
CUresult cuIpcOpenMemHandle_v2(CUdeviceptr* pdptr, CUipcMemHandle handle, unsigned int Flags);
CUresult cuIpcCloseMemHandle(CUdeviceptr dptr);
CUresult cuIpcGetEventHandle(CUipcEventHandle* pHandle, CUevent event);
CUresult cuIpcOpenEventHandle(CUevent* phEvent, CUipcEventHandle handle);

// Peer access, function cache, host allocation flags
CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags);
CUresult cuCtxDisablePeerAccess(CUcontext peerContext);
CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config);
CUresult cuMemHostGetFlags(unsigned int* pFlags, void* p);

// Occupancy
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, CUfunction func, int blockSize,
                                                     size_t dynamicSMemSize);
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* numBlocks, CUfunction func, int blockSize,
                                                              size_t dynamicSMemSize, unsigned int flags);
CUresult cuOccupancyMaxPotentialBlockSize(int* minGridSize, int* blockSize, CUfunction func,
                                          CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize,
                                          int blockSizeLimit);
CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int* minGridSize, int* blockSize, CUfunction func,
                                                   CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                   size_t dynamicSMemSize, int blockSizeLimit, unsigned int flags);
CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t* dynamicSmemSize, CUfunction func, int numBlocks,
                                                 int blockSize);

// The JIT linker
CUresult cuLinkCreate(unsigned int numOptions, CUjit_option* options, void** optionValues, CUlinkState* stateOut);
CUresult cuLinkCreate_v2(unsigned int numOptions, CUjit_option* options, void** optionValues, CUlinkState* stateOut);
CUresult cuLinkAddData(CUlinkState state, CUjitInputType type, void* data, size_t size, const char* name,
                       unsigned int numOptions, CUjit_option* options, void** optionValues);
CUresult cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void* data, size_t size, const char* name,
                          unsigned int numOptions, CUjit_option* options, void** optionValues);
CUresult cuLinkAddFile(CUlinkState state, CUjitInputType type, const char* path, unsigned int numOptions,
                       CUjit_option* options, void** optionValues);
CUresult cuLinkAddFile_v2(CUlinkState state, CUjitInputType type, const char* path, unsigned int numOptions,
                          CUjit_option* options, void** optionValues);
CUresult cuLinkComplete(CUlinkState state, void** cubinOut, size_t* sizeOut);
CUresult cuLinkDestroy(CUlinkState state);

// Profiler control
CUresult cuProfilerStart(void);
CUresult cuProfilerStop(void);

// Peer copies and 2D sets
CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
                      size_t ByteCount);
CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                           CUcontext srcContext, size_t ByteCount);
CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                           CUcontext srcContext, size_t ByteCount, CUstream hStream);
CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                CUcontext srcContext, size_t ByteCount, CUstream hStream);
CUresult cuMemsetD2D8(CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned char uc, unsigned int Width,
                      unsigned int Height);
CUresult cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height);
CUresult cuMemsetD2D8_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                              size_t Height);
CUresult cuMemsetD2D16(CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned short us, unsigned int Width,
                       unsigned int Height);
CUresult cuMemsetD2D16_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width, size_t Height);
CUresult cuMemsetD2D16_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                               size_t Height);
CUresult cuMemsetD2D32(CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned int ui, unsigned int Width,
                       unsigned int Height);
CUresult cuMemsetD2D32_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height);
CUresult cuMemsetD2D32_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                               size_t Height);
CUresult cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width, size_t Height,
                           CUstream hStream);
CUresult cuMemsetD2D8Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                size_t Height, CUstream hStream);
CUresult cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                            size_t Height, CUstream hStream);
CUresult cuMemsetD2D16Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                                 size_t Height, CUstream hStream);
CUresult cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width, size_t Height,
                            CUstream hStream);
CUresult cuMemsetD2D32Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                                 size_t Height, CUstream hStream);

// Stream identity
CUresult cuStreamGetId(CUstream hStream, unsigned long long* streamId);
CUresult cuStreamGetId_ptsz(CUstream hStream, unsigned long long* streamId);
CUresult cuStreamGetDevice(CUstream hStream, CUdevice* device);
CUresult cuStreamGetDevice_ptsz(CUstream hStream, CUdevice* device);

// Context and function preferences, legacy launch configuration, function loading
CUresult cuCtxGetCacheConfig(CUfunc_cache* pconfig);
CUresult cuCtxSetCacheConfig(CUfunc_cache config);
CUresult cuCtxGetSharedMemConfig(CUsharedconfig* pConfig);
CUresult cuCtxSetSharedMemConfig(CUsharedconfig config);
CUresult cuFuncSetSharedMemConfig(CUfunction hfunc, CUsharedconfig config);
CUresult cuFuncGetModule(CUmodule* hmod, CUfunction hfunc);
CUresult cuFuncIsLoaded(CUfunctionLoadingState* state, CUfunction function);
CUresult cuFuncLoad(CUfunction function);
CUresult cuFuncSetSharedSize(CUfunction hfunc, unsigned int bytes);
CUresult cuFuncSetBlockShape(CUfunction hfunc, int x, int y, int z);

// Module enumeration
CUresult cuModuleGetFunctionCount(unsigned int* count, CUmodule mod);
CUresult cuModuleEnumerateFunctions(CUfunction* functions, unsigned int numFunctions, CUmodule mod);
CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode* mode);

// Device links and identifiers
CUresult cuDeviceGetP2PAttribute(int* value, CUdevice_P2PAttribute attrib, CUdevice srcDevice, CUdevice dstDevice);
CUresult cuDeviceGetTexture1DLinearMaxWidth(size_t* maxWidthInElements, CUarray_format format,
                                            unsigned numChannels, CUdevice dev);
CUresult cuDeviceGetLuid(char* luid, unsigned int* deviceNodeMask, CUdevice dev);

// Pointer attributes
CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute* attributes, void** data,
                                CUdeviceptr ptr);
CUresult cuPointerSetAttribute(const void* value, CUpointer_attribute attribute, CUdeviceptr ptr);

// Context-wide events
CUresult cuCtxRecordEvent(CUcontext hCtx, CUevent hEvent);
CUresult cuCtxWaitEvent(CUcontext hCtx, CUevent hEvent);

// Unified memory prefetching
CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream);
CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice, CUstream hStream);
CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
                               CUstream hStream);
CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
                                    CUstream hStream);

// Unified memory advice, range attributes and stream association
CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device);
CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location);
CUresult cuMemRangeGetAttribute(void* data, size_t dataSize, CUmem_range_attribute attribute, CUdeviceptr devPtr,
                                size_t count);
CUresult cuMemRangeGetAttributes(void** data, size_t* dataSizes, CUmem_range_attribute* attributes,
                                 size_t numAttributes, CUdeviceptr devPtr, size_t count);
CUresult cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr, size_t length, unsigned int flags);
CUresult cuStreamAttachMemAsync_ptsz(CUstream hStream, CUdeviceptr dptr, size_t length, unsigned int flags);

// Stream memory operations
CUresult cuStreamWaitValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags);
CUresult cuStreamWaitValue32_ptsz(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags);
CUresult cuStreamWaitValue32_v2(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags);
CUresult cuStreamWaitValue32_v2_ptsz(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags);
CUresult cuStreamWaitValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags);
CUresult cuStreamWaitValue64_ptsz(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags);
CUresult cuStreamWaitValue64_v2(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags);
CUresult cuStreamWaitValue64_v2_ptsz(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags);
CUresult cuStreamWriteValue32(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags);
CUresult cuStreamWriteValue32_ptsz(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags);
CUresult cuStreamWriteValue32_v2(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags);
CUresult cuStreamWriteValue32_v2_ptsz(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags);
CUresult cuStreamWriteValue64(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags);
CUresult cuStreamWriteValue64_ptsz(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags);
CUresult cuStreamWriteValue64_v2(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags);
CUresult cuStreamWriteValue64_v2_ptsz(CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned int flags);
CUresult cuStreamBatchMemOp(CUstream stream, unsigned int count, CUstreamBatchMemOpParams* paramArray,
                            unsigned int flags);
CUresult cuStreamBatchMemOp_ptsz(CUstream stream, unsigned int count, CUstreamBatchMemOpParams* paramArray,
                                 unsigned int flags);
CUresult cuStreamBatchMemOp_v2(CUstream stream, unsigned int count, CUstreamBatchMemOpParams* paramArray,
                               unsigned int flags);
CUresult cuStreamBatchMemOp_v2_ptsz(CUstream stream, unsigned int count, CUstreamBatchMemOpParams* paramArray,
                                    unsigned int flags);

// External memory and semaphores
CUresult cuImportExternalMemory(CUexternalMemory* extMem_out, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC* memHandleDesc);
CUresult cuExternalMemoryGetMappedBuffer(CUdeviceptr* devPtr, CUexternalMemory extMem,
                                         const CUDA_EXTERNAL_MEMORY_BUFFER_DESC* bufferDesc);
CUresult cuExternalMemoryGetMappedMipmappedArray(CUmipmappedArray* mipmap, CUexternalMemory extMem,
                                                 const CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC* mipmapDesc);
CUresult cuDestroyExternalMemory(CUexternalMemory extMem);
CUresult cuImportExternalSemaphore(CUexternalSemaphore* extSem_out,
                                   const CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC* semHandleDesc);
CUresult cuSignalExternalSemaphoresAsync(const CUexternalSemaphore* extSemArray,
                                         const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS* paramsArray,
                                         unsigned int numExtSems, CUstream stream);
CUresult cuSignalExternalSemaphoresAsync_ptsz(const CUexternalSemaphore* extSemArray,
                                              const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS* paramsArray,
                                              unsigned int numExtSems, CUstream stream);
CUresult cuWaitExternalSemaphoresAsync(const CUexternalSemaphore* extSemArray,
                                       const CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS* paramsArray, unsigned int numExtSems,
                                       CUstream stream);
CUresult cuWaitExternalSemaphoresAsync_ptsz(const CUexternalSemaphore* extSemArray,
                                            const CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS* paramsArray,
                                            unsigned int numExtSems, CUstream stream);
CUresult cuDestroyExternalSemaphore(CUexternalSemaphore extSem);

// Module and library variables, kernels of libraries, parameter layouts, texture references
CUresult cuLibraryGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUlibrary library, const char* name);
CUresult cuLibraryGetManaged(CUdeviceptr* dptr, size_t* bytes, CUlibrary library, const char* name);
CUresult cuLibraryGetModule(CUmodule* pMod, CUlibrary library);
CUresult cuLibraryGetKernelCount(unsigned int* count, CUlibrary lib);
CUresult cuLibraryEnumerateKernels(CUkernel* kernels, unsigned int numKernels, CUlibrary lib);
CUresult cuLibraryLoadFromFile(CUlibrary* library, const char* fileName, CUjit_option* jitOptions,
                               void** jitOptionsValues, unsigned int numJitOptions, CUlibraryOption* libraryOptions,
                               void** libraryOptionValues, unsigned int numLibraryOptions);
CUresult cuLibraryGetUnifiedFunction(void** fptr, CUlibrary library, const char* symbol);
CUresult cuKernelGetAttribute(int* pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev);
CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev);
CUresult cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev);
CUresult cuKernelGetName(const char** name, CUkernel hfunc);
CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t* paramOffset, size_t* paramSize);
CUresult cuKernelGetLibrary(CUlibrary* pLib, CUkernel kernel);
CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t* paramOffset, size_t* paramSize);
CUresult cuModuleGetTexRef(CUtexref* pTexRef, CUmodule hmod, const char* name);
CUresult cuModuleGetSurfRef(CUsurfref* pSurfRef, CUmodule hmod, const char* name);

// Platform features: export tables, legacy attach, L2 persistence, profiler setup, RDMA flushes,
// execution affinity, NvSciSync, async notifications, atomics over links, dma-buf handles,
// coredump settings, cluster occupancy, batched prefetches and discards, decompression
CUresult cuGetExportTable(const void** ppExportTable, const CUuuid* pExportTableId);
CUresult cuCtxAttach(CUcontext* pctx, unsigned int flags);
CUresult cuCtxDetach(CUcontext ctx);
CUresult cuCtxResetPersistingL2Cache(void);
CUresult cuProfilerInitialize(const char* configFile, const char* outputFile, CUoutput_mode outputMode);
CUresult cuFlushGPUDirectRDMAWrites(CUflushGPUDirectRDMAWritesTarget target, CUflushGPUDirectRDMAWritesScope scope);
CUresult cuCtxGetExecAffinity(CUexecAffinityParam* pExecAffinity, CUexecAffinityType type);
CUresult cuDeviceGetExecAffinitySupport(int* pi, CUexecAffinityType type, CUdevice dev);
CUresult cuDeviceGetNvSciSyncAttributes(void* nvSciSyncAttrList, CUdevice dev, int flags);
CUresult cuDeviceRegisterAsyncNotification(CUdevice device, CUasyncCallback callbackFunc, void* userData,
                                           CUasyncCallbackHandle* callback);
CUresult cuDeviceUnregisterAsyncNotification(CUdevice device, CUasyncCallbackHandle callback);
CUresult cuDeviceGetHostAtomicCapabilities(unsigned int* capabilities, const CUatomicOperation* operations,
                                           unsigned int count, CUdevice dev);
CUresult cuDeviceGetP2PAtomicCapabilities(unsigned int* capabilities, const CUatomicOperation* operations,
                                          unsigned int count, CUdevice srcDevice, CUdevice dstDevice);
CUresult cuMemGetHandleForAddressRange(void* handle, CUdeviceptr dptr, size_t size, CUmemRangeHandleType handleType,
                                       unsigned long long flags);
CUresult cuCoredumpGetAttribute(CUcoredumpSettings attrib, void* value, size_t* size);
CUresult cuCoredumpGetAttributeGlobal(CUcoredumpSettings attrib, void* value, size_t* size);
CUresult cuCoredumpSetAttribute(CUcoredumpSettings attrib, void* value, size_t* size);
CUresult cuCoredumpSetAttributeGlobal(CUcoredumpSettings attrib, void* value, size_t* size);
CUresult cuOccupancyMaxActiveClusters(int* numClusters, CUfunction func, const CUlaunchConfig* config);
CUresult cuOccupancyMaxPotentialClusterSize(int* clusterSize, CUfunction func, const CUlaunchConfig* config);
CUresult cuMemPrefetchBatchAsync(CUdeviceptr* dptrs, size_t* sizes, size_t count, CUmemLocation* prefetchLocs,
                                 size_t* prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags,
                                 CUstream hStream);
CUresult cuMemPrefetchBatchAsync_ptsz(CUdeviceptr* dptrs, size_t* sizes, size_t count, CUmemLocation* prefetchLocs,
                                      size_t* prefetchLocIdxs, size_t numPrefetchLocs, unsigned long long flags,
                                      CUstream hStream);
CUresult cuMemDiscardBatchAsync(CUdeviceptr* dptrs, size_t* sizes, size_t count, unsigned long long flags,
                                CUstream hStream);
CUresult cuMemDiscardBatchAsync_ptsz(CUdeviceptr* dptrs, size_t* sizes, size_t count, unsigned long long flags,
                                     CUstream hStream);
CUresult cuMemDiscardAndPrefetchBatchAsync(CUdeviceptr* dptrs, size_t* sizes, size_t count,
                                           CUmemLocation* prefetchLocs, size_t* prefetchLocIdxs,
                                           size_t numPrefetchLocs, unsigned long long flags, CUstream hStream);
CUresult cuMemDiscardAndPrefetchBatchAsync_ptsz(CUdeviceptr* dptrs, size_t* sizes, size_t count,
                                                CUmemLocation* prefetchLocs, size_t* prefetchLocIdxs,
                                                size_t numPrefetchLocs, unsigned long long flags, CUstream hStream);
CUresult cuMemBatchDecompressAsync(CUmemDecompressParams* paramsArray, size_t count, unsigned int flags,
                                   size_t* errorIndex, CUstream stream);
CUresult cuMemBatchDecompressAsync_ptsz(CUmemDecompressParams* paramsArray, size_t count, unsigned int flags,
                                        size_t* errorIndex, CUstream stream);

// Tensor maps (host-side encodings of Tensor Memory Accelerator descriptors)
CUresult cuTensorMapEncodeTiled(CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
                                void* globalAddress, const cuuint64_t* globalDim, const cuuint64_t* globalStrides,
                                const cuuint32_t* boxDim, const cuuint32_t* elementStrides,
                                CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
                                CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill);
CUresult cuTensorMapEncodeIm2col(CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
                                 void* globalAddress, const cuuint64_t* globalDim, const cuuint64_t* globalStrides,
                                 const int* pixelBoxLowerCorner, const int* pixelBoxUpperCorner,
                                 cuuint32_t channelsPerPixel, cuuint32_t pixelsPerColumn,
                                 const cuuint32_t* elementStrides, CUtensorMapInterleave interleave,
                                 CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
                                 CUtensorMapFloatOOBfill oobFill);
CUresult cuTensorMapEncodeIm2colWide(CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType,
                                     cuuint32_t tensorRank, void* globalAddress, const cuuint64_t* globalDim,
                                     const cuuint64_t* globalStrides, int pixelBoxLowerCornerWidth,
                                     int pixelBoxUpperCornerWidth, cuuint32_t channelsPerPixel,
                                     cuuint32_t pixelsPerColumn, const cuuint32_t* elementStrides,
                                     CUtensorMapInterleave interleave, CUtensorMapIm2ColWideMode mode,
                                     CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
                                     CUtensorMapFloatOOBfill oobFill);
CUresult cuTensorMapReplaceAddress(CUtensorMap* tensorMap, void* globalAddress);

// Checkpoints, driver logs, multicast objects, graphics interop
CUresult cuCheckpointProcessGetState(int pid, CUprocessState* state);
CUresult cuCheckpointProcessGetRestoreThreadId(int pid, int* tid);
CUresult cuCheckpointProcessLock(int pid, CUcheckpointLockArgs* args);
CUresult cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs* args);
CUresult cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs* args);
CUresult cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs* args);
CUresult cuLogsRegisterCallback(CUlogsCallback callbackFunc, void* userData, CUlogsCallbackHandle* callback_out);
CUresult cuLogsUnregisterCallback(CUlogsCallbackHandle callback);
CUresult cuLogsCurrent(CUlogIterator* iterator_out, unsigned int flags);
CUresult cuLogsDumpToFile(CUlogIterator* iterator, const char* pathToFile, unsigned int flags);
CUresult cuLogsDumpToMemory(CUlogIterator* iterator, char* buffer, size_t* size, unsigned int flags);
CUresult cuMulticastCreate(CUmemGenericAllocationHandle* mcHandle, const CUmulticastObjectProp* prop);
CUresult cuMulticastAddDevice(CUmemGenericAllocationHandle mcHandle, CUdevice dev);
CUresult cuMulticastBindMem(CUmemGenericAllocationHandle mcHandle, size_t mcOffset,
                            CUmemGenericAllocationHandle memHandle, size_t memOffset, size_t size,
                            unsigned long long flags);
CUresult cuMulticastBindAddr(CUmemGenericAllocationHandle mcHandle, size_t mcOffset, CUdeviceptr memptr, size_t size,
                             unsigned long long flags);
CUresult cuMulticastUnbind(CUmemGenericAllocationHandle mcHandle, CUdevice dev, size_t mcOffset, size_t size);
CUresult cuMulticastGetGranularity(size_t* granularity, const CUmulticastObjectProp* prop,
                                   CUmulticastGranularity_flags option);
CUresult cuGraphicsUnregisterResource(CUgraphicsResource resource);
CUresult cuGraphicsSubResourceGetMappedArray(CUarray* pArray, CUgraphicsResource resource, unsigned int arrayIndex,
                                             unsigned int mipLevel);
CUresult cuGraphicsResourceGetMappedMipmappedArray(CUmipmappedArray* pMipmappedArray, CUgraphicsResource resource);
CUresult cuGraphicsResourceGetMappedPointer(CUdeviceptr_v1* pDevPtr, unsigned int* pSize, CUgraphicsResource resource);
CUresult cuGraphicsResourceGetMappedPointer_v2(CUdeviceptr* pDevPtr, size_t* pSize, CUgraphicsResource resource);
CUresult cuGraphicsResourceSetMapFlags(CUgraphicsResource resource, unsigned int flags);
CUresult cuGraphicsResourceSetMapFlags_v2(CUgraphicsResource resource, unsigned int flags);
CUresult cuGraphicsMapResources(unsigned int count, CUgraphicsResource* resources, CUstream hStream);
CUresult cuGraphicsMapResources_ptsz(unsigned int count, CUgraphicsResource* resources, CUstream hStream);
CUresult cuGraphicsUnmapResources(unsigned int count, CUgraphicsResource* resources, CUstream hStream);
CUresult cuGraphicsUnmapResources_ptsz(unsigned int count, CUgraphicsResource* resources, CUstream hStream);

// Green contexts and device resources
CUresult cuDeviceGetDevResource(CUdevice device, CUdevResource* resource, CUdevResourceType type);
CUresult cuCtxGetDevResource(CUcontext hCtx, CUdevResource* resource, CUdevResourceType type);
CUresult cuGreenCtxGetDevResource(CUgreenCtx hCtx, CUdevResource* resource, CUdevResourceType type);
CUresult cuDevSmResourceSplitByCount(CUdevResource* result, unsigned int* nbGroups, const CUdevResource* input,
                                     CUdevResource* remaining, unsigned int useFlags, unsigned int minCount);
CUresult cuDevResourceGenerateDesc(CUdevResourceDesc* phDesc, CUdevResource* resources, unsigned int nbResources);
CUresult cuGreenCtxCreate(CUgreenCtx* phCtx, CUdevResourceDesc desc, CUdevice dev, unsigned int flags);
CUresult cuGreenCtxDestroy(CUgreenCtx hCtx);
CUresult cuCtxFromGreenCtx(CUcontext* pContext, CUgreenCtx hCtx);
CUresult cuGreenCtxGetId(CUgreenCtx greenCtx, unsigned long long* greenCtxId);
CUresult cuGreenCtxRecordEvent(CUgreenCtx hCtx, CUevent hEvent);
CUresult cuGreenCtxWaitEvent(CUgreenCtx hCtx, CUevent hEvent);
CUresult cuGreenCtxStreamCreate(CUstream* phStream, CUgreenCtx greenCtx, unsigned int flags, int priority);
CUresult cuStreamGetGreenCtx(CUstream hStream, CUgreenCtx* phCtx);

// Pools by location (13.0), pool access and sharing
CUresult cuMemGetDefaultMemPool(CUmemoryPool* pool_out, CUmemLocation* location, CUmemAllocationType type);
CUresult cuMemGetMemPool(CUmemoryPool* pool_out, CUmemLocation* location, CUmemAllocationType type);
CUresult cuMemSetMemPool(CUmemLocation* location, CUmemAllocationType type, CUmemoryPool pool);
CUresult cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool memPool, CUmemLocation* location);
CUresult cuMemPoolExportToShareableHandle(void* handle_out, CUmemoryPool pool, CUmemAllocationHandleType handleType,
                                          unsigned long long flags);
CUresult cuMemPoolImportFromShareableHandle(CUmemoryPool* pool_out, void* handle,
                                            CUmemAllocationHandleType handleType, unsigned long long flags);
CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData* shareData_out, CUdeviceptr ptr);
CUresult cuMemPoolImportPointer(CUdeviceptr* ptr_out, CUmemoryPool pool, CUmemPoolPtrExportData* shareData);

// Legacy launch (deprecated): the configuration set by cuFuncSetBlockShape/cuFuncSetSharedSize and
// cuParamSet*, launched on the legacy default stream (cuLaunch, cuLaunchGrid) or a given one
CUresult cuParamSetSize(CUfunction hfunc, unsigned int numbytes);
CUresult cuParamSeti(CUfunction hfunc, int offset, unsigned int value);
CUresult cuParamSetf(CUfunction hfunc, int offset, float value);
CUresult cuParamSetv(CUfunction hfunc, int offset, void* ptr, unsigned int numbytes);
CUresult cuParamSetTexRef(CUfunction hfunc, int texunit, CUtexref hTexRef);
CUresult cuLaunch(CUfunction f);
CUresult cuLaunchGrid(CUfunction f, int grid_width, int grid_height);
CUresult cuLaunchGridAsync(CUfunction f, int grid_width, int grid_height, CUstream hStream);
CUresult cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS* launchParamsList, unsigned int numDevices,
                                              unsigned int flags);

// Texture and surface objects
CUresult cuTexObjectCreate(CUtexObject* pTexObject, const CUDA_RESOURCE_DESC* pResDesc,
                           const CUDA_TEXTURE_DESC* pTexDesc, const CUDA_RESOURCE_VIEW_DESC* pResViewDesc);
CUresult cuTexObjectDestroy(CUtexObject texObject);
CUresult cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC* pResDesc, CUtexObject texObject);
CUresult cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC* pTexDesc, CUtexObject texObject);
CUresult cuTexObjectGetResourceViewDesc(CUDA_RESOURCE_VIEW_DESC* pResViewDesc, CUtexObject texObject);
CUresult cuSurfObjectCreate(CUsurfObject* pSurfObject, const CUDA_RESOURCE_DESC* pResDesc);
CUresult cuSurfObjectDestroy(CUsurfObject surfObject);
CUresult cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC* pResDesc, CUsurfObject surfObject);

// Texture and surface references (deprecated). The unsuffixed address entry points are the
// 32-bit legacy ones; cuda.h maps the names to _v2 (cuTexRefSetAddress2D to _v3).
CUresult cuTexRefCreate(CUtexref* pTexRef);
CUresult cuTexRefDestroy(CUtexref hTexRef);
CUresult cuTexRefSetArray(CUtexref hTexRef, CUarray hArray, unsigned int Flags);
CUresult cuTexRefSetMipmappedArray(CUtexref hTexRef, CUmipmappedArray hMipmappedArray, unsigned int Flags);
CUresult cuTexRefSetAddress(unsigned int* ByteOffset, CUtexref hTexRef, CUdeviceptr_v1 dptr, unsigned int bytes);
CUresult cuTexRefSetAddress_v2(size_t* ByteOffset, CUtexref hTexRef, CUdeviceptr dptr, size_t bytes);
CUresult cuTexRefSetAddress2D(CUtexref hTexRef, const CUDA_ARRAY_DESCRIPTOR_v1* desc, CUdeviceptr_v1 dptr,
                              unsigned int Pitch);
CUresult cuTexRefSetAddress2D_v2(CUtexref hTexRef, const CUDA_ARRAY_DESCRIPTOR* desc, CUdeviceptr dptr, size_t Pitch);
CUresult cuTexRefSetAddress2D_v3(CUtexref hTexRef, const CUDA_ARRAY_DESCRIPTOR* desc, CUdeviceptr dptr, size_t Pitch);
CUresult cuTexRefSetFormat(CUtexref hTexRef, CUarray_format fmt, int NumPackedComponents);
CUresult cuTexRefSetAddressMode(CUtexref hTexRef, int dim, CUaddress_mode am);
CUresult cuTexRefSetFilterMode(CUtexref hTexRef, CUfilter_mode fm);
CUresult cuTexRefSetMipmapFilterMode(CUtexref hTexRef, CUfilter_mode fm);
CUresult cuTexRefSetMipmapLevelBias(CUtexref hTexRef, float bias);
CUresult cuTexRefSetMipmapLevelClamp(CUtexref hTexRef, float minMipmapLevelClamp, float maxMipmapLevelClamp);
CUresult cuTexRefSetMaxAnisotropy(CUtexref hTexRef, unsigned int maxAniso);
CUresult cuTexRefSetBorderColor(CUtexref hTexRef, float* pBorderColor);
CUresult cuTexRefSetFlags(CUtexref hTexRef, unsigned int Flags);
CUresult cuTexRefGetAddress(CUdeviceptr_v1* pdptr, CUtexref hTexRef);
CUresult cuTexRefGetAddress_v2(CUdeviceptr* pdptr, CUtexref hTexRef);
CUresult cuTexRefGetArray(CUarray* phArray, CUtexref hTexRef);
CUresult cuTexRefGetMipmappedArray(CUmipmappedArray* phMipmappedArray, CUtexref hTexRef);
CUresult cuTexRefGetAddressMode(CUaddress_mode* pam, CUtexref hTexRef, int dim);
CUresult cuTexRefGetFilterMode(CUfilter_mode* pfm, CUtexref hTexRef);
CUresult cuTexRefGetFormat(CUarray_format* pFormat, int* pNumChannels, CUtexref hTexRef);
CUresult cuTexRefGetMipmapFilterMode(CUfilter_mode* pfm, CUtexref hTexRef);
CUresult cuTexRefGetMipmapLevelBias(float* pbias, CUtexref hTexRef);
CUresult cuTexRefGetMipmapLevelClamp(float* pminMipmapLevelClamp, float* pmaxMipmapLevelClamp, CUtexref hTexRef);
CUresult cuTexRefGetMaxAnisotropy(int* pmaxAniso, CUtexref hTexRef);
CUresult cuTexRefGetBorderColor(float* pBorderColor, CUtexref hTexRef);
CUresult cuTexRefGetFlags(unsigned int* pFlags, CUtexref hTexRef);
CUresult cuSurfRefSetArray(CUsurfref hSurfRef, CUarray hArray, unsigned int Flags);
CUresult cuSurfRefGetArray(CUarray* phArray, CUsurfref hSurfRef);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // FGPU_CORE_ABI_CUDA_API_H
