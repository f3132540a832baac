#!/usr/bin/env python3
"""Verdicts of scripts/gpu-check's compute-share checks (docs/compute.md, "On a real GPU").

Reads the output files of the runs (fgpu-probe's stdout: its last {"event":"spin"} line; or
check_torch_compute.py's stdout: its last {"check":...} line) and prints the verdict ("true" or
"false") on the first line, a JSON object of the figures (achieved, target, ...) on the second,
and readable lines, each starting with two spaces, for the report.

  compute_eval.py split --target 30 --target 70 --tolerance 3 [--judge per-window|aggregate]
                        [--report-only] [--exit N ...] FILE FILE
      Shares of the busy time (probe: duty windows; torch: matmuls per window) per whole window
      after the first (which holds the staggered starts). per-window: every such window within
      the tolerance (the issue's bar); aggregate: the sum over those windows. --report-only: ok
      is whether the runs worked, "within_tolerance" says the rest.
  compute_eval.py cap --target 50 --tolerance 5 [--exit N] FILE
      The probe's duty in every whole window within target +- tolerance.
  compute_eval.py ratio --target 0.5 --tolerance 0.05 [--exit N ...] BASE FILE
      Throughput (matmuls_per_s) of FILE over BASE's (the same loop without the hook).
  compute_eval.py latency [--factor 1] [--plus-us U] --alone F... --beside F... [--batch F...] [--exit N ...]
      Best p99 (of the probe's latency_us) of the runs beside a saturating batch slice <=
      factor x the best p99 alone + U (host noise only adds latency). U is the physical limit: a
      running kernel is not preempted, so a request may wait for one batch kernel
      (docs/compute.md "The physical limit").

Every --exit is a run's exit status (in file order); a non-zero one fails the verdict. Exits 0
unless the command line is wrong.
"""
import argparse
import json
import sys


def last_result(path):
    """The last line of PATH that is a probe spin event or a Python check result; {} if none."""
    found = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    value = json.loads(line)
                except ValueError:
                    continue
                if value.get("event") == "spin" or "check" in value:
                    found = value
    except OSError:
        pass
    return found


def windows_of(run):
    windows = run.get("windows")
    return [float(w) for w in windows] if isinstance(windows, list) else []


def rate_of(run):
    """The run's overall figure: achieved duty (probe) or matmuls per second (torch)."""
    for key in ("achieved_duty", "matmuls_per_s"):
        if isinstance(run.get(key), (int, float)):
            return float(run[key])
    return None


def r1(value):
    return None if value is None else round(value, 1)


def exits_ok(exits, count):
    return all(code == 0 for code in exits) and len(exits) in (0, count)


def split(args):
    runs = [last_result(path) for path in args.files]
    targets = args.target
    if len(targets) != len(runs):
        sys.exit("compute_eval.py split: give one --target per file")
    windows = [windows_of(run) for run in runs]
    count = min(len(w) for w in windows) if windows else 0
    shares = [[] for _ in runs]  # per run, per judged window (index 1..count-1)
    for i in range(1, count):
        total = sum(w[i] for w in windows)
        for r in range(len(runs)):
            shares[r].append(100.0 * windows[r][i] / total if total > 0 else 0.0)
    sums = [sum(w[1:count]) for w in windows]
    aggregate = [100.0 * s / sum(sums) if sum(sums) > 0 else 0.0 for s in sums]
    rates = [rate_of(run) for run in runs]
    overall = ([100.0 * rate / sum(rates) for rate in rates]
               if all(rate is not None for rate in rates) and sum(rates) > 0 else [None] * len(runs))
    judged = len(shares[0]) if shares else 0
    if args.judge == "aggregate":
        deviations = [abs(aggregate[r] - targets[r]) for r in range(len(runs))] if judged else []
    else:
        deviations = [abs(s - targets[r]) for r in range(len(runs)) for s in shares[r]]
    worst = max(deviations) if deviations else None
    ran = exits_ok(args.exit, len(runs)) and all(runs) and judged > 0
    within = ran and worst is not None and worst <= args.tolerance
    verdict = {
        "ok": ran if args.report_only else within,
        "judged": not args.report_only,
        "within_tolerance": within,
        "target": targets,
        "tolerance": args.tolerance,
        "judge": args.judge,
        "achieved": [r1(rate) for rate in rates],
        "share_of_sum": [r1(s) for s in overall],
        "share_after_first_window": [r1(s) for s in aggregate],
        "shares_per_window": [[r1(s) for s in per_run] for per_run in shares],
        "windows": windows,
        "worst_deviation": r1(worst),
        "exit": args.exit,
    }
    unit = "%" if any("achieved_duty" in run for run in runs) else " matmuls/s"
    lines = []
    for r, run in enumerate(runs):
        lines.append("slice %d (target %g%%): achieved %s%s overall, %s%% of the sum; windows %s; "
                     "share per window after the first %s" % (
                         r + 1, targets[r], r1(rates[r]), unit, r1(overall[r]), [r1(w) for w in windows[r]],
                         [r1(s) for s in shares[r]]))
    lines.append("%s: %d whole window(s) after the first judged (%s), worst deviation %s points (bar +-%g)%s" % (
        "within" if within else "NOT within", judged, args.judge, r1(worst), args.tolerance,
        " [reported, not judged]" if args.report_only else ""))
    return verdict, lines


def cap(args):
    run = last_result(args.files[0])
    windows = windows_of(run)
    deviations = [abs(w - args.target[0]) for w in windows]
    worst = max(deviations) if deviations else None
    ok = exits_ok(args.exit, 1) and bool(windows) and worst <= args.tolerance
    verdict = {"ok": ok, "target": args.target[0], "tolerance": args.tolerance, "achieved": r1(rate_of(run)),
               "windows": windows, "worst_deviation": r1(worst), "exit": args.exit}
    lines = ["achieved %s%% overall, windows %s (target %g +- %g in every window): %s" % (
        r1(rate_of(run)), windows, args.target[0], args.tolerance, "ok" if ok else "WRONG")]
    return verdict, lines


def ratio(args):
    base, run = last_result(args.files[0]), last_result(args.files[1])
    base_rate, rate = rate_of(base), rate_of(run)
    value = rate / base_rate if base_rate and rate is not None else None
    ok = exits_ok(args.exit, 2) and value is not None and abs(value - args.target[0]) <= args.tolerance
    verdict = {"ok": ok, "target": args.target[0], "tolerance": args.tolerance,
               "achieved": None if value is None else round(value, 3), "base_rate": base_rate, "rate": rate,
               "base_windows": windows_of(base), "windows": windows_of(run), "exit": args.exit}
    lines = ["without the hook %s, in the slice %s matmuls/s: ratio %s (target %g +- %g): %s" % (
        r1(base_rate), r1(rate), None if value is None else round(value, 3), args.target[0], args.tolerance,
        "ok" if ok else "WRONG")]
    return verdict, lines


def latency(args):
    def p99s(paths):
        values = []
        for path in paths:
            p99 = (last_result(path).get("latency_us") or {}).get("p99")
            values.append(float(p99) if isinstance(p99, (int, float)) else None)
        return values

    alone, beside = p99s(args.alone), p99s(args.beside)
    batch = [rate_of(last_result(path)) for path in args.batch]
    good_alone = [v for v in alone if v is not None]
    good_beside = [v for v in beside if v is not None]
    best_alone = min(good_alone) if good_alone else None
    best_beside = min(good_beside) if good_beside else None
    ok = (exits_ok(args.exit, len(alone) + len(beside) + len(batch)) and best_alone is not None
          and best_beside is not None and best_beside <= args.factor * best_alone + args.plus_us)
    target = "<= %g x alone + %g us" % (args.factor, args.plus_us)
    verdict = {"ok": ok, "factor": args.factor, "p99_alone_us": [r1(v) for v in alone],
               "p99_beside_us": [r1(v) for v in beside], "best_p99_alone_us": r1(best_alone),
               "best_p99_beside_us": r1(best_beside),
               "achieved": None if not best_alone or best_beside is None else round(best_beside / best_alone, 3),
               "limit_us": r1(None if best_alone is None else args.factor * best_alone + args.plus_us),
               "target": target, "batch_duty": [r1(v) for v in batch], "exit": args.exit}
    lines = ["p99 alone %s us (best %s), beside a saturating batch slice %s us (best %s; batch duty %s%%)" % (
        [r1(v) for v in alone], r1(best_alone), [r1(v) for v in beside], r1(best_beside), [r1(v) for v in batch]),
        "best beside / best alone = %s; best beside %s us (bar %s): %s" % (
            verdict["achieved"], r1(best_beside), target, "ok" if ok else "WRONG")]
    return verdict, lines


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=("split", "cap", "ratio", "latency"))
    parser.add_argument("files", nargs="*")
    parser.add_argument("--target", type=float, action="append", default=[])
    parser.add_argument("--tolerance", type=float, default=3)
    parser.add_argument("--judge", choices=("per-window", "aggregate"), default="per-window")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--exit", type=int, action="append", default=[])
    parser.add_argument("--factor", type=float, default=1.0)
    parser.add_argument("--plus-us", type=float, default=0.0)
    parser.add_argument("--alone", action="append", default=[])
    parser.add_argument("--beside", action="append", default=[])
    parser.add_argument("--batch", action="append", default=[])
    args = parser.parse_intermixed_args(argv)
    needs = {"split": 2, "cap": 1, "ratio": 2, "latency": 0}[args.kind]
    if len(args.files) < needs or (args.kind != "latency" and args.kind != "split" and len(args.files) != needs):
        parser.error("%s needs %d file(s)" % (args.kind, needs))
    if args.kind in ("cap", "ratio") and len(args.target) != 1:
        parser.error("%s needs one --target" % args.kind)
    verdict, lines = {"split": split, "cap": cap, "ratio": ratio, "latency": latency}[args.kind](args)
    ok = verdict.pop("ok")
    print("true" if ok else "false")
    print(json.dumps(verdict, separators=(",", ":")))
    for line in lines:
        print("  " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
