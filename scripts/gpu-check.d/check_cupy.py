#!/usr/bin/env python3
"""CuPy under the hook: mem_get_info total == CAP; allocating past it raises OutOfMemoryError."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpucheck_common import CAP, GIB, Skip, fill, fill_ok, past_cap, run  # noqa: E402


def body():
    try:
        import cupy
    except Exception as error:  # ImportError, or a CuPy built for another CUDA
        raise Skip("cupy not importable (%s)" % type(error).__name__)
    details = {"cupy": cupy.__version__, "cap": CAP}
    runtime = cupy.cuda.runtime
    free, total = runtime.memGetInfo()
    props_total = runtime.getDeviceProperties(0)["totalGlobalMem"]
    pool = cupy.get_default_memory_pool()

    def is_oom(error):
        return isinstance(error, cupy.cuda.memory.OutOfMemoryError)

    def allocate(size):
        block = cupy.empty(size, dtype=cupy.uint8)
        cupy.cuda.Device().synchronize()
        return block

    x = cupy.ones(1 << 20, dtype=cupy.float32)
    compute_ok = float((x * 2).sum()) == 2.0 * (1 << 20)
    del x
    filled = fill(allocate, is_oom, pool.free_all_blocks)
    past = past_cap(allocate, is_oom, pool.free_all_blocks)
    try:
        block = allocate(GIB)
        del block
        again = True
    except Exception as error:  # noqa: BLE001
        again = "failed: %s" % error
    pool.free_all_blocks()
    details.update(mem_get_info_free=free, mem_get_info_total=total, total_global_mem=props_total,
                   compute_ok=compute_ok, fill=filled, past_cap=past, alloc_1gib_after=again)
    ok = (total == CAP and props_total == CAP and compute_ok and fill_ok(filled) and past["refused"]
          and past.get("oom", False) and again is True)
    return ok, details


run("cupy", body)
