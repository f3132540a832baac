#!/usr/bin/env python3
"""Two ends of CUDA IPC through the driver API (ctypes, no toolkit): one process exports a memory
and an event handle, another opens them, as PyTorch's and NCCL's processes do. One JSON line per
step; the caller (tests/e2e/security_test.sh) judges them.

    cuda_ipc_peer.py export BYTES RELEASE_FILE
        Allocates BYTES, fills them with a pattern, records an interprocess event and prints
        {"step": "export", "pid", "mem_handle", "event_handle"} (the handles' 64 bytes in hex).
        Waits (at most 60 s) until RELEASE_FILE exists, then prints {"step": "check"} with
        whether its memory still holds the pattern and what cuEventQuery answers.
    cuda_ipc_peer.py open EXPORT_LINE_FILE [--scribble]
        Opens the handles of an export line: {"step": "open_mem"} (the driver's answer and, if it
        opened, whether it reads the pattern), {"step": "open_event"}, {"step": "reach"} (its own
        IPC mappings and what opening the exporter's descriptor through /proc answers). With
        --scribble, whatever opened is overwritten and recorded on, as an attacker would.

Exits 0 whatever the driver answers, 1 if the driver cannot be loaded or initialised.
"""
import ctypes
import errno
import json
import os
import sys
import time

CU_EVENT_DISABLE_TIMING = 2
CU_EVENT_INTERPROCESS = 4
CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1


class IpcHandle(ctypes.Structure):  # CUipcMemHandle and CUipcEventHandle: 64 opaque bytes
    _fields_ = [("reserved", ctypes.c_ubyte * 64)]


def emit(step, **fields):
    print(json.dumps({"step": step, **fields}), flush=True)


def load_driver():
    cuda = ctypes.CDLL("libcuda.so.1")
    ctx = ctypes.c_void_p()
    if (cuda.cuInit(0) != 0 or cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) != 0
            or cuda.cuCtxSetCurrent(ctx) != 0):
        emit("init", ok=False)
        sys.exit(1)
    return cuda


def name_of(cuda, code):
    text = ctypes.c_char_p()
    if cuda.cuGetErrorName(code, ctypes.byref(text)) != 0 or not text.value:
        return "CUresult %d" % code
    return text.value.decode()


def pattern(size):
    return bytes((i * 7 + 3) & 0xFF for i in range(size))


def export(cuda, size, release_file):
    data = ctypes.c_ulonglong()
    event = ctypes.c_void_p()
    memory_handle, event_handle = IpcHandle(), IpcHandle()
    expected = pattern(size)
    codes = [
        cuda.cuMemAlloc_v2(ctypes.byref(data), ctypes.c_size_t(size)),
        cuda.cuMemcpyHtoD_v2(data, expected, ctypes.c_size_t(size)),
        cuda.cuEventCreate(ctypes.byref(event), CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING),
        cuda.cuEventRecord(event, None),
        cuda.cuEventSynchronize(event),
        cuda.cuIpcGetMemHandle(ctypes.byref(memory_handle), data),
        cuda.cuIpcGetEventHandle(ctypes.byref(event_handle), event),
    ]
    failed = [name_of(cuda, code) for code in codes if code != 0]
    emit("export", ok=not failed, failed=failed, pid=os.getpid(), mem_handle=bytes(memory_handle.reserved).hex(),
         event_handle=bytes(event_handle.reserved).hex())
    deadline = time.monotonic() + 60
    while not os.path.exists(release_file) and time.monotonic() < deadline:
        time.sleep(0.05)
    seen = ctypes.create_string_buffer(size)
    read = cuda.cuMemcpyDtoH_v2(seen, data, ctypes.c_size_t(size))
    emit("check", read=name_of(cuda, read), unchanged=read == 0 and seen.raw == expected,
         event_query=name_of(cuda, cuda.cuEventQuery(event)))


def handle_of(hex_text):
    handle = IpcHandle()
    raw = bytes.fromhex(hex_text)
    ctypes.memmove(ctypes.byref(handle), raw, len(raw))
    return handle


def exporters_descriptor(hex_text):
    """The pid and descriptor the simulator's handle names (its layout: magic, version, pid, fd)."""
    raw = bytes.fromhex(hex_text)
    return int.from_bytes(raw[8:12], "little", signed=True), int.from_bytes(raw[12:16], "little", signed=True)


def ipc_mappings():
    with open("/proc/self/maps") as maps:
        return sum("fgpu-sim-ipc" in line for line in maps)


def open_handles(cuda, export_line_file, scribble):
    with open(export_line_file) as lines:
        exported = next(json.loads(line) for line in lines if '"step": "export"' in line)
    mapped = ctypes.c_ulonglong()
    code = cuda.cuIpcOpenMemHandle_v2(ctypes.byref(mapped), handle_of(exported["mem_handle"]),
                                      CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
    fields = {"code": name_of(cuda, code)}
    if code == 0:
        base, size = ctypes.c_ulonglong(), ctypes.c_size_t()
        cuda.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), mapped)
        seen = ctypes.create_string_buffer(size.value)
        cuda.cuMemcpyDtoH_v2(seen, mapped, size)
        fields["reads_the_pattern"] = seen.raw[:4096] == pattern(4096)
        if scribble:
            fields["scribbled"] = name_of(cuda, cuda.cuMemsetD8_v2(mapped, 0, size))
    emit("open_mem", **fields)
    event = ctypes.c_void_p()
    code = cuda.cuIpcOpenEventHandle(ctypes.byref(event), handle_of(exported["event_handle"]))
    fields = {"code": name_of(cuda, code)}
    if code == 0 and scribble:
        fields["scribbled"] = name_of(cuda, cuda.cuEventRecord(event, None))
    emit("open_event", **fields)
    pid, fd = exporters_descriptor(exported["mem_handle"])
    try:
        os.close(os.open("/proc/%d/fd/%d" % (pid, fd), os.O_RDONLY))
        through_proc = "opened"
    except OSError as error:
        through_proc = errno.errorcode.get(error.errno, str(error.errno))
    emit("reach", ipc_mappings=ipc_mappings(), through_proc=through_proc)


def main(argv):
    if len(argv) >= 4 and argv[1] == "export":
        export(load_driver(), int(argv[2]), argv[3])
        return 0
    if len(argv) in (3, 4) and argv[1] == "open" and argv[3:] in ([], ["--scribble"]):
        open_handles(load_driver(), argv[2], argv[3:] == ["--scribble"])
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
