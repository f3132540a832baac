#!/usr/bin/env python3
"""The simulated driver's answers beside a real GPU's: how faithful the simulator is.

    side_by_side.py REAL_PREFIX SIM_PREFIX

Reads the fgpu-probe outputs REAL_PREFIX{info,attributes,symbols}.out (the real driver) and
SIM_PREFIX{...}.out (the simulated one, same probe, same device model), and prints:
  - every `info` field: real, simulated, and whether they agree;
  - every device attribute whose value (or error) differs, and how many agree;
  - the exported functions one driver has and the other lacks;
  - every cuGetProcAddress answer (name, version, flags) that differs: found or not, and which
    exported variant it is.
Its last line is one JSON object, {"check": "side_by_side", "ok": true, ...counts}: a
measurement, not a verdict (ok false only when an input is missing or unreadable).
"""
import json
import sys

# Fields that name this machine or this moment, not the driver's model of the device.
VOLATILE = {"uuid", "lookup", "nvml.processes", "mem_get_info.free", "nvml.memory.free", "nvml.memory.used",
            "nvml.utilization_gpu"}


def events(path, name):
    with open(path) as f:
        lines = [json.loads(line) for line in f if line.startswith("{")]
    return [line for line in lines if line.get("event") == name]


def flatten(value, prefix=""):
    if isinstance(value, dict):
        out = {}
        for key, inner in value.items():
            out.update(flatten(inner, f"{prefix}.{key}" if prefix else key))
        return out
    return {prefix: value}


def compare_info(real_path, sim_path, say):
    real = flatten(events(real_path, "info")[-1])
    sim = flatten(events(sim_path, "info")[-1])
    real.pop("event", None)
    sim.pop("event", None)
    same = differs = 0
    say("info                              real | simulated")
    for key in sorted(set(real) | set(sim)):
        a, b = real.get(key, "-"), sim.get(key, "-")
        if key in VOLATILE:
            mark = "(this machine)"
        elif a == b:
            mark, same = "same", same + 1
        else:
            mark, differs = "DIFFERS", differs + 1
        say(f"  {key:30} {json.dumps(a)} | {json.dumps(b)}  {mark}")
    return {"info_same": same, "info_differs": differs}


def compare_attributes(real_path, sim_path, say):
    def table(path):
        return {line["name"]: (line["code"], line.get("value")) for line in events(path, "attribute")}

    real, sim = table(real_path), table(sim_path)
    same, differing = 0, []
    for name in sorted(set(real) | set(sim)):
        if real.get(name) == sim.get(name):
            same += 1
        else:
            differing.append(name)
    say(f"attributes: {same} agree, {len(differing)} differ (value, or code when the driver refuses one)")
    for name in differing:
        a, b = real.get(name, ("-", None)), sim.get(name, ("-", None))
        say(f"  {name:58} {show_attribute(a)} | {show_attribute(b)}")
    return {"attributes_same": same, "attributes_differ": len(differing)}


def show_attribute(answer):
    code, value = answer
    return str(value) if code == 0 else f"error {code}"


def compare_symbols(real_path, sim_path, say):
    real_exports = {e["name"]: e["present"] for e in events(real_path, "export")}
    sim_exports = {e["name"]: e["present"] for e in events(sim_path, "export")}
    missing_in_sim = sorted(n for n, present in real_exports.items() if present and not sim_exports.get(n))
    missing_in_real = sorted(n for n, present in sim_exports.items() if present and not real_exports.get(n))
    say(f"exports: {sum(real_exports.values())} real, {sum(sim_exports.values())} simulated")
    for name in missing_in_sim:
        say(f"  only the real driver exports {name}")
    for name in missing_in_real:
        say(f"  only the simulator exports {name}")

    def lookups(path):
        return {(e["name"], e["version"], e["flags"]): (e["code"], e["found"], e.get("same_as"))
                for e in events(path, "symbol")}

    real, sim = lookups(real_path), lookups(sim_path)
    differing = sorted(key for key in set(real) | set(sim) if real.get(key) != sim.get(key))
    say(f"cuGetProcAddress: {len(real)} lookups, {len(differing)} answered differently")
    for key in differing:
        say(f"  {key[0]}@{key[1]}/flags {key[2]}: {real.get(key)} | {sim.get(key)}")
    return {"exports_only_real": len(missing_in_sim), "exports_only_sim": len(missing_in_real),
            "lookups": len(real), "lookups_differ": len(differing)}


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    real_prefix, sim_prefix = argv[1], argv[2]
    summary = {"check": "side_by_side", "ok": True}
    for part, compare in (("info", compare_info), ("attributes", compare_attributes),
                          ("symbols", compare_symbols)):
        try:
            summary.update(compare(f"{real_prefix}{part}.out", f"{sim_prefix}{part}.out", print))
        except (OSError, ValueError, KeyError, IndexError) as error:
            print(f"{part}: cannot compare ({type(error).__name__}: {error})")
            summary["ok"] = False
            summary.setdefault("unreadable", []).append(part)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
