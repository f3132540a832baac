#!/usr/bin/python3
"""numba's CUDA target (Debian's python3-numba) on whatever libcuda.so.1 the loader finds: device
arrays, copies, memory info, streams and out-of-memory, through numba's own ctypes driver
bindings. Prints one JSON line per step; exits 0 when every step did what a real GPU does.

    numba_memory.py [--unpinned] [--expect-total BYTES] [--fill BYTES] [--ipc BYTES]

--unpinned: leave numba's entry-point lookup as it is (see pin_cuda12_entry_points): on a CUDA
       13.0 driver, real or simulated, its first context query then fails.

--expect-total: the total memory the device must report (a slice's cap under fgpu run).
--fill: allocate 256 MiB arrays until refused: CUDA_ERROR_OUT_OF_MEMORY must come at the cap
       (what was free), before BYTES are held.
--ipc: share an array of this size with a second process (numba's IPC handles, a spawned
       process): it must read the data, write to it, and see no more memory used than before it
       opened the array (an import is charged to nobody: the exporter holds it).
"""
import argparse
import json
import sys

import numpy as np
from numba import cuda
from numba.cuda.cudadrv.driver import CudaAPIError


def pin_cuda12_entry_points():
    """numba 0.56 binds `<name>_v2` whenever the driver exports it. CUDA 13.0 added
    cuCtxGetDevice_v2(CUdevice*, CUcontext) and cuCtxSynchronize_v2(CUcontext), new functions with
    one more argument, which numba does not pass (numba-cuda issue #173): on any 13.0 driver numba
    hands it a garbage context. Pin the two 12.x entry points, as numba-cuda later did by naming
    the versions it binds. Every other binding is numba's own."""
    from numba.cuda.cudadrv import driver as numba_driver
    find_api = numba_driver.Driver._find_api

    def pinned(self, fname):
        if fname in ("cuCtxGetDevice", "cuCtxSynchronize"):
            return getattr(self.lib, fname)
        return find_api(self, fname)

    numba_driver.Driver._find_api = pinned


def step(what, **fields):
    print(json.dumps({"step": what, **fields}), flush=True)


def open_shared(handle, results):
    """In the second process: open the exported array, check it, answer through `results`."""
    pin_cuda12_entry_points()
    before = cuda.current_context().get_memory_info()[0]
    with handle as shared:
        after = cuda.current_context().get_memory_info()[0]
        head = shared[:4].copy_to_host()
        shared[4:8].copy_to_device(np.array([7, 7, 7, 7], dtype=np.uint8))
        cuda.synchronize()
    results.put({"head": head.tolist(), "free_before": before, "free_after_open": after})


def share(size):
    import multiprocessing
    data = cuda.device_array(size, dtype=np.uint8)  # untouched pages cost the host nothing
    data[:8].copy_to_device(np.arange(8, dtype=np.uint8))
    handle = data.get_ipc_handle()
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    other = context.Process(target=open_shared, args=(handle, results))
    other.start()
    answer = results.get(timeout=60)
    other.join(60)
    written = data[4:8].copy_to_host().tolist()
    ok = (answer["head"] == [0, 1, 2, 3] and written == [7, 7, 7, 7] and
          answer["free_after_open"] == answer["free_before"] and other.exitcode == 0)
    step("ipc", ok=ok, written=written, **answer)
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--expect-total", type=int)
    parser.add_argument("--fill", type=int)
    parser.add_argument("--ipc", type=int)
    parser.add_argument("--unpinned", action="store_true")
    args = parser.parse_args()
    if not args.unpinned:
        pin_cuda12_entry_points()

    # cuda.is_available() also asks for NVVM (numba's kernel compiler, from a CUDA toolkit):
    # the driver is what this program exercises.
    from numba.cuda.cudadrv import driver, nvvm
    if not driver.driver.is_available:
        step("driver", ok=False, error=str(driver.driver.initialization_error))
        return 1
    step("driver", ok=True, nvvm=bool(nvvm.is_available()))
    device = cuda.get_current_device()
    step("device", name=device.name.decode() if isinstance(device.name, bytes) else device.name,
         compute_capability=list(device.compute_capability))
    try:
        free, total = cuda.current_context().get_memory_info()
    except CudaAPIError as error:
        step("context", ok=False, error=str(error))
        return 1
    step("memory_info", free=free, total=total)
    if args.expect_total is not None and total != args.expect_total:
        step("total", ok=False, expected=args.expect_total)
        return 1

    host = np.arange(1 << 20, dtype=np.float32)
    on_device = cuda.to_device(host)
    back = on_device.copy_to_host()
    step("round_trip", ok=bool((back == host).all()), bytes=host.nbytes)
    if not (back == host).all():
        return 1

    stream = cuda.stream()
    staged = cuda.device_array_like(host, stream=stream)
    staged.copy_to_device(host[::-1].copy(), stream=stream)
    result = staged.copy_to_host(stream=stream)
    stream.synchronize()
    step("stream_copy", ok=bool((result == host[::-1]).all()))
    if not (result == host[::-1]).all():
        return 1
    view = on_device[1000:2000]
    step("slice", ok=bool((view.copy_to_host() == host[1000:2000]).all()))

    if args.ipc is not None and share(args.ipc) != 0:
        return 1
    if args.fill:
        # 256 MiB arrays until the device refuses: at the cap (what was free, less a chunk), with
        # CUDA_ERROR_OUT_OF_MEMORY.
        chunk = 256 << 20
        free_now = cuda.current_context().get_memory_info()[0]
        held = []
        try:
            while len(held) * chunk <= args.fill:
                held.append(cuda.device_array(chunk, dtype=np.uint8))
        except CudaAPIError as error:
            filled = len(held) * chunk
            ok = "CUDA_ERROR_OUT_OF_MEMORY" in str(error) and filled > free_now - 2 * chunk
            step("out_of_memory", ok=ok, filled=filled, free_before=free_now, error=str(error))
            return 0 if ok else 1
        step("out_of_memory", ok=False, filled=len(held) * chunk, error="no error past the cap")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
