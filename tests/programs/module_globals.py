#!/usr/bin/env python3
"""Loads a PTX module holding one .global array of BYTES, COUNT times (cuModuleLoadData), then
unloads them all: one JSON line per step with the driver's answer and cuMemGetInfo's free bytes.

    module_globals.py BYTES COUNT

Exits 0 whatever the driver answers (the caller judges the lines), 1 if the driver cannot be
loaded or initialised.
"""
import ctypes
import json
import sys


def open_primary_context():
    """libcuda.so.1 with device 0's primary context current; None (after an "init" line) if not."""
    cuda = ctypes.CDLL("libcuda.so.1")
    ctx = ctypes.c_void_p()
    if (cuda.cuInit(0) != 0 or cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) != 0
            or cuda.cuCtxSetCurrent(ctx) != 0):
        print(json.dumps({"step": "init", "ok": False}))
        return None
    return cuda


def table_ptx(size):
    """A PTX image holding one .global array `table` of `size` bytes."""
    return (".version 7.0\n.target sm_70\n.address_size 64\n"
            f".visible .global .align 8 .b8 table[{size}];\n"
            ".visible .entry touch()\n{\n ret;\n}\n").encode() + b"\0"


def step_printer(cuda):
    """step(name, rc, **extra): one JSON line with the driver's answer and the free bytes now."""
    free, total = ctypes.c_size_t(), ctypes.c_size_t()

    def step(name, rc, **extra):
        cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total))
        line = {"step": name, "code": rc, "free": free.value}
        line.update(extra)
        print(json.dumps(line), flush=True)
    return step


def main(argv):
    size, count = int(argv[1]), int(argv[2])
    cuda = open_primary_context()
    if cuda is None:
        return 1
    ptx = table_ptx(size)
    step = step_printer(cuda)

    step("start", 0)
    modules = []
    for i in range(count):
        module = ctypes.c_void_p()
        rc = cuda.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(ptx))
        step("load", rc, index=i)
        if rc == 0:
            modules.append(module)
    for module in modules:
        step("unload", cuda.cuModuleUnload(module))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
