#!/usr/bin/env python3
"""JAX under the hook.

  check_jax.py            default preallocation: the BFC pool (memory_stats()['bytes_limit']) is
                          about 75 % of CAP, and an array bigger than the cap is refused.
  check_jax.py --platform XLA_PYTHON_CLIENT_ALLOCATOR=platform (no pool, every array a driver
                          allocation): arrays of CHUNK bytes until failure stop below the cap.
"""
import importlib.util
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpucheck_common import CAP, Skip, fill, fill_ok, past_cap, run  # noqa: E402

PLATFORM = "--platform" in sys.argv[1:]
for variable in ("XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_ALLOCATOR"):
    os.environ.pop(variable, None)
if PLATFORM:
    os.environ["XLA_PYTHON_CLIENT_ALLOCATOR"] = "platform"


def has_cuda_plugin():
    for module in ("jax_cuda13_plugin", "jax_cuda12_plugin", "jax_cuda11_plugin", "jax_plugins.xla_cuda12",
                   "jax_plugins.xla_cuda13"):
        try:
            if importlib.util.find_spec(module) is not None:
                return True
        except (ImportError, ValueError):
            pass
    try:
        import jaxlib.version
        return "cuda" in jaxlib.version.__version__  # old jaxlib wheels bundled CUDA (0.4.x+cuda)
    except Exception:  # noqa: BLE001
        return False


def body():
    try:
        import jax
        import jax.numpy as jnp
    except Exception as error:
        raise Skip("jax not importable (%s)" % type(error).__name__)
    if not has_cuda_plugin():
        raise Skip("jax %s has no CUDA plugin" % jax.__version__)
    details = {"jax": jax.__version__, "cap": CAP, "allocator": "platform" if PLATFORM else "default (BFC, prealloc)"}
    gpus = [d for d in jax.devices() if d.platform == "gpu"]  # a CPU fallback is a failure, not a skip
    if not gpus:
        details["error"] = "jax has a CUDA plugin but sees no GPU under the hook: %s" % jax.devices()
        return False, details
    device = gpus[0]

    def is_oom(error):
        text = str(error)
        return "RESOURCE_EXHAUSTED" in text or "out of memory" in text.lower()

    def allocate(size):
        block = jnp.zeros((size,), dtype=jnp.uint8, device=device) if "device" in _ZEROS_KW else \
            jax.device_put(jnp.zeros((size,), dtype=jnp.uint8), device)
        block.block_until_ready()
        return block

    x = jnp.ones((1 << 20,), dtype=jnp.float32)
    compute_ok = float((x * 2).sum()) == 2.0 * (1 << 20)
    del x
    stats = device.memory_stats() or {}
    details["memory_stats"] = {k: stats.get(k) for k in ("bytes_limit", "bytes_in_use", "pool_bytes",
                                                         "bytes_reserved", "largest_free_block_bytes")}
    if PLATFORM:
        filled = fill(allocate, is_oom)
        details["fill"] = filled
        return compute_ok and fill_ok(filled), details
    limit = stats.get("bytes_limit")
    details["bytes_limit_fraction_of_cap"] = None if limit is None else round(limit / CAP, 4)
    past = past_cap(allocate, is_oom)
    details["past_cap"] = past
    pool_ok = limit is not None and 0.60 * CAP <= limit <= 0.80 * CAP
    return compute_ok and pool_ok and past["refused"] and past.get("oom", False), details


try:
    import inspect
    import jax.numpy as _jnp
    _ZEROS_KW = inspect.signature(_jnp.zeros).parameters
except Exception:  # noqa: BLE001 — jax missing: body() reports the skip
    _ZEROS_KW = {}

run("jax[platform]" if PLATFORM else "jax", body)
