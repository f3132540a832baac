#!/usr/bin/env python3
"""PyTorch matmul loops for scripts/gpu-check's compute-share checks (docs/compute.md).

  check_torch_compute.py available
      Whether torch can run on the GPU here: ok true, or ok null with "skipped" (torch not
      importable, not a CUDA build, no GPU visible).
  check_torch_compute.py loop --name NAME --seconds S [--size 4096] [--dtype fp16|fp32]
                              [--sync-every 10] [--window-s 1] [--barrier DIR --parties P]
      Warms up (cuBLAS handle, first kernels), waits at the barrier if given (every party
      creates DIR/ready.<pid> and starts when P are there, so concurrent loops start within a
      few ms of each other whatever their import times), then for S seconds multiplies two
      SIZE x SIZE matrices into a preallocated output, torch.cuda.synchronize() every
      --sync-every matmuls. One line: matmuls (completed by S), matmuls_per_s, tflops, and
      windows = matmuls per second in each whole --window-s window (a synchronised group is
      counted in the window where its sync returned).

Run by scripts/gpu-check under the hook (LD_PRELOAD=libfgpu.so, FGPU_SLICE, FGPU_COMPUTE_DIR) or
without it for the baseline; the verdicts are scripts/gpu-check.d/compute_eval.py's. Prints
exactly one JSON line and exits 0 (gpucheck_common conventions).
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpucheck_common import Skip, run  # noqa: E402

BARRIER_TIMEOUT_S = 300


def import_torch(gpu_required=False):
    """Skip when torch cannot be used here at all; with gpu_required (a loop, after `available`
    said yes), a GPU torch cannot see is an error, not a skip."""
    try:
        import torch
    except Exception as error:  # ImportError, or a broken install
        raise Skip("torch not importable (%s)" % type(error).__name__)
    if torch.version.cuda is None:
        raise Skip("torch %s is not a CUDA build" % torch.__version__)
    if not torch.cuda.is_available():
        if gpu_required:
            raise RuntimeError("torch.cuda.is_available() is False")
        raise Skip("torch.cuda.is_available() is False")
    return torch


def available():
    torch = import_torch()
    return True, {"torch": torch.__version__, "torch_cuda": torch.version.cuda,
                  "device": torch.cuda.get_device_name(0)}


def barrier(directory, parties):
    """Registers this process and waits for `parties` registrations (or a peer's abort)."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "ready.%d" % os.getpid()), "w"):
        pass
    deadline = time.monotonic() + BARRIER_TIMEOUT_S
    while True:
        names = os.listdir(directory)
        if any(name.startswith("abort") for name in names):
            raise RuntimeError("a peer of the barrier failed before starting")
        if sum(name.startswith("ready.") for name in names) >= parties:
            return
        if time.monotonic() > deadline:
            raise RuntimeError("barrier: %d of %d parties after %d s" % (
                sum(name.startswith("ready.") for name in names), parties, BARRIER_TIMEOUT_S))
        time.sleep(0.002)


def loop(args):
    try:
        torch = import_torch(gpu_required=True)
        dtype = {"fp16": torch.float16, "fp32": torch.float32}[args.dtype]
        a = torch.randn(args.size, args.size, device="cuda", dtype=dtype)
        b = torch.randn(args.size, args.size, device="cuda", dtype=dtype)
        c = torch.empty(args.size, args.size, device="cuda", dtype=dtype)
        for _ in range(3):  # cuBLAS handle, workspace, first-launch costs
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize()
    except BaseException:
        if args.barrier:  # let the peers go rather than wait for us
            os.makedirs(args.barrier, exist_ok=True)
            with open(os.path.join(args.barrier, "abort.%d" % os.getpid()), "w"):
                pass
        raise
    if args.barrier:
        barrier(args.barrier, args.parties)
    whole_windows = int(args.seconds // args.window_s)
    windows = [0] * whole_windows
    done = 0
    start = time.monotonic()
    elapsed = 0.0
    while elapsed < args.seconds:
        for _ in range(args.sync_every):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize()
        elapsed = time.monotonic() - start
        index = int(elapsed // args.window_s)
        if index < whole_windows:
            windows[index] += args.sync_every
        done += args.sync_every
    flops = 2.0 * args.size ** 3
    return True, {
        "torch": torch.__version__, "size": args.size, "dtype": args.dtype,
        "sync_every": args.sync_every, "seconds": round(elapsed, 3), "matmuls": done,
        "matmuls_per_s": round(done / elapsed, 2), "tflops": round(done * flops / elapsed / 1e12, 2),
        "window_s": args.window_s, "windows": [round(w / args.window_s, 2) for w in windows],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("available")
    body = sub.add_parser("loop")
    body.add_argument("--name", default="torch_matmul")
    body.add_argument("--seconds", type=float, required=True)
    body.add_argument("--size", type=int, default=4096)
    body.add_argument("--dtype", choices=("fp16", "fp32"), default="fp16")
    body.add_argument("--sync-every", type=int, default=10)
    body.add_argument("--window-s", type=float, default=1.0)
    body.add_argument("--barrier", default="")
    body.add_argument("--parties", type=int, default=1)
    args = parser.parse_args()
    if args.command == "available":
        run("torch_compute_available", available)
    else:
        if args.seconds <= 0 or args.size <= 0 or args.sync_every <= 0 or args.window_s <= 0:
            parser.error("--seconds, --size, --sync-every and --window-s must be positive")
        run(args.name, lambda: loop(args))


if __name__ == "__main__":
    main()
