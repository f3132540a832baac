#!/usr/bin/env python3
"""scripts/gpu-check.d/side_by_side.py on made-up probe outputs: what agrees, what differs."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "gpu-check.d"))
import side_by_side  # noqa: E402


def write(directory, name, lines):
    with open(os.path.join(directory, name), "w") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")


def info(name, sm_count, uuid):
    return {"event": "info", "lookup": "procaddress_v2", "name": name, "uuid": uuid, "sm_count": sm_count,
            "mem_get_info": {"free": 1, "total": 80}, "nvml": {"available": True, "processes": [{"pid": 7}]}}


class SideBySideTest(unittest.TestCase):
    def run_tool(self, real, sim):
        with tempfile.TemporaryDirectory() as directory:
            for prefix, outputs in (("real_", real), ("sim_", sim)):
                for part, lines in outputs.items():
                    write(directory, f"{prefix}{part}.out", lines)
            out = io.StringIO()
            with redirect_stdout(out):
                status = side_by_side.main(["side_by_side.py", f"{directory}/real_", f"{directory}/sim_"])
            self.assertEqual(status, 0)
            text = out.getvalue()
            return text, json.loads(text.strip().splitlines()[-1])

    def outputs(self, sm_count=132, uuid="GPU-a", clock=(0, 1980), cuInit=True, lookup_same_as="cuInit"):
        return {
            "info": [{"event": "gpu_check_step"}, info("NVIDIA H100 80GB HBM3", sm_count, uuid)],
            "attributes": [
                {"event": "attribute", "name": "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT", "id": 16, "code": 0,
                 "value": sm_count},
                {"event": "attribute", "name": "CU_DEVICE_ATTRIBUTE_CLOCK_RATE", "id": 13, "code": clock[0],
                 "value": clock[1] if clock[0] == 0 else None},
            ],
            "symbols": [
                {"event": "export", "name": "cuInit", "base": "cuInit", "present": cuInit},
                {"event": "export", "name": "cuMemAlloc_v2", "base": "cuMemAlloc", "present": True},
                {"event": "symbol", "name": "cuInit", "version": 13000, "flags": 0, "code": 0, "found": True,
                 "same_as": lookup_same_as},
            ],
        }

    def test_identical_drivers_agree_on_everything_but_this_machine(self):
        text, summary = self.run_tool(self.outputs(uuid="GPU-a"), self.outputs(uuid="GPU-b"))
        self.assertTrue(summary["ok"])
        self.assertEqual(summary["info_differs"], 0)
        self.assertEqual(summary["attributes_differ"], 0)
        self.assertEqual(summary["exports_only_real"], 0)
        self.assertEqual(summary["lookups_differ"], 0)
        self.assertIn("(this machine)", text)  # the UUIDs differ, as they must

    def test_each_kind_of_difference_is_counted_and_named(self):
        text, summary = self.run_tool(self.outputs(),
                                      self.outputs(sm_count=114, clock=(1, None), cuInit=False,
                                                   lookup_same_as=None))
        self.assertEqual(summary["info_differs"], 1)  # sm_count
        self.assertEqual(summary["attributes_differ"], 2)
        self.assertIn("CU_DEVICE_ATTRIBUTE_CLOCK_RATE", text)
        self.assertIn("1980 | error 1", text)
        self.assertEqual(summary["exports_only_real"], 1)
        self.assertIn("only the real driver exports cuInit", text)
        self.assertEqual(summary["lookups_differ"], 1)

    def test_a_missing_output_is_reported_not_raised(self):
        real = self.outputs()
        sim = self.outputs()
        del sim["attributes"]
        text, summary = self.run_tool(real, sim)
        self.assertFalse(summary["ok"])
        self.assertEqual(summary["unreadable"], ["attributes"])
        self.assertIn("attributes: cannot compare", text)


if __name__ == "__main__":
    unittest.main()
