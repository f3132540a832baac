#!/usr/bin/env python3
"""Instructions per cuLaunchKernel, by component and thread, under valgrind's callgrind.

Runs `<bench> --fgpu_loop=<path>,<share>,<N>` (bench/hook_bench.cc) for two launch counts and
divides the difference by the difference in launches, so process setup, the hook's init and
the gate's first-launch resolution drop out. Callgrind counts user-space instructions of every
thread (the completion thread included), not kernel time or waiting: a futex wake-up is one
`syscall` instruction here.

Under callgrind a launch takes ~50x its native time, so time-based batch closing (200 us) makes
far smaller batches than a native run does. The per-batch work (markers, the completion thread)
is therefore reported per batch as well, with the number of batches (calls to the gate's Close),
so it can be re-amortised over the native batch size.

    bench/launch_profile.py build/h-bench/bin/fgpu_hook_bench [--n1 20000 --n2 120000]
"""
import argparse
import collections
import glob
import os
import subprocess
import sys
import tempfile


def parse(path):
    """Self cost per (object, function), and calls + inclusive cost per callee function."""
    self_cost = collections.Counter()
    calls = collections.Counter()
    inclusive = collections.Counter()
    ob = fn = ""
    skip_next = False
    pending_calls = 0
    pending_callee = ""
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            if skip_next:
                skip_next = False
                parts = line.split()
                if len(parts) >= 2:
                    inclusive[pending_callee] += int(parts[1])
                    calls[pending_callee] += pending_calls
                continue
            if line.startswith("ob="):
                ob = line[3:]
            elif line.startswith("fn="):
                fn = line[3:]
            elif line.startswith("cfn="):
                pending_callee = line[4:]
            elif line.startswith("calls="):
                pending_calls = int(line[6:].split()[0])
                skip_next = True
            elif line[0].isdigit() or line[0] in "+-*":
                parts = line.split()
                if len(parts) >= 2:
                    self_cost[(ob, fn)] += int(parts[1])
    return self_cost, calls, inclusive


def component(ob, fn):
    base = os.path.basename(ob)
    if fn.split("(", 1)[0].startswith("fgpu::compute::"):
        return "limiter (fgpu::compute)"
    if base.startswith("libfgpu"):
        return "hook (libfgpu.so, gate)"
    if base.startswith("libcuda"):
        return "driver (libcuda.so.1)"
    if "vdso" in base or "clock_gettime" in fn:
        return "clock (vDSO clock_gettime)"
    if base.startswith("libc.so") or base.startswith("ld-linux"):
        return "libc (syscall, pthread, malloc)"
    if base.startswith("libstdc++") or base.startswith("libgcc"):
        return "libstdc++"
    return "bench program"


def run(bench, spec, workdir):
    out = os.path.join(workdir, spec.replace(",", "_"))
    os.makedirs(out, exist_ok=True)
    subprocess.run(
        ["valgrind", "--tool=callgrind", "--separate-threads=yes", "--compress-strings=no", "--compress-pos=no",
         f"--callgrind-out-file={out}/cg.out", bench, f"--fgpu_loop={spec}"],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    threads = {}
    for path in sorted(glob.glob(f"{out}/cg.out*")):
        tid = path.rsplit("-", 1)[-1] if "-" in os.path.basename(path) else "1"
        threads[int(tid)] = parse(path)
    return threads


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bench")
    parser.add_argument("--n1", type=int, default=20000)
    parser.add_argument("--n2", type=int, default=120000)
    parser.add_argument("--cases", default="direct,100;hook,100;direct,50;hook,50;direct,50,rejected;hook,50,rejected")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    launches = args.n2 - args.n1
    with tempfile.TemporaryDirectory(prefix="fgpu-launch-profile-") as workdir:
        for case in args.cases.split(";"):
            path, share, *rest = case.split(",")
            suffix = "," + rest[0] if rest else ""
            small = run(args.bench, f"{path},{share},{args.n1}{suffix}", workdir)
            large = run(args.bench, f"{path},{share},{args.n2}{suffix}", workdir)
            print(f"\n== {os.path.basename(args.bench)} {case}: instructions per launch (N={args.n1} vs {args.n2})")
            total = 0.0
            by_component = collections.Counter()
            by_function = collections.Counter()
            for tid in sorted(large):
                per = collections.Counter(large[tid][0])
                per.subtract(small.get(tid, ({}, {}, {}))[0])
                thread_total = sum(per.values()) / launches
                total += thread_total
                label = "launching thread" if tid == 1 else f"thread {tid} (completion thread)"
                print(f"  {label:40s} {thread_total:9.1f}")
                for (ob, fn), cost in per.items():
                    by_component[component(ob, fn)] += cost / launches
                    by_function[(tid, os.path.basename(ob), fn)] += cost / launches
            print(f"  {'all threads':40s} {total:9.1f}")
            for name, cost in by_component.most_common():
                if abs(cost) >= 0.05:
                    print(f"    {name:38s} {cost:9.1f}")
            print("  top functions (self, per launch):")
            for (tid, ob, fn), cost in by_function.most_common(args.top):
                print(f"    t{tid} {cost:8.1f}  {ob[:14]:14s} {fn[:100]}")
            calls_large, calls_small = large[1][1], small.get(1, ({}, {}, {}))[1]
            incl_large, incl_small = large[1][2], small.get(1, ({}, {}, {}))[2]
            for name in sorted(calls_large):
                if "anonymous namespace)::Close(" in name or "StartMarker" in name:
                    count = calls_large[name] - calls_small.get(name, 0)
                    cost = incl_large[name] - incl_small.get(name, 0)
                    if count > 0:
                        print(f"  {name.split('::')[-1][:40]:40s} calls/launch {count / launches:.4f}  "
                              f"instructions/call {cost / count:.0f}")
            completion = [tid for tid in large if tid != 1]
            close_calls = sum(calls_large[n] - calls_small.get(n, 0) for n in calls_large
                              if "anonymous namespace)::Close(" in n)
            if completion and close_calls > 0:
                work = 0
                for tid in completion:
                    per = collections.Counter(large[tid][0])
                    per.subtract(small.get(tid, ({}, {}, {}))[0])
                    work += sum(per.values())
                print(f"  completion thread per closed batch: {work / close_calls:.0f} instructions "
                      f"({close_calls} batches)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
