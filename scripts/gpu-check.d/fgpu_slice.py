#!/usr/bin/env python3
"""Creates, inspects, changes and removes an fgpu slice directory without any fgpu binary.

Writes the two files of docs/slice-format.md (version 2) byte for byte as
src/slice/slice_files.cc does (BuildLimits / BuildLedger / WriteFileAtomically):
the ledger first, then the limits, each complete under .NAME.tmp, fchmod'ed
(0666 ledger, 0644 limits), fsync'ed and renamed. Used by scripts/gpu-check, whose
GPU machine cannot build the `fgpu` CLI (it needs CLI11 and nlohmann_json).

  fgpu_slice.py create DIR --uuid GPU-... --cap BYTES [--id ID]
                [--share PCT] [--mode cap|share] [--tier latency|standard|batch]
                                 (--uuid/--cap once per device; share, mode, tier apply to all)
  fgpu_slice.py set-compute DIR [--device N] --share PCT [--mode M] [--tier T]
                                 as SliceAdmin::SetCompute: the share (one aligned 32-bit
                                 store), the compute word (one aligned 32-bit store), then the
                                 generation + 1; mode and tier default to the current ones
  fgpu_slice.py usage DIR        one JSON line: id, generation, per device uuid, cap, share,
                                 mode, tier, used, and the slots in use
  fgpu_slice.py remove DIR       deletes limits, ledger (and leftover temp files) and DIR

If the format changes (kFormatVersion, layout.h), change FORMAT_VERSION and the packers:
tests/gpucheck/fgpu_slice_py_test.cc opens what this writes with the C++ code, and fails.
"""
import argparse
import json
import mmap
import os
import re
import struct
import sys

FORMAT_VERSION = 2  # slice::kFormatVersion
MAX_DEVICES = 16  # slice::kMaxDevices
MAX_PROCESSES = 256  # slice::kMaxProcesses (ledger slot_count)
LANES = 8  # slice::kLanes: per slot and device
UUID_BYTES = 48  # slice::kUuidBytes
ID_BYTES = 64  # slice::kIdBytes
MAX_BYTES = 1 << 50  # layout::kMaxBytes (1 PiB)
LIMITS_MAGIC = b"FGPULIM1"
LEDGER_MAGIC = b"FGPULED1"
# layout::LimitsHeader: magic version header_size file_size id device_count reserved generation
LIMITS_HEADER = struct.Struct("<8sIIQ64sIIQ")
GENERATION_OFFSET = 96  # offsetof(LimitsHeader, generation)
# layout::LimitsDevice: uuid memory_cap compute_share compute_mode tier reserved
LIMITS_DEVICE = struct.Struct("<48sQIBBH")
SHARE_OFFSET = 56  # offsetof(LimitsDevice, compute_share)
COMPUTE_WORD_OFFSET = 60  # offsetof(LimitsDevice, compute_mode): mode | tier << 8 | reserved << 16
# layout::LedgerHeader: magic version header_size file_size device_count slot_count slot_size slots_offset reserved
LEDGER_HEADER = struct.Struct("<8sIIQIIII24s")
DEVICE_WORD_BYTES = 64  # alignas(64) DeviceWord {u64 used, u64 last, pad}
SLOT_HEADER_BYTES = 32  # SlotHeader {u32 state, i32 pid, u64 start_time, u32 generation, ...}
SLOT_DEVICE_BYTES = 32  # SlotDevice {journal_bytes, journal_seq, charged (signed), committed}
CHARGED_OFFSET = 16  # offsetof(SlotDevice, charged)
assert LIMITS_HEADER.size == 104 and LIMITS_DEVICE.size == 64 and LEDGER_HEADER.size == 64

MODES = {"cap": 0, "share": 1}  # slice::ComputeMode
TIERS = {"batch": 0, "standard": 1, "latency": 2}  # slice::Tier
MODE_NAMES = {v: k for k, v in MODES.items()}
TIER_NAMES = {v: k for k, v in TIERS.items()}


def limits_file_size(n):
    return LIMITS_HEADER.size + n * LIMITS_DEVICE.size


def slot_device_offset(device, lane):
    """layout::SlotDeviceOffset: lanes are lane-major within the device."""
    return SLOT_HEADER_BYTES + (device * LANES + lane) * SLOT_DEVICE_BYTES


def slot_size(n):
    """layout::SlotSize: header + n devices x LANES lanes, rounded up to 64 (= 64 + 256 n)."""
    return (SLOT_HEADER_BYTES + n * LANES * SLOT_DEVICE_BYTES + 63) // 64 * 64


def slots_offset(n):
    return LEDGER_HEADER.size + n * DEVICE_WORD_BYTES


def ledger_file_size(n):
    return slots_offset(n) + MAX_PROCESSES * slot_size(n)


# The static_asserts of layout.h, so a drift in this file is caught where it is made.
assert slot_device_offset(0, 0) == 32 and slot_device_offset(0, 1) == 64 and slot_device_offset(1, 0) == 32 + 256
assert slot_size(1) == 320 and slot_size(2) == 576 and slot_size(16) == 4160
assert ledger_file_size(1) == 64 + 64 + 256 * 320 and ledger_file_size(16) == 64 + 16 * 64 + 256 * 4160


class Device:
    def __init__(self, uuid, cap, share=100, mode="share", tier="standard"):
        self.uuid, self.cap, self.share, self.mode, self.tier = uuid, cap, share, mode, tier


def build_limits(slice_id, devices):
    """generation starts at 1 and every reserved byte is 0, as BuildLimits."""
    n = len(devices)
    out = bytearray(limits_file_size(n))
    LIMITS_HEADER.pack_into(out, 0, LIMITS_MAGIC, FORMAT_VERSION, LIMITS_HEADER.size, len(out),
                            slice_id.encode("ascii"), n, 0, 1)
    for d, device in enumerate(devices):
        LIMITS_DEVICE.pack_into(out, LIMITS_HEADER.size + d * LIMITS_DEVICE.size, device.uuid.encode("ascii"),
                                device.cap, device.share, MODES[device.mode], TIERS[device.tier], 0)
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


def validate_compute(share, mode, tier):
    """ValidateCompute."""
    if not 1 <= share <= 100:
        raise ValueError("compute share must be 1..100, got %d" % share)
    if mode not in MODES:
        raise ValueError("compute mode must be cap or share, got %r" % mode)
    if tier not in TIERS:
        raise ValueError("tier must be batch, standard or latency, got %r" % tier)


def validate(slice_id, devices):
    """ValidateSpec."""
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,63}", slice_id):
        raise ValueError("slice id must be 1..63 of [A-Za-z0-9._-], got %r" % slice_id)
    if not 1 <= len(devices) <= MAX_DEVICES:
        raise ValueError("a slice has 1..%d devices" % MAX_DEVICES)
    seen = set()
    for device in devices:
        uuid = device.uuid
        if not uuid or len(uuid) >= UUID_BYTES or not all(0x20 < ord(c) < 0x7F for c in uuid):
            raise ValueError("bad uuid %r" % uuid)
        if uuid.lower() in seen:
            raise ValueError("uuid %s appears twice" % uuid)
        seen.add(uuid.lower())
        if not 1 <= device.cap <= MAX_BYTES:
            raise ValueError("memory cap must be 1 byte..1 PiB, got %d" % device.cap)
        validate_compute(device.share, device.mode, device.tier)


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


def check_limits(limits, path):
    """MapLimits' checks on the header; returns the device count."""
    if len(limits) < LIMITS_HEADER.size:
        raise ValueError("%s: truncated (%d bytes)" % (path, len(limits)))
    magic, version, header_size, file_size, _, n, _, _ = LIMITS_HEADER.unpack_from(limits, 0)
    if magic != LIMITS_MAGIC:
        raise ValueError("%s: bad magic (not a slice limits file)" % path)
    if version != FORMAT_VERSION:
        raise ValueError("%s: format version %d, this script reads version %d" % (path, version, FORMAT_VERSION))
    if header_size != LIMITS_HEADER.size or not 1 <= n <= MAX_DEVICES:
        raise ValueError("%s: header size %d, device count %d" % (path, header_size, n))
    if file_size != limits_file_size(n) or len(limits) != file_size:
        raise ValueError("%s: size mismatch (file %d, header %d, layout %d)" % (path, len(limits), file_size,
                                                                                 limits_file_size(n)))
    return n


def usage(directory):
    """A read-only snapshot (plain reads: good for a report, not for the protocol)."""
    limits_path = os.path.join(directory, "limits")
    ledger_path = os.path.join(directory, "ledger")
    with open(limits_path, "rb") as f:
        limits = f.read()
    with open(ledger_path, "rb") as f:
        ledger = f.read()
    n = check_limits(limits, limits_path)
    _, _, _, _, raw_id, _, _, generation = LIMITS_HEADER.unpack_from(limits, 0)
    lmagic, lversion, _, lsize, ln, slots, size, offset, _ = LEDGER_HEADER.unpack_from(ledger, 0)
    if (lmagic != LEDGER_MAGIC or lversion != FORMAT_VERSION or ln != n or slots != MAX_PROCESSES
            or size != slot_size(n) or offset != slots_offset(n) or lsize != len(ledger)
            or lsize != ledger_file_size(n)):
        raise ValueError("%s: not a version %d ledger of %d devices" % (ledger_path, FORMAT_VERSION, n))
    devices = []
    for d in range(n):
        uuid, cap, share, mode, tier, _ = LIMITS_DEVICE.unpack_from(limits, LIMITS_HEADER.size + d * LIMITS_DEVICE.size)
        used, _ = struct.unpack_from("<QQ", ledger, LEDGER_HEADER.size + d * DEVICE_WORD_BYTES)
        devices.append({"uuid": uuid.split(b"\0")[0].decode(), "cap": cap, "share": share,
                        "mode": MODE_NAMES.get(mode, "unknown"), "tier": TIER_NAMES.get(tier, "unknown"),
                        "used": used})
    processes = []
    for s in range(slots):
        base = offset + s * size
        state, pid, start = struct.unpack_from("<IiQ", ledger, base)
        if state != 0:
            # A slot's charge: the signed sum of its lanes (a single lane may be negative).
            charged = [sum(struct.unpack_from("<q", ledger, base + slot_device_offset(d, k) + CHARGED_OFFSET)[0]
                           for k in range(LANES)) for d in range(n)]
            processes.append({"slot": s, "state": state, "pid": pid, "start_time": start, "charged": charged})
    return {"id": raw_id.split(b"\0")[0].decode(), "generation": generation, "devices": devices,
            "processes": processes}


def set_compute(directory, device, share, mode=None, tier=None):
    """SliceAdmin::SetCompute on the mapped limits file: validate (nothing changed on error), one
    aligned 32-bit store of the share, one of the compute word (keeping its reserved bits: only
    the admin writes limits), then the generation + 1. Each store is one element assignment to a
    memoryview cast to 'I' or 'Q' over the mapping, which CPython does with one aligned store of
    that width (atomic on x86-64, and x86 keeps stores in program order, so whoever sees the new
    generation sees both fields). Like the C++ admin, one admin per slice: the generation is read
    and written, not atomically added to. Returns (old generation, new generation)."""
    path = os.path.join(directory, "limits")
    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    try:
        file_size = os.fstat(fd).st_size
        if file_size < LIMITS_HEADER.size:
            raise ValueError("%s: truncated (%d bytes)" % (path, file_size))
        mapping = mmap.mmap(fd, file_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        os.close(fd)
    try:
        n = check_limits(mapping, path)
        if not 0 <= device < n:
            raise ValueError("device %d is not in the slice (it has %d)" % (device, n))
        record = LIMITS_HEADER.size + device * LIMITS_DEVICE.size
        words32 = memoryview(mapping).cast("I")
        words64 = memoryview(mapping).cast("Q")
        try:
            word_index = (record + COMPUTE_WORD_OFFSET) // 4
            word = words32[word_index]
            if mode is None:
                mode = MODE_NAMES.get(word & 0xFF, "cap")
            if tier is None:
                tier = TIER_NAMES.get((word >> 8) & 0xFF, "batch")
            validate_compute(share, mode, tier)
            reserved = word >> 16
            words32[(record + SHARE_OFFSET) // 4] = share
            words32[word_index] = MODES[mode] | TIERS[tier] << 8 | reserved << 16
            old = words64[GENERATION_OFFSET // 8]
            words64[GENERATION_OFFSET // 8] = (old + 1) & 0xFFFFFFFFFFFFFFFF
            return old, words64[GENERATION_OFFSET // 8]
        finally:
            words32.release()
            words64.release()
    finally:
        mapping.close()


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    make = sub.add_parser("create")
    make.add_argument("dir")
    make.add_argument("--id", default="gpu-check-%d" % os.getpid())
    make.add_argument("--uuid", required=True, action="append", help="once per device")
    make.add_argument("--cap", required=True, type=int, action="append", help="bytes, once per --uuid")
    make.add_argument("--share", type=int, default=100, help="compute share, percent 1..100 (default 100)")
    make.add_argument("--mode", choices=sorted(MODES), default="share", help="compute mode (default share)")
    make.add_argument("--tier", choices=sorted(TIERS), default="standard", help="tier (default standard)")
    change = sub.add_parser("set-compute")
    change.add_argument("dir")
    change.add_argument("--device", type=int, default=0, help="slice device index (default 0)")
    change.add_argument("--share", type=int, required=True)
    change.add_argument("--mode", choices=sorted(MODES), help="default: unchanged")
    change.add_argument("--tier", choices=sorted(TIERS), help="default: unchanged")
    for name in ("usage", "remove"):
        sub.add_parser(name).add_argument("dir")
    args = parser.parse_args(argv)
    try:
        if args.command == "create":
            if len(args.uuid) != len(args.cap):
                parser.error("give one --cap per --uuid")
            create(args.dir, args.id, [Device(u, c, args.share, args.mode, args.tier) for u, c in zip(args.uuid, args.cap)])
        elif args.command == "set-compute":
            old, new = set_compute(args.dir, args.device, args.share, args.mode, args.tier)
            print(json.dumps({"generation_before": old, "generation": new}))
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
