#!/usr/bin/env python3
"""Self-test of the fake API server: valid objects are accepted, each kind of violation is
rejected with the right code and message, and the HTTPS server behaves (auth, 409, watch 410,
faults). Usage: fake_apiserver_selftest.py --reference DIR (exit 77 when DIR is absent)."""
import argparse
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import k8s_schema  # noqa: E402

REFERENCE = None

SLICE = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "metadata": {"name": "node-1-gpu", "labels": {"fgpu.io/node": "node-1"}},
    "spec": {
        "driver": "gpu.fgpu.io", "nodeName": "node-1",
        "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
        "devices": [{
            "name": "gpu-0", "allowMultipleAllocations": True,
            "attributes": {"model": {"string": "H100"}, "index": {"int": 0},
                           "driverVersion": {"version": "560.35.3"}, "fgpu.io/mig": {"bool": False}},
            "capacity": {
                "memory": {"value": "80Gi", "requestPolicy": {
                    "default": "1Gi", "validRange": {"min": "1Gi", "max": "80Gi", "step": "1Gi"}}},
                "compute": {"value": 100, "requestPolicy": {"default": "10", "validValues": ["10", "25", "50", "100"]}},
            },
        }],
    },
}
# KEP-4815 partitionable devices: one slice carries the pool's counter sets (no devices), another
# the devices that consume them.
COUNTER_SLICE = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "metadata": {"name": "node-1-gpu-counters"},
    "spec": {
        "driver": "gpu.fgpu.io", "nodeName": "node-1",
        "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 2},
        "sharedCounters": [
            {"name": "gpu-0-counters", "counters": {"memory": {"value": "80Gi"}, "multiprocessors": {"value": 132}}},
            {"name": "gpu-1-counters", "counters": {"memory": {"value": "80Gi"}, "multiprocessors": {"value": "0"}}},
        ],
    },
}
PARTITION_SLICE = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
    "metadata": {"name": "node-1-gpu-partitions"},
    "spec": {
        "driver": "gpu.fgpu.io", "nodeName": "node-1",
        "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 2},
        "devices": [
            {"name": "gpu-0-mig-1g", "consumesCounters": [
                {"counterSet": "gpu-0-counters", "counters": {"memory": {"value": "10Gi"},
                                                              "multiprocessors": {"value": 16}}}]},
            {"name": "gpu-0-full", "consumesCounters": [
                {"counterSet": "gpu-0-counters", "counters": {"memory": {"value": "80Gi"}}},
                {"counterSet": "gpu-1-counters", "counters": {}}]},
        ],
    },
}
CLAIM = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "claim-1", "namespace": "team-a"},
    "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "gpu.fgpu.io", "allocationMode": "ExactCount", "count": 1,
        "capacity": {"requests": {"memory": "10Gi", "compute": "25"}}}}]}},
}
DEVICE_CLASS = {
    "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.fgpu.io"},
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.fgpu.io"'}}]},
}
POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "trainer", "namespace": "team-a", "creationTimestamp": None},
    "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-10g"}],
             "containers": [{"name": "main", "image": "cuda:12", "resources": {"claims": [{"name": "gpu"}],
                                                                              "limits": {"cpu": "2"}}}]},
}
KINDS = {
    "ResourceSlice": ("io.k8s.api.resource.v1.ResourceSlice", False),
    "ResourceClaim": ("io.k8s.api.resource.v1.ResourceClaim", True),
    "DeviceClass": ("io.k8s.api.resource.v1.DeviceClass", False),
    "Pod": ("io.k8s.api.core.v1.Pod", True),
}


def edited(obj, edit):
    o = json.loads(json.dumps(obj))
    edit(o)
    return o


class Validation(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.v = k8s_schema.SchemaValidator(k8s_schema.load_schemas(REFERENCE))

    def check(self, obj):
        schema, namespaced = KINDS[obj["kind"]]
        k8s_schema.validate(self.v, obj, obj["kind"], schema, namespaced)

    def invalid(self, obj, field, text):
        with self.assertRaises(k8s_schema.Invalid) as cm:
            self.check(obj)
        self.assertTrue(any(f == field and text in m for f, m in cm.exception.causes),
                        f"want {field}: {text}; got {cm.exception.causes}")

    def bad_decode(self, obj, text):
        with self.assertRaises(k8s_schema.DecodeError) as cm:
            self.check(obj)
        self.assertIn(text, str(cm.exception))

    def test_valid_objects_are_accepted(self):
        for obj in (SLICE, CLAIM, DEVICE_CLASS, POD):
            self.check(obj)

    def test_schema_violations(self):
        self.invalid(edited(SLICE, lambda o: o["spec"]["pool"].pop("generation")), "spec.pool.generation",
                     "Required value")
        self.bad_decode(edited(SLICE, lambda o: o["spec"].update(gpus=8)), 'unknown field "spec.gpus"')
        self.bad_decode(edited(SLICE, lambda o: o["spec"]["pool"].update(generation="1")), "expected integer")
        self.bad_decode(edited(SLICE, lambda o: o["spec"]["pool"].update(generation=1.5)), "expected integer")
        self.bad_decode(edited(SLICE, lambda o: o["spec"]["devices"][0]["attributes"]["index"].update(int=2**63)),
                        "int64 range")
        self.bad_decode(edited(POD, lambda o: o["spec"].update(priority=2**31)), "int32 range")
        self.bad_decode(edited(POD, lambda o: o["metadata"].update(creationTimestamp="yesterday")), "RFC 3339")
        self.bad_decode(edited(SLICE, lambda o: o["spec"]["devices"][0]["capacity"]["memory"].update(value=True)),
                        "matches 0 of")
        self.bad_decode(edited(SLICE, lambda o: o["spec"]["devices"][0]["capacity"]["memory"].update(value="80GB")),
                        "quantities must match")
        self.invalid(edited(POD, lambda o: o["metadata"].update(finalizers=["a", "a"])), "metadata.finalizers[1]",
                     "Duplicate value")
        self.invalid(edited(POD, lambda o: o["spec"]["containers"].append({"name": "main"})), "spec.containers[1]",
                     "Duplicate value")
        # dangling $ref (Volume): any object, but still an object
        self.check(edited(POD, lambda o: o["spec"].update(volumes=[{"name": "x", "anything": {"goes": 1}}])))
        self.bad_decode(edited(POD, lambda o: o["spec"].update(volumes=["x"])), "expected an object")

    def test_semantic_rules(self):
        self.invalid(edited(SLICE, lambda o: o["metadata"].update(name="Node_1")), "metadata.name", "RFC 1123 subdomain")
        self.invalid(edited(SLICE, lambda o: o["spec"].update(allNodes=True)), "spec", "exactly one of `nodeName`")
        self.invalid(edited(SLICE, lambda o: o["spec"].pop("nodeName")), "spec", "exactly one of `nodeName`")
        self.invalid(edited(SLICE, lambda o: o["spec"].update(driver="GPU_driver")), "spec.driver", "subdomain")
        self.invalid(edited(SLICE, lambda o: o["spec"]["pool"].update(name="")), "spec.pool.name", "Required")
        self.invalid(edited(SLICE, lambda o: o["spec"].update(devices=[dict(o["spec"]["devices"][0], name=f"d{i}")
                                                                        for i in range(129)])),
                     "spec.devices", "at most 128")
        self.invalid(edited(SLICE, lambda o: o["spec"]["devices"].append(o["spec"]["devices"][0])),
                     "spec.devices[1].name", "Duplicate value")
        self.invalid(edited(SLICE, lambda o: o["spec"]["devices"][0].update(name="gpu.0")), "spec.devices[0].name",
                     "RFC 1123 label")
        self.invalid(edited(SLICE, lambda o: o["spec"]["devices"][0].pop("allowMultipleAllocations")),
                     "spec.devices[0].capacity[memory].requestPolicy", "allowMultipleAllocations")
        cap = "spec.devices[0].capacity[compute].requestPolicy"
        self.invalid(edited(SLICE, lambda o: o["spec"]["devices"][0]["capacity"]["compute"]["requestPolicy"].update(
            validRange={"min": "1"})), cap, "at most one of")
        self.invalid(edited(SLICE, lambda o: o["spec"]["devices"][0]["capacity"]["compute"]["requestPolicy"].pop(
            "default")), cap + ".default", "Required value")
        self.invalid(edited(SLICE, lambda o: o["spec"]["devices"][0]["capacity"]["compute"]["requestPolicy"].update(
            default="30")), cap + ".default", "one of validValues")
        self.invalid(edited(SLICE, lambda o: o["spec"]["devices"][0]["capacity"]["compute"]["requestPolicy"].update(
            validValues=["50", "10", "100"])), cap + ".validValues", "sorted")
        self.invalid(edited(SLICE, lambda o: o["spec"]["devices"][0]["capacity"]["compute"]["requestPolicy"].update(
            validValues=[str(i) for i in range(10, 121, 10)])), cap + ".validValues", "at most 10")
        mem = "spec.devices[0].capacity[memory].requestPolicy.default"
        self.invalid(edited(SLICE, lambda o: o["spec"]["devices"][0]["capacity"]["memory"]["requestPolicy"].update(
            default="512Mi")), mem, "within validRange")
        self.invalid(edited(SLICE, lambda o: o["spec"]["devices"][0]["capacity"]["memory"]["requestPolicy"].update(
            default="1536Mi")), mem, "multiple of step")
        self.invalid(edited(SLICE, lambda o: o["spec"]["devices"][0]["attributes"]["model"].update(int=1)),
                     "spec.devices[0].attributes[model]", "exactly one value")
        self.invalid(edited(SLICE, lambda o: o["spec"]["devices"][0]["attributes"].update(x={})),
                     "spec.devices[0].attributes[x]", "exactly one value")
        self.invalid(edited(CLAIM, lambda o: o["spec"]["devices"]["requests"][0]["exactly"].update(
            allocationMode="Some")), "spec.devices.requests[0].exactly.allocationMode", "Unsupported value")
        self.invalid(edited(DEVICE_CLASS, lambda o: o["spec"]["selectors"][0]["cel"].update(expression=" ")),
                     "spec.selectors[0].cel.expression", "Required value")
        self.invalid(edited(POD, lambda o: o["spec"]["resourceClaims"][0].update(resourceClaimName="c")),
                     "spec.resourceClaims[0]", "must specify one of")
        self.invalid(edited(POD, lambda o: o["spec"]["containers"][0]["resources"]["claims"][0].update(name="tpu")),
                     "spec.containers[0].resources.claims[0].name", "Not found")

    def test_partitionable_devices(self):
        """KEP-4815 rules on sharedCounters and consumesCounters (README: the schema cannot say them)."""
        self.check(COUNTER_SLICE)
        self.check(PARTITION_SLICE)
        self.invalid(edited(COUNTER_SLICE, lambda o: o["spec"].update(devices=PARTITION_SLICE["spec"]["devices"])),
                     "spec", "only one of `devices` and `sharedCounters`")
        # ResourceSliceSpec.sharedCounters: at most 8, names DNS labels unique in the slice
        sets = "spec.sharedCounters"
        self.invalid(edited(COUNTER_SLICE, lambda o: o["spec"].update(sharedCounters=[
            {"name": f"cs-{i}", "counters": {"memory": {"value": "1Gi"}}} for i in range(9)])),
                     sets, "Too many: 9: must have at most 8 items")
        self.check(edited(COUNTER_SLICE, lambda o: o["spec"].update(sharedCounters=[
            {"name": f"cs-{i}", "counters": {"memory": {"value": "1Gi"}}} for i in range(8)])))
        self.invalid(edited(COUNTER_SLICE, lambda o: o["spec"]["sharedCounters"][1].update(name="gpu-0-counters")),
                     sets + "[1].name", 'Duplicate value: "gpu-0-counters"')
        self.invalid(edited(COUNTER_SLICE, lambda o: o["spec"]["sharedCounters"][0].update(name="GPU_0")),
                     sets + "[0].name", "RFC 1123 label")
        self.invalid(edited(COUNTER_SLICE, lambda o: o["spec"]["sharedCounters"][0].update(name="")),
                     sets + "[0].name", "Required value")
        self.invalid(edited(COUNTER_SLICE, lambda o: o["spec"]["sharedCounters"][0].pop("name")),
                     sets + "[0].name", "Required value")
        # CounterSet.counters: required, non-empty, at most 32, names DNS labels, values Quantities >= 0
        self.invalid(edited(COUNTER_SLICE, lambda o: o["spec"]["sharedCounters"][0].pop("counters")),
                     sets + "[0].counters", "Required value")
        self.invalid(edited(COUNTER_SLICE, lambda o: o["spec"]["sharedCounters"][0].update(counters={})),
                     sets + "[0].counters", "Required value")
        self.invalid(edited(COUNTER_SLICE, lambda o: o["spec"]["sharedCounters"][0].update(
            counters={f"c{i}": {"value": "1"} for i in range(33)})), sets + "[0].counters", "Too many: 33")
        self.check(edited(COUNTER_SLICE, lambda o: o["spec"]["sharedCounters"][0].update(
            counters={f"c{i}": {"value": "1"} for i in range(32)})))
        self.invalid(edited(COUNTER_SLICE, lambda o: o["spec"]["sharedCounters"][0]["counters"].update(
            {"Memory_MiB": {"value": "1"}})), sets + "[0].counters[Memory_MiB]", "RFC 1123 label")
        self.invalid(edited(COUNTER_SLICE, lambda o: o["spec"]["sharedCounters"][0]["counters"]["memory"].update(
            value="-1Gi")), sets + "[0].counters[memory].value", "must be greater than or equal to 0")
        self.invalid(edited(COUNTER_SLICE, lambda o: o["spec"]["sharedCounters"][0]["counters"]["memory"].pop(
            "value")), sets + "[0].counters[memory].value", "Required value")
        self.bad_decode(edited(COUNTER_SLICE, lambda o: o["spec"]["sharedCounters"][0]["counters"]["memory"].update(
            value="80GB")), "quantities must match")
        # Device.consumesCounters: at most 2, one per counter set (a DNS label)
        cc = "spec.devices[1].consumesCounters"
        self.invalid(edited(PARTITION_SLICE, lambda o: o["spec"]["devices"][1]["consumesCounters"].append(
            {"counterSet": "gpu-2-counters", "counters": {}})), cc, "Too many: 3: must have at most 2 items")
        self.invalid(edited(PARTITION_SLICE, lambda o: o["spec"]["devices"][1]["consumesCounters"][1].update(
            counterSet="gpu-0-counters")), cc + "[1].counterSet", 'Duplicate value: "gpu-0-counters"')
        self.invalid(edited(PARTITION_SLICE, lambda o: o["spec"]["devices"][1]["consumesCounters"][0].update(
            counterSet="gpu.0")), cc + "[0].counterSet", "RFC 1123 label")
        self.invalid(edited(PARTITION_SLICE, lambda o: o["spec"]["devices"][1]["consumesCounters"][0].update(
            counterSet="")), cc + "[0].counterSet", "Required value")
        self.invalid(edited(PARTITION_SLICE, lambda o: o["spec"]["devices"][1]["consumesCounters"][0].pop(
            "counterSet")), cc + "[0].counterSet", "Required value")
        # DeviceCounterConsumption.counters: at most 32, names DNS labels, values Quantities >= 0
        self.invalid(edited(PARTITION_SLICE, lambda o: o["spec"]["devices"][1]["consumesCounters"][0].update(
            counters={f"c{i}": {"value": "1"} for i in range(33)})), cc + "[0].counters", "Too many: 33")
        self.invalid(edited(PARTITION_SLICE, lambda o: o["spec"]["devices"][1]["consumesCounters"][0]["counters"]
                            .update({"sm_count": {"value": 1}})), cc + "[0].counters[sm_count]", "RFC 1123 label")
        self.invalid(edited(PARTITION_SLICE, lambda o: o["spec"]["devices"][1]["consumesCounters"][0]["counters"]
                            ["memory"].update(value=-1)), cc + "[0].counters[memory].value",
                     "must be greater than or equal to 0")
        # ResourceSliceSpec.devices: only 64 when any device consumes counters
        self.invalid(edited(PARTITION_SLICE, lambda o: o["spec"].update(devices=[
            dict(o["spec"]["devices"][0], name=f"d{i}") for i in range(65)])), "spec.devices", "at most 64")
        self.check(edited(PARTITION_SLICE, lambda o: o["spec"].update(devices=[
            dict(o["spec"]["devices"][0], name=f"d{i}") for i in range(64)])))

    def test_counter_set_names_unique_in_pool(self):
        """ResourceSliceSpec.sharedCounters: names unique in the pool (driver, pool name, generation)."""
        other = edited(COUNTER_SLICE, lambda o: o["metadata"].update(name="node-1-gpu-counters-2") or
                       o["spec"]["sharedCounters"].__setitem__(0, {"name": "gpu-2-counters",
                                                                   "counters": {"memory": {"value": "1Gi"}}}))
        errs = k8s_schema.pool_counter_set_errors(COUNTER_SLICE, [PARTITION_SLICE, other])
        self.assertEqual([f for f, _ in errs], ["spec.sharedCounters[1].name"], errs)
        self.assertIn('Duplicate value: "gpu-1-counters"', errs[0][1])
        self.assertEqual(k8s_schema.pool_counter_set_errors(COUNTER_SLICE, [PARTITION_SLICE]), [])
        for elsewhere in (lambda o: o["spec"].update(driver="other.fgpu.io"),
                          lambda o: o["spec"]["pool"].update(name="node-2"),
                          lambda o: o["spec"]["pool"].update(generation=2)):  # a stale or newer generation
            self.assertEqual(k8s_schema.pool_counter_set_errors(COUNTER_SLICE, [edited(other, elsewhere)]), [])

    def test_quantity_grammar(self):
        for good in ("1", "1.5", ".5", "5.", "1Gi", "100m", "1e3", "2E-2", "+1k", 3, 2.5):
            self.assertIsNotNone(k8s_schema.parse_quantity(good), good)
        for bad in ("1GB", "Gi", "1 Gi", "1.2.3", "", "1ki", True):
            self.assertIsNone(k8s_schema.parse_quantity(bad), bad)
        self.assertEqual(k8s_schema.parse_quantity("1Gi"), 2**30)


class Server(unittest.TestCase):
    """The HTTPS server end to end, with its own throwaway PKI."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="fake-apiserver-selftest-")
        d = cls.dir
        run = lambda *a: subprocess.run(a, check=True, capture_output=True, cwd=d)  # noqa: E731
        run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days",
            "1", "-subj", "/CN=ca", "-keyout", "ca.key", "-out", "ca.crt")
        run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj",
            "/CN=localhost", "-keyout", "s.key", "-out", "s.csr")
        with open(os.path.join(d, "ext"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1\n")
        run("openssl", "x509", "-req", "-in", "s.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "1", "-out", "s.crt", "-extfile", "ext")
        with open(os.path.join(d, "token"), "w") as f:
            f.write("tok\n")
        cls.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "fake_apiserver.py"), "--cert", os.path.join(d, "s.crt"), "--key",
             os.path.join(d, "s.key"), "--token-file", os.path.join(d, "token"), "--reference", REFERENCE,
             "--port", "0", "--bookmark-interval", "0.2"], stdout=subprocess.PIPE, text=True)
        ports = json.loads(cls.proc.stdout.readline())
        cls.base = f"https://127.0.0.1:{ports['port']}"
        cls.control = f"http://127.0.0.1:{ports['control_port']}"
        cls.ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.crt"))

    @classmethod
    def tearDownClass(cls):
        cls.proc.terminate()
        cls.proc.wait()
        shutil.rmtree(cls.dir)

    def call(self, method, path, body=None, token="tok", ctype="application/json", base=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request((base or self.base) + path, data=data, method=method)
        if token:
            req.add_header("Authorization", "Bearer " + token)
        if data is not None:
            req.add_header("Content-Type", ctype)
        try:
            with urllib.request.urlopen(req, context=self.ctx if base is None else None, timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def test_round_trip_auth_conflict_watch_and_faults(self):
        self.call("POST", "/reset", {}, base=self.control)
        code, _ = self.call("GET", "/apis/resource.k8s.io/v1/resourceslices", token="wrong")
        self.assertEqual(code, 401)
        code, body = self.call("POST", "/apis/resource.k8s.io/v1/resourceslices", SLICE)
        self.assertEqual(code, 201, body)
        created = json.loads(body)
        code, body = self.call("POST", "/apis/resource.k8s.io/v1/resourceslices", SLICE)
        self.assertEqual((code, json.loads(body)["reason"]), (409, "AlreadyExists"))
        code, body = self.call("POST", "/apis/resource.k8s.io/v1/resourceslices", "{not json")
        self.assertEqual(code, 400)
        bad = edited(SLICE, lambda o: o["metadata"].update(name="other") or o["spec"].update(allNodes=True))
        code, body = self.call("POST", "/apis/resource.k8s.io/v1/resourceslices", bad)
        status = json.loads(body)
        self.assertEqual((code, status["kind"], status["apiVersion"], status["status"], status["reason"],
                          status["code"]), (422, "Status", "v1", "Failure", "Invalid", 422))
        updated = edited(created, lambda o: o["spec"]["pool"].update(generation=2))
        path = "/apis/resource.k8s.io/v1/resourceslices/node-1-gpu"
        self.assertEqual(self.call("PUT", path, updated)[0], 200)
        self.assertEqual(self.call("PUT", path, updated)[0], 409)  # the old resourceVersion
        code, body = self.call("PATCH", path, {"spec": {"pool": {"generation": 3}}},
                               ctype="application/merge-patch+json")
        self.assertEqual(code, 200, body)
        self.assertEqual(self.call("PATCH", path, {"spec": {"nodeName": None}},
                                   ctype="application/merge-patch+json")[0], 422)
        # /status is served for claims, not slices
        self.assertEqual(self.call("PUT", path + "/status", updated)[0], 404)
        code, body = self.call("POST", "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims", CLAIM)
        self.assertEqual(code, 201, body)
        claim = json.loads(body)
        claim["status"] = {"allocation": {"devices": {"results": [{"request": "gpu", "driver": "gpu.fgpu.io",
                                                                   "pool": "node-1", "device": "gpu-0"}]}}}
        code, body = self.call("PUT", "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims/claim-1/status",
                               claim)
        self.assertEqual(code, 200, body)
        self.assertEqual(json.loads(body)["metadata"]["generation"], 1)  # status does not bump generation
        # watch from a compacted version: one ERROR event with 410
        self.call("POST", "/compact", {}, base=self.control)
        code, body = self.call("GET", "/apis/resource.k8s.io/v1/resourceslices?watch=1&resourceVersion=1")
        event = json.loads(body.splitlines()[0])
        self.assertEqual((event["type"], event["object"]["code"]), ("ERROR", 410))
        # faults
        self.call("POST", "/faults", {"method": "GET", "path_prefix": "/api/v1/nodes", "count": 1,
                                      "status": 429, "retry_after": 2}, base=self.control)
        self.assertEqual(self.call("GET", "/api/v1/nodes")[0], 429)
        self.assertEqual(self.call("GET", "/api/v1/nodes")[0], 200)
        dump = json.loads(self.call("GET", "/dump", base=self.control)[1])
        self.assertEqual(sorted(o["kind"] for o in dump["objects"]), ["ResourceClaim", "ResourceSlice"])

    def test_counter_set_names_unique_in_pool(self):
        self.call("POST", "/reset", {}, base=self.control)
        slices = "/apis/resource.k8s.io/v1/resourceslices"
        for obj in (COUNTER_SLICE, PARTITION_SLICE):
            code, body = self.call("POST", slices, obj)
            self.assertEqual(code, 201, body)
        # create: a second slice of the pool reusing a counter set name
        dup = edited(COUNTER_SLICE, lambda o: o["metadata"].update(name="node-1-gpu-counters-2") or
                     o["spec"].update(sharedCounters=[{"name": "gpu-2-counters", "counters": {"memory": {"value": "1"}}},
                                                      {"name": "gpu-0-counters", "counters": {"memory": {"value": "1"}}}]))
        code, body = self.call("POST", slices, dup)
        status = json.loads(body)
        self.assertEqual((code, status["reason"]), (422, "Invalid"), body)
        self.assertTrue(any(c["field"] == "spec.sharedCounters[1].name" and "Duplicate value" in c["message"]
                            for c in status["details"]["causes"]), body)
        # the same names in another pool, or in the pool's next generation, are fine
        code, body = self.call("POST", slices, edited(dup, lambda o: o["spec"]["pool"].update(name="node-2") or
                                                     o["spec"].update(nodeName="node-2")))
        self.assertEqual(code, 201, body)
        code, body = self.call("POST", slices, edited(dup, lambda o: o["metadata"].update(name="next-gen") or
                                                     o["spec"]["pool"].update(generation=2)))
        self.assertEqual(code, 201, body)
        # update: a slice does not collide with its own stored version, only with the others
        path = slices + "/node-1-gpu-counters"
        stored = json.loads(self.call("GET", path)[1])
        code, body = self.call("PUT", path, edited(stored, lambda o: o["spec"]["sharedCounters"][1]["counters"]
                                                    ["memory"].update(value="40Gi")))
        self.assertEqual(code, 200, body)
        code, body = self.call("POST", slices, edited(dup, lambda o: o["metadata"].update(name="node-1-gpu-counters-3") or
                                                     o["spec"]["sharedCounters"].pop()))
        self.assertEqual(code, 201, body)
        code, body = self.call("PATCH", path, {"spec": {"sharedCounters": [
            {"name": "gpu-2-counters", "counters": {"memory": {"value": "1"}}}]}},
            ctype="application/merge-patch+json")
        status = json.loads(body)
        self.assertEqual((code, status["reason"]), (422, "Invalid"), body)
        self.assertTrue(any(c["field"] == "spec.sharedCounters[0].name" and "Duplicate value" in c["message"]
                            for c in status["details"]["causes"]), body)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--reference", required=True)
    args, rest = p.parse_known_args()
    if not os.path.exists(os.path.join(args.reference, "resource.k8s.io-v1.schema.json")):
        print(f"SKIP: reference schemas absent at {args.reference}")
        sys.exit(77)
    REFERENCE = args.reference
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
