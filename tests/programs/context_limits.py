#!/usr/bin/env python3
"""Raises a context's malloc heap through the driver API (ctypes, as numba binds it) and prints
what the driver answered and what cuMemGetInfo shows, one JSON line per step.

    context_limits.py HEAP_BYTES [HEAP_BYTES...]

Each HEAP_BYTES is one cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, n) on the primary context of
device 0. Exits 0 whatever the driver answers (the caller judges the lines), 1 if the driver
cannot be loaded or initialised.
"""
import ctypes
import json
import sys

CU_LIMIT_MALLOC_HEAP_SIZE = 2


def main(argv):
    cuda = ctypes.CDLL("libcuda.so.1")
    if cuda.cuInit(0) != 0:
        print(json.dumps({"step": "init", "ok": False}))
        return 1
    ctx = ctypes.c_void_p()
    if cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) != 0 or cuda.cuCtxSetCurrent(ctx) != 0:
        print(json.dumps({"step": "context", "ok": False}))
        return 1
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    for text in argv[1:]:
        rc = cuda.cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, ctypes.c_size_t(int(text)))
        heap = ctypes.c_size_t()
        cuda.cuCtxGetLimit(ctypes.byref(heap), CU_LIMIT_MALLOC_HEAP_SIZE)
        cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total))
        print(json.dumps({"step": "heap", "asked": int(text), "code": rc, "heap": heap.value,
                          "free": free.value, "total": total.value}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
