"""Shared by the gpu-check Python checks (scripts/gpu-check.d/check_*.py).

Each check prints exactly one JSON line {"check": NAME, "ok": true|false|null, ...} on stdout
and exits 0 whatever happened: ok null with "skipped" when the framework is missing, ok false
with "error" when something unexpected was raised. The environment comes from scripts/gpu-check:
FGPU_CHECK_CAP (the slice's cap in bytes) and FGPU_CHECK_CHUNK (fill chunk, bytes; 256 MiB).
"""
import json
import os
import sys
import traceback

MIB = 1 << 20
GIB = 1 << 30
CAP = int(os.environ.get("FGPU_CHECK_CAP", str(4 * GIB)))
CHUNK = int(os.environ.get("FGPU_CHECK_CHUNK", str(256 * MIB)))
# A fill that has not failed after this many chunks is not enforced (an 80 GB GPU would
# otherwise be filled completely): stop and report "capped".
MAX_CHUNKS = 2 * CAP // CHUNK + 4


def emit(name, ok, **details):
    line = {"check": name, "ok": ok}
    line.update(details)
    sys.stdout.write(json.dumps(line, sort_keys=False, default=str) + "\n")
    sys.stdout.flush()


def first_line(error):
    text = str(error).strip().splitlines()
    return "%s: %s" % (type(error).__name__, text[0][:300] if text else "")


def run(name, body):
    """body() returns (ok, details) or raises Skip. Always exits 0."""
    try:
        ok, details = body()
        emit(name, ok, **details)
    except Skip as skip:
        emit(name, None, skipped=str(skip))
    except BaseException as error:  # noqa: B902 — a check must never die without its line
        emit(name, False, error=first_line(error), traceback=traceback.format_exc()[-2000:])
    sys.exit(0)


class Skip(Exception):
    pass


def fill(allocate, is_oom, release=None):
    """Allocates CHUNK-sized blocks with allocate() until it raises. Returns a dict:
    allocations, allocated_bytes, stop ('oom', 'capped' or the unexpected error), stop_error."""
    held = []
    result = {"chunk": CHUNK}
    try:
        while len(held) < MAX_CHUNKS:
            held.append(allocate(CHUNK))
        result.update(stop="capped", stop_error=None)
    except BaseException as error:  # noqa: B902
        result.update(stop="oom" if is_oom(error) else "error", stop_error=first_line(error))
    result.update(allocations=len(held), allocated_bytes=len(held) * CHUNK)
    del held[:]
    if release is not None:
        release()
    return result


def past_cap(allocate, is_oom, release=None):
    """One allocation of CAP + CHUNK bytes: must fail with an out-of-memory error."""
    try:
        block = allocate(CAP + CHUNK)
        del block
        outcome = {"bytes": CAP + CHUNK, "refused": False}
    except BaseException as error:  # noqa: B902
        outcome = {"bytes": CAP + CHUNK, "refused": True, "oom": is_oom(error), "error": first_line(error)}
    if release is not None:
        release()
    return outcome


def fill_ok(result):
    return result["stop"] == "oom" and result["allocated_bytes"] < CAP
