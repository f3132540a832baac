#!/usr/bin/env python3
"""The simulated driver's exports against the real CUDA 13.0 libcuda.so.1's.

    check_exports.py SYMBOLS_INC EXPORTS NOT_YET [STUB_LIBCUDA]

EXPORTS lists every function the real driver exports (from the toolkit's stubs/libcuda.so);
NOT_YET, those the simulator does not export yet (issue 18's bar: empty). Fails when the
simulator exports a name the real driver does not, when NOT_YET is not exactly what is missing
(a function added without being struck off, or one dropped), or, given the toolkit's stub, when
EXPORTS is not the stub's list.
"""
import re
import subprocess
import sys


def names(path):
    with open(path) as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


def main(argv):
    inc, exports_path, not_yet_path = argv[1:4]
    with open(inc) as f:
        ours = set(re.findall(r"^FGPU_CUDA_SYMBOL\(\s*\w+\s*,\s*(\w+)\s*,", f.read(), re.M))
    exports, not_yet = names(exports_path), names(not_yet_path)
    failures = []
    invented = sorted(ours - set(exports))
    if invented:
        failures.append(f"exported by the simulator but not by CUDA 13.0's libcuda: {invented}")
    missing = sorted(set(exports) - ours)
    if missing != sorted(not_yet):
        added = sorted(set(not_yet) - set(missing))
        dropped = sorted(set(missing) - set(not_yet))
        if added:
            failures.append(f"exported now, strike them off {not_yet_path}: {added}")
        if dropped:
            failures.append(f"missing from the simulator but not listed in {not_yet_path}: {dropped}")
    if len(argv) > 4:
        listed = subprocess.run(["nm", "-D", "--defined-only", argv[4]], capture_output=True, text=True, check=True)
        stub = sorted(line.split()[2] for line in listed.stdout.splitlines() if line.split()[1:2] == ["T"])
        if stub != sorted(exports):
            failures.append(f"{exports_path} is not the list of {argv[4]}: "
                            f"{sorted(set(stub) ^ set(exports))[:20]}")
    for failure in failures:
        print("FAIL:", failure)
    print(f"{len(ours)} of {len(exports)} functions of CUDA 13.0's libcuda exported; {len(missing)} not yet")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
