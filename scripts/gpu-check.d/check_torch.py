#!/usr/bin/env python3
"""PyTorch under the hook: the device looks CAP big and allocating past it raises OOM.

  check_torch.py [--alloc-conf CONF]   (PYTORCH_CUDA_ALLOC_CONF, set before torch is imported:
                                        expandable_segments:True, backend:cudaMallocAsync)
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpucheck_common import CAP, GIB, Skip, fill, fill_ok, past_cap, run  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--alloc-conf", default="")
args = parser.parse_args()
NAME = "torch" + ("[%s]" % args.alloc_conf if args.alloc_conf else "")
if args.alloc_conf:
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = args.alloc_conf
else:
    os.environ.pop("PYTORCH_CUDA_ALLOC_CONF", None)


def body():
    try:
        import torch
    except Exception as error:  # ImportError, or a broken install
        raise Skip("torch not importable (%s)" % type(error).__name__)
    if torch.version.cuda is None:
        raise Skip("torch %s is not a CUDA build" % torch.__version__)
    details = {"torch": torch.__version__, "torch_cuda": torch.version.cuda, "cap": CAP}
    if not torch.cuda.is_available():
        details["error"] = "torch.cuda.is_available() is False under the hook"
        return False, details

    oom_types = tuple(t for t in (getattr(torch, "OutOfMemoryError", None),
                                  getattr(torch.cuda, "OutOfMemoryError", None)) if t is not None)

    def is_oom(error):
        if oom_types and isinstance(error, oom_types):
            return True
        return isinstance(error, RuntimeError) and "out of memory" in str(error).lower()

    def allocate(size):
        block = torch.empty(size, dtype=torch.uint8, device="cuda")
        torch.cuda.synchronize()
        return block

    def release():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()

    free, total = torch.cuda.mem_get_info(0)
    props_total = torch.cuda.get_device_properties(0).total_memory
    x = torch.ones(1 << 20, device="cuda")
    compute_ok = float((x * 2).sum().item()) == 2.0 * (1 << 20)
    del x
    filled = fill(allocate, is_oom, release)
    past = past_cap(allocate, is_oom, release)
    try:  # memory is really given back: 1 GiB fits again
        block = allocate(GIB)
        del block
        again = True
    except Exception as error:  # noqa: BLE001
        again = "failed: %s" % error
    release()
    details.update(alloc_conf=os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""), mem_get_info_free=free,
                   mem_get_info_total=total, total_memory=props_total, compute_ok=compute_ok, fill=filled,
                   past_cap=past, alloc_1gib_after=again)
    ok = (total == CAP and props_total == CAP and compute_ok and fill_ok(filled) and past["refused"]
          and past.get("oom", False) and again is True)
    return ok, details


run(NAME, body)
