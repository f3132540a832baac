#!/usr/bin/env python3
"""A VMM allocation exported as a file descriptor and imported again (cuMemExportToShareableHandle,
cuMemImportFromShareableHandle), as NCCL and PyTorch's expandable segments share memory: one JSON
line per step with the driver's answer and cuMemGetInfo's free bytes.

    vmm_share.py BYTES

Exits 0 whatever the driver answers (the caller judges the lines), 1 if the driver cannot be
loaded or initialised.
"""
import ctypes
import json
import sys

CU_MEM_ALLOCATION_TYPE_PINNED = 1
CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
CU_MEM_LOCATION_TYPE_DEVICE = 1


class Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class Prop(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", AllocFlags)]


def main(argv):
    cuda = ctypes.CDLL("libcuda.so.1")
    ctx = ctypes.c_void_p()
    if (cuda.cuInit(0) != 0 or cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) != 0
            or cuda.cuCtxSetCurrent(ctx) != 0):
        print(json.dumps({"step": "init", "ok": False}))
        return 1
    free, total = ctypes.c_size_t(), ctypes.c_size_t()

    def step(name, rc):
        cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total))
        print(json.dumps({"step": name, "code": rc, "free": free.value, "total": total.value}), flush=True)

    step("start", 0)
    prop = Prop(type=CU_MEM_ALLOCATION_TYPE_PINNED, requestedHandleTypes=CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                location=Location(CU_MEM_LOCATION_TYPE_DEVICE, 0))
    handle, imported = ctypes.c_ulonglong(), ctypes.c_ulonglong()
    step("create", cuda.cuMemCreate(ctypes.byref(handle), ctypes.c_size_t(int(argv[1])), ctypes.byref(prop),
                                    ctypes.c_ulonglong(0)))
    fd = ctypes.c_int(-1)
    step("export", cuda.cuMemExportToShareableHandle(ctypes.byref(fd), handle,
                                                     CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, ctypes.c_ulonglong(0)))
    step("import", cuda.cuMemImportFromShareableHandle(ctypes.byref(imported), ctypes.c_void_p(fd.value),
                                                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    step("release_import", cuda.cuMemRelease(imported))
    step("release", cuda.cuMemRelease(handle))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
