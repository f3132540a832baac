#!/usr/bin/env python3
"""Creates, inspects and removes an fgpu slice directory without any fgpu binary.

Writes the two files of docs/slice-format.md (version 1) byte for byte as
src/slice/slice_files.cc does (BuildLimits / BuildLedger / WriteFileAtomically):
the ledger first, then the limits, each complete under .NAME.tmp, fchmod'ed
(0666 ledger, 0644 limits), fsync'ed and renamed. Used by scripts/gpu-check, whose
GPU machine cannot build the `fgpu` CLI (it needs CLI11 and nlohmann_json).

  fgpu_slice.py create DIR --uuid GPU-... --cap BYTES [--id ID] [--share PCT]
  fgpu_slice.py usage DIR      one JSON line: id, per device uuid, cap, used, live slots
  fgpu_slice.py remove DIR     deletes limits, ledger (and leftover temp files) and DIR

If the format changes (kFormatVersion, layout.h), change FORMAT_VERSION and the packers.
"""
import argparse
import json
import os
import re
import struct
import sys

FORMAT_VERSION = 1  # slice::kFormatVersion
MAX_DEVICES = 16  # slice::kMaxDevices
MAX_PROCESSES = 256  # slice::kMaxProcesses (ledger slot_count)
UUID_BYTES = 48  # slice::kUuidBytes
ID_BYTES = 64  # slice::kIdBytes
MAX_BYTES = 1 << 50  # layout::kMaxBytes (1 PiB)
LIMITS_MAGIC = b"FGPULIM1"
LEDGER_MAGIC = b"FGPULED1"
LIMITS_HEADER = struct.Struct("<8sIIQ64sIIQ")  # magic version header_size file_size id count reserved generation
LIMITS_DEVICE = struct.Struct("<48sQII")  # uuid memory_cap compute_share reserved
LEDGER_HEADER = struct.Struct("<8sIIQIIII24s")  # magic version header_size file_size count slots size offset reserved
DEVICE_WORD_BYTES = 64  # alignas(64) {u64 used, u64 last, pad}
SLOT_HEADER_BYTES = 32
SLOT_DEVICE_BYTES = 32
assert LIMITS_HEADER.size == 104 and LIMITS_DEVICE.size == 64 and LEDGER_HEADER.size == 64


def limits_file_size(n):
    return LIMITS_HEADER.size + n * LIMITS_DEVICE.size


def slot_size(n):
    return (SLOT_HEADER_BYTES + n * SLOT_DEVICE_BYTES + 63) // 64 * 64


def slots_offset(n):
    return LEDGER_HEADER.size + n * DEVICE_WORD_BYTES


def ledger_file_size(n):
    return slots_offset(n) + MAX_PROCESSES * slot_size(n)


def build_limits(slice_id, devices):
    """devices: [(uuid, cap, share)]. generation starts at 1, as BuildLimits."""
    n = len(devices)
    out = bytearray(limits_file_size(n))
    LIMITS_HEADER.pack_into(out, 0, LIMITS_MAGIC, FORMAT_VERSION, LIMITS_HEADER.size, len(out),
                            slice_id.encode("ascii"), n, 0, 1)
    for d, (uuid, cap, share) in enumerate(devices):
        LIMITS_DEVICE.pack_into(out, LIMITS_HEADER.size + d * LIMITS_DEVICE.size, uuid.encode("ascii"), cap, share, 0)
    return bytes(out)


def build_ledger(n):
    """Every slot FREE, every counter 0."""
    out = bytearray(ledger_file_size(n))
    LEDGER_HEADER.pack_into(out, 0, LEDGER_MAGIC, FORMAT_VERSION, LEDGER_HEADER.size, len(out), n, MAX_PROCESSES,
                            slot_size(n), slots_offset(n), b"")
    return bytes(out)


def write_atomically(directory, name, data, mode):
    final_path = os.path.join(directory, name)
    temp_path = os.path.join(directory, "." + name + ".tmp")
    fd = os.open(temp_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fchmod(fd, mode)  # exactly: umask does not apply
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(temp_path)
        raise
    os.close(fd)
    os.rename(temp_path, final_path)


def validate(slice_id, devices):
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,63}", slice_id):
        raise ValueError("slice id must be 1..63 of [A-Za-z0-9._-], got %r" % slice_id)
    if not 1 <= len(devices) <= MAX_DEVICES:
        raise ValueError("a slice has 1..%d devices" % MAX_DEVICES)
    seen = set()
    for uuid, cap, share in devices:
        if not uuid or len(uuid) >= UUID_BYTES or not all(0x20 < ord(c) < 0x7F for c in uuid):
            raise ValueError("bad uuid %r" % uuid)
        if uuid.lower() in seen:
            raise ValueError("uuid %s appears twice" % uuid)
        seen.add(uuid.lower())
        if not 1 <= cap <= MAX_BYTES:
            raise ValueError("memory cap must be 1 byte..1 PiB, got %d" % cap)
        if not 1 <= share <= 100:
            raise ValueError("compute share must be 1..100, got %d" % share)


def create(directory, slice_id, devices):
    validate(slice_id, devices)
    os.mkdir(directory, 0o755)  # must not exist, as SliceAdmin::Create
    try:
        # The ledger first: a reader that finds the limits finds a ledger too.
        write_atomically(directory, "ledger", build_ledger(len(devices)), 0o666)
        write_atomically(directory, "limits", build_limits(slice_id, devices), 0o644)
    except BaseException:
        remove(directory)
        raise


def remove(directory):
    for name in ("limits", "ledger", ".limits.tmp", ".ledger.tmp"):
        try:
            os.unlink(os.path.join(directory, name))
        except FileNotFoundError:
            pass
    try:
        os.rmdir(directory)
    except FileNotFoundError:
        pass


def usage(directory):
    """A read-only snapshot (plain reads: good for a report, not for the protocol)."""
    with open(os.path.join(directory, "limits"), "rb") as f:
        limits = f.read()
    with open(os.path.join(directory, "ledger"), "rb") as f:
        ledger = f.read()
    magic, version, _, _, raw_id, n, _, generation = LIMITS_HEADER.unpack_from(limits, 0)
    if magic != LIMITS_MAGIC or version != FORMAT_VERSION:
        raise ValueError("limits: not a version %d slice" % FORMAT_VERSION)
    lmagic, lversion, _, _, ln, slots, size, offset, _ = LEDGER_HEADER.unpack_from(ledger, 0)
    if lmagic != LEDGER_MAGIC or lversion != FORMAT_VERSION or ln != n:
        raise ValueError("ledger: not a version %d ledger of %d devices" % (FORMAT_VERSION, n))
    devices = []
    for d in range(n):
        uuid, cap, share, _ = LIMITS_DEVICE.unpack_from(limits, LIMITS_HEADER.size + d * LIMITS_DEVICE.size)
        used, last = struct.unpack_from("<QQ", ledger, LEDGER_HEADER.size + d * DEVICE_WORD_BYTES)
        devices.append({"uuid": uuid.split(b"\0")[0].decode(), "cap": cap, "share": share, "used": used})
    processes = []
    for s in range(slots):
        state, pid, start = struct.unpack_from("<IiQ", ledger, offset + s * size)
        if state != 0:
            charged = [struct.unpack_from("<Q", ledger, offset + s * size + SLOT_HEADER_BYTES + d * SLOT_DEVICE_BYTES
                                          + 16)[0] for d in range(n)]
            processes.append({"slot": s, "state": state, "pid": pid, "charged": charged})
    return {"id": raw_id.split(b"\0")[0].decode(), "generation": generation, "devices": devices,
            "processes": processes}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    make = sub.add_parser("create")
    make.add_argument("dir")
    make.add_argument("--id", default="gpu-check-%d" % os.getpid())
    make.add_argument("--uuid", required=True, action="append", help="once per device")
    make.add_argument("--cap", required=True, type=int, action="append", help="bytes, once per --uuid")
    make.add_argument("--share", type=int, default=100)
    for name in ("usage", "remove"):
        sub.add_parser(name).add_argument("dir")
    args = parser.parse_args(argv)
    try:
        if args.command == "create":
            if len(args.uuid) != len(args.cap):
                parser.error("give one --cap per --uuid")
            create(args.dir, args.id, [(u, c, args.share) for u, c in zip(args.uuid, args.cap)])
        elif args.command == "remove":
            remove(args.dir)
        else:
            print(json.dumps(usage(args.dir)))
    except (OSError, ValueError) as error:
        print("fgpu_slice.py: %s" % error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
