#!/usr/bin/env python3
"""Loads a PTX library holding one .global array of BYTES, COUNT times (cuLibraryLoadData: with
lazy loading, placed at first use), then asks each for its array twice (cuLibraryGetGlobal,
which places it), then unloads them all: one JSON line per step with the driver's answer and
cuMemGetInfo's free bytes.

    library_globals.py BYTES COUNT

Exits 0 whatever the driver answers (the caller judges the lines), 1 if the driver cannot be
loaded or initialised.
"""
import ctypes
import sys

from module_globals import open_primary_context, step_printer, table_ptx


def main(argv):
    size, count = int(argv[1]), int(argv[2])
    cuda = open_primary_context()
    if cuda is None:
        return 1
    ptx = table_ptx(size)
    step = step_printer(cuda)

    step("start", 0)
    libraries = []
    for i in range(count):
        library = ctypes.c_void_p()
        rc = cuda.cuLibraryLoadData(ctypes.byref(library), ctypes.c_char_p(ptx), None, None, 0, None, None, 0)
        step("load", rc, index=i)
        if rc == 0:
            libraries.append(library)
    for i, library in enumerate(libraries):
        for attempt in ("place", "again"):
            address, length = ctypes.c_uint64(), ctypes.c_size_t()
            rc = cuda.cuLibraryGetGlobal(ctypes.byref(address), ctypes.byref(length), library, b"table")
            step(attempt, rc, index=i, bytes=length.value if rc == 0 else 0)
    for library in libraries:
        step("unload", cuda.cuLibraryUnload(library))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
