#!/usr/bin/env python3
"""Creates green contexts through the driver API (ctypes) until the driver refuses one, allocating
under the first, then destroys them all, printing what the driver answered and what cuMemGetInfo
shows, one JSON line per step.

    green_contexts.py MAX_GREEN ALLOC_BYTES

Device 0's primary context is retained and current first (the driver advises it for green
contexts); each green context takes the device's whole SM resource. ALLOC_BYTES are allocated
with the first green context current (right after its creation) and never freed: destroying the
green context frees them.
Exits 0 whatever the driver answers (the caller judges the lines), 1 if the driver cannot be
loaded or initialised.
"""
import ctypes
import json
import sys

CU_DEV_RESOURCE_TYPE_SM = 1
CU_GREEN_CTX_DEFAULT_STREAM = 1
RESOURCE_BYTES = 256  # room for a CUdevResource (144 bytes in CUDA 12.x/13.0)


def free_bytes(cuda):
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total))
    return free.value


def step(name, code, cuda, **fields):
    print(json.dumps(dict({"step": name, "code": code, "free": free_bytes(cuda)}, **fields)), flush=True)


def allocate_under(cuda, green, primary, size):
    ctx = ctypes.c_void_p()
    pointer = ctypes.c_uint64()
    rc = cuda.cuCtxFromGreenCtx(ctypes.byref(ctx), green)
    if rc == 0:
        rc = cuda.cuCtxSetCurrent(ctx)
    if rc == 0:
        rc = cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(size))
    cuda.cuCtxSetCurrent(primary)
    return rc


def main(argv):
    max_green, alloc_bytes = int(argv[1]), int(argv[2])
    cuda = ctypes.CDLL("libcuda.so.1")
    if cuda.cuInit(0) != 0:
        print(json.dumps({"step": "init", "ok": False}))
        return 1
    primary = ctypes.c_void_p()
    if cuda.cuDevicePrimaryCtxRetain(ctypes.byref(primary), 0) != 0 or cuda.cuCtxSetCurrent(primary) != 0:
        print(json.dumps({"step": "context", "ok": False}))
        return 1
    resource = ctypes.create_string_buffer(RESOURCE_BYTES)
    desc = ctypes.c_void_p()
    rc = cuda.cuDeviceGetDevResource(0, resource, CU_DEV_RESOURCE_TYPE_SM)
    if rc == 0:
        rc = cuda.cuDevResourceGenerateDesc(ctypes.byref(desc), resource, 1)
    step("start", rc, cuda)
    if rc != 0:
        return 0
    greens = []
    for index in range(max_green):
        green = ctypes.c_void_p()
        rc = cuda.cuGreenCtxCreate(ctypes.byref(green), desc, 0, CU_GREEN_CTX_DEFAULT_STREAM)
        step("create", rc, cuda, index=index, null=green.value is None)
        if rc != 0:
            break
        greens.append(green)
        if index == 0:
            step("alloc", allocate_under(cuda, green, primary, alloc_bytes), cuda)
    for index, green in enumerate(greens):
        step("destroy", cuda.cuGreenCtxDestroy(green), cuda, index=index)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
