#!/usr/bin/env python3
"""Checks the plain manifests of deploy/kubernetes without a cluster (docs/kubernetes.md).

Every YAML document of the directory is loaded (PyYAML) and:
  - DeviceClass, ResourceClaimTemplate, ResourceClaim, ResourceSlice (resource.k8s.io/v1) and Pod
    (v1) are validated against the OpenAPI schemas of the reference kit
    (<repo>/../shared/reference/kubernetes, or --reference DIR): required fields, unknown fields,
    JSON types and formats, oneOf (Quantity, IntOrString), list-map keys and sets; a $ref the kit
    left dangling stands for any object (the kit's README, "How to use these in tests");
  - a DaemonSet's pod template is validated as a Pod (apps/v1 is not in the kit) and its envelope
    by hand; Namespace, ServiceAccount, ClusterRole and ClusterRoleBinding are checked by hand;
  - fgpu's own rules: gpu.fgpu.io opaque parameters as src/k8s/dra/claim.cc parses them, claims
    asking only for the published capacities (memory, compute), a hostPath mounted at the same
    path inside (the kubelet and the runtime are handed these paths), and references between the
    documents (deviceClassName, resourceClaimTemplateName, container claims, serviceAccountName).

Exit 0: all valid; 1: problems, one "file:doc:path: message" line each; 77: skipped (no reference
kit, or no PyYAML), as ctest's SKIP_RETURN_CODE.
"""
import argparse
import glob
import json
import os
import re
import sys

SKIP = 77
REF_PREFIX = "#/components/schemas/"
DRIVER = "gpu.fgpu.io"

# kind -> (apiVersion, schema file, schema name)
SCHEMA_KINDS = {
    "DeviceClass": ("resource.k8s.io/v1", "resource.k8s.io-v1.schema.json", "io.k8s.api.resource.v1.DeviceClass"),
    "ResourceClaimTemplate": ("resource.k8s.io/v1", "resource.k8s.io-v1.schema.json",
                              "io.k8s.api.resource.v1.ResourceClaimTemplate"),
    "ResourceClaim": ("resource.k8s.io/v1", "resource.k8s.io-v1.schema.json", "io.k8s.api.resource.v1.ResourceClaim"),
    "ResourceSlice": ("resource.k8s.io/v1", "resource.k8s.io-v1.schema.json", "io.k8s.api.resource.v1.ResourceSlice"),
    "Pod": ("v1", "core-v1.schema.json", "io.k8s.api.core.v1.Pod"),
}
# Kinds outside the kit, checked by hand: kind -> (apiVersion, allowed top-level fields, namespaced)
HAND_KINDS = {
    "Namespace": ("v1", {"apiVersion", "kind", "metadata", "spec"}, False),
    "ServiceAccount": ("v1", {"apiVersion", "kind", "metadata", "automountServiceAccountToken", "imagePullSecrets",
                              "secrets"}, True),
    "ClusterRole": ("rbac.authorization.k8s.io/v1", {"apiVersion", "kind", "metadata", "rules", "aggregationRule"},
                    False),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io/v1", {"apiVersion", "kind", "metadata", "roleRef", "subjects"},
                           False),
    "DaemonSet": ("apps/v1", {"apiVersion", "kind", "metadata", "spec"}, True),
}
POLICY_RULE_FIELDS = {"apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs"}
VERBS = {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "*"}
DAEMONSET_SPEC_FIELDS = {"selector", "template", "updateStrategy", "minReadySeconds", "revisionHistoryLimit"}

# Kubernetes' Quantity grammar (k8s.io/apimachinery/pkg/api/resource): sign, digits, suffix.
QUANTITY_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[mkMGTPE]|[eE][+-]?\d+)?$")
DATE_TIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
INT_RANGES = {"int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1)}


class Problems:
    def __init__(self):
        self.lines = []

    def add(self, where, path, message):
        self.lines.append(f"{where}:{path or '<root>'}: {message}")


class Validator:
    """Validates JSON values against the kit's OpenAPI v3 component schemas."""

    def __init__(self, schemas, problems):
        self.schemas = schemas
        self.problems = problems

    def resolve(self, schema):
        """The schema with $ref and single-$ref allOf followed; None for a dangling $ref (any)."""
        seen = 0
        while True:
            if "$ref" in schema:
                name = schema["$ref"][len(REF_PREFIX):] if schema["$ref"].startswith(REF_PREFIX) else schema["$ref"]
                if name not in self.schemas:
                    return None
                schema = self.schemas[name]
            elif "allOf" in schema and len(schema["allOf"]) == 1 and set(schema) <= {"allOf", "default"}:
                schema = schema["allOf"][0]
            else:
                return schema
            seen += 1
            if seen > 64:
                return None

    def type_ok(self, value, expected, fmt):
        if expected == "object":
            return isinstance(value, dict)
        if expected == "array":
            return isinstance(value, list)
        if expected == "string":
            if not isinstance(value, str):
                return False
            if fmt == "date-time":
                return bool(DATE_TIME_RE.match(value))
            return True
        if expected == "boolean":
            return isinstance(value, bool)
        if expected == "integer":
            if isinstance(value, bool) or not isinstance(value, int):
                return False
            low, high = INT_RANGES.get(fmt, (None, None))
            return low is None or low <= value <= high
        if expected == "number":
            return isinstance(value, (int, float)) and not isinstance(value, bool)
        return True

    def validate(self, where, path, value, schema):
        schema = self.resolve(schema)
        if schema is None:
            if not isinstance(value, dict):
                self.problems.add(where, path, f"expected an object, got {type(value).__name__}")
            return
        if "allOf" in schema and "$ref" not in schema and len(schema["allOf"]) > 1:
            for part in schema["allOf"]:
                self.validate(where, path, value, part)
        if "oneOf" in schema:
            matches = 0
            for option in schema["oneOf"]:
                option = self.resolve(option)
                if option is None or self.type_ok(value, option.get("type"), option.get("format")):
                    matches += 1
            if matches != 1:
                kinds = " or ".join(o.get("type", "?") for o in schema["oneOf"])
                self.problems.add(where, path, f"expected {kinds}, got {type(value).__name__}")
                return
        expected = schema.get("type")
        if expected and not self.type_ok(value, expected, schema.get("format")):
            self.problems.add(where, path, f"expected {expected}"
                              + (f" ({schema['format']})" if schema.get("format") else "")
                              + f", got {json.dumps(value)[:60]}")
            return
        if isinstance(value, dict) and (expected == "object" or "properties" in schema):
            properties = schema.get("properties")
            for name in schema.get("required", []):
                if name not in value:
                    self.problems.add(where, path, f"required field '{name}' is missing")
            extra = schema.get("additionalProperties")
            for key, item in value.items():
                child = f"{path}.{key}" if path else key
                if properties is not None and key in properties:
                    self.validate(where, child, item, properties[key])
                elif isinstance(extra, dict):
                    self.validate(where, child, item, extra)
                elif properties is not None and extra is not True:
                    self.problems.add(where, child, "unknown field")
        elif isinstance(value, list) and expected == "array":
            items = schema.get("items", {})
            for index, item in enumerate(value):
                self.validate(where, f"{path}[{index}]", item, items)
            list_type = schema.get("x-kubernetes-list-type")
            if list_type == "map":
                keys = schema.get("x-kubernetes-list-map-keys", [])
                seen = set()
                for index, item in enumerate(value):
                    if isinstance(item, dict):
                        key = tuple(json.dumps(item.get(k), sort_keys=True) for k in keys)
                        if key in seen:
                            self.problems.add(where, f"{path}[{index}]", f"duplicate entry for keys {keys}")
                        seen.add(key)
            elif list_type == "set":
                seen = set()
                for index, item in enumerate(value):
                    key = json.dumps(item, sort_keys=True)
                    if key in seen:
                        self.problems.add(where, f"{path}[{index}]", "duplicate entry in a set")
                    seen.add(key)
        if schema is self.schemas.get("io.k8s.apimachinery.pkg.api.resource.Quantity"):
            if isinstance(value, str) and not QUANTITY_RE.match(value):
                self.problems.add(where, path, f"'{value}' is not a quantity")


def check_slice_parameters(problems, where, path, parameters):
    """gpu.fgpu.io opaque parameters, as ParseSliceParameters (src/k8s/dra/claim.cc) accepts them."""
    if not isinstance(parameters, dict):
        problems.add(where, path, "gpu.fgpu.io parameters must be an object")
        return
    allowed = {
        "apiVersion": lambda v: v == "gpu.fgpu.io/v1alpha1",
        "kind": lambda v: v == "SliceParameters",
        "tier": lambda v: v in ("batch", "standard", "latency"),
        "computeMode": lambda v: v in ("share", "cap"),
        "tenant": lambda v: isinstance(v, str),
        "runAsUser": lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 0x7FFFFFFF,
        "isolation": lambda v: v in ("trusted", "hard"),
    }
    for key, value in parameters.items():
        if key not in allowed:
            problems.add(where, f"{path}.{key}", "unknown gpu.fgpu.io parameter (known: " + ", ".join(allowed) + ")")
        elif not allowed[key](value):
            problems.add(where, f"{path}.{key}", f"invalid value {json.dumps(value)}")


# What a claim's own configuration may set under the plugin's default --claim-parameters
# (src/k8s/dra/claim.h ClaimPolicy); the rest only a DeviceClass may.
CLAIM_MAY_SET = {"apiVersion", "kind", "computeMode"}


def check_opaque_configs(problems, where, path, configs, from_claim=False):
    for index, config in enumerate(configs or []):
        opaque = (config or {}).get("opaque") or {}
        if opaque.get("driver") == DRIVER:
            parameters = opaque.get("parameters")
            check_slice_parameters(problems, where, f"{path}[{index}].opaque.parameters", parameters)
            if from_claim and isinstance(parameters, dict):
                for key in sorted(set(parameters) - CLAIM_MAY_SET):
                    problems.add(where, f"{path}[{index}].opaque.parameters.{key}",
                                 "a claim may not set this with the plugin's default --claim-parameters "
                                 "(computeMode): put it in a DeviceClass")


def check_claim_spec(problems, where, path, spec, classes):
    devices = (spec or {}).get("devices") or {}
    for index, request in enumerate(devices.get("requests") or []):
        exactly = (request or {}).get("exactly")
        if exactly is None:
            continue
        name = exactly.get("deviceClassName")
        if name and classes is not None and name.startswith(DRIVER) and name not in classes:
            problems.add(where, f"{path}.devices.requests[{index}].exactly.deviceClassName",
                         f"DeviceClass {name} is not defined in deploy/kubernetes")
        capacity = ((exactly.get("capacity") or {}).get("requests")) or {}
        for key in capacity:
            if key not in ("memory", "compute"):
                problems.add(where, f"{path}.devices.requests[{index}].exactly.capacity.requests.{key}",
                             "gpu.fgpu.io devices publish only the capacities memory and compute")
    check_opaque_configs(problems, where, f"{path}.devices.config", devices.get("config"), from_claim=True)


def check_pod_spec(problems, where, path, spec, templates, service_accounts, namespace):
    spec = spec or {}
    claims = set()
    for index, claim in enumerate(spec.get("resourceClaims") or []):
        claims.add(claim.get("name"))
        template = claim.get("resourceClaimTemplateName")
        if template and templates is not None and (namespace, template) not in templates:
            problems.add(where, f"{path}.resourceClaims[{index}].resourceClaimTemplateName",
                         f"ResourceClaimTemplate {namespace}/{template} is not defined in deploy/kubernetes")
    account = spec.get("serviceAccountName")
    if account and service_accounts is not None and (namespace, account) not in service_accounts:
        problems.add(where, f"{path}.serviceAccountName", f"ServiceAccount {namespace}/{account} is not defined")
    host_paths = {}
    for volume in spec.get("volumes") or []:
        if isinstance(volume, dict) and isinstance(volume.get("hostPath"), dict):
            host_paths[volume.get("name")] = volume["hostPath"].get("path")
    for group in ("initContainers", "containers"):
        for c_index, container in enumerate(spec.get(group) or []):
            base = f"{path}.{group}[{c_index}]"
            for index, claim in enumerate(((container.get("resources") or {}).get("claims")) or []):
                if claim.get("name") not in claims:
                    problems.add(where, f"{base}.resources.claims[{index}].name",
                                 f"no pod resourceClaims entry is named {claim.get('name')}")
            for index, mount in enumerate(container.get("volumeMounts") or []):
                name = mount.get("name")
                if name in host_paths and mount.get("mountPath") != host_paths[name]:
                    problems.add(where, f"{base}.volumeMounts[{index}].mountPath",
                                 f"hostPath {host_paths[name]} must be mounted at the same path, "
                                 f"not {mount.get('mountPath')}")
            for index, mount in enumerate(container.get("volumeMounts") or []):
                if mount.get("name") not in host_paths and mount.get("name") not in {
                        v.get("name") for v in spec.get("volumes") or []}:
                    problems.add(where, f"{base}.volumeMounts[{index}].name", f"no volume named {mount.get('name')}")


def check_metadata(problems, where, obj, namespaced):
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict) or not metadata.get("name"):
        problems.add(where, "metadata.name", "required")
        return
    if namespaced and not metadata.get("namespace"):
        problems.add(where, "metadata.namespace", "a namespaced object in a manifest should name its namespace")
    if not namespaced and "namespace" in metadata:
        problems.add(where, "metadata.namespace", f"{obj.get('kind')} is cluster-scoped")


def check_by_hand(problems, where, obj):
    kind = obj["kind"]
    api_version, fields, namespaced = HAND_KINDS[kind]
    for key in obj:
        if key not in fields:
            problems.add(where, key, "unknown field")
    check_metadata(problems, where, obj, namespaced)
    if kind == "ClusterRole":
        for index, rule in enumerate(obj.get("rules") or []):
            for key in rule:
                if key not in POLICY_RULE_FIELDS:
                    problems.add(where, f"rules[{index}].{key}", "unknown field")
            if not rule.get("verbs"):
                problems.add(where, f"rules[{index}].verbs", "required")
            for verb in rule.get("verbs") or []:
                if verb not in VERBS:
                    problems.add(where, f"rules[{index}].verbs", f"unknown verb {verb}")
    if kind == "ClusterRoleBinding":
        role = obj.get("roleRef") or {}
        for key in ("apiGroup", "kind", "name"):
            if not role.get(key):
                problems.add(where, f"roleRef.{key}", "required")
    if kind == "DaemonSet":
        spec = obj.get("spec") or {}
        for key in spec:
            if key not in DAEMONSET_SPEC_FIELDS:
                problems.add(where, f"spec.{key}", "unknown field")
        selector = ((spec.get("selector") or {}).get("matchLabels")) or {}
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        if not selector:
            problems.add(where, "spec.selector.matchLabels", "required")
        for key, value in selector.items():
            if labels.get(key) != value:
                problems.add(where, "spec.template.metadata.labels", f"does not match the selector {key}={value}")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", default=os.environ.get(
        "FGPU_K8S_REFERENCE", os.path.join(os.path.dirname(repo), "shared", "reference", "kubernetes")))
    parser.add_argument("--dir", default=here, help="the manifests' directory")
    args = parser.parse_args()

    if not os.path.isdir(args.reference):
        print(f"check_manifests: SKIP: no reference kit at {args.reference}")
        return SKIP
    try:
        import yaml  # noqa: PLC0415 (optional dependency: Debian's python3-yaml)
    except ImportError:
        print("check_manifests: SKIP: PyYAML is not installed (Debian: python3-yaml)")
        return SKIP

    schemas = {}
    for name in ("resource.k8s.io-v1.schema.json", "core-v1.schema.json"):
        with open(os.path.join(args.reference, name), encoding="utf-8") as handle:
            schemas.update(json.load(handle)["components"]["schemas"])
    problems = Problems()
    validator = Validator(schemas, problems)

    documents = []
    files = sorted(glob.glob(os.path.join(args.dir, "*.yaml")) + glob.glob(os.path.join(args.dir, "*.yml")))
    if not files:
        print(f"check_manifests: no YAML files in {args.dir}")
        return 1
    for path in files:
        name = os.path.relpath(path, repo)
        try:
            with open(path, encoding="utf-8") as handle:
                loaded = list(yaml.safe_load_all(handle))
        except yaml.YAMLError as error:
            problems.add(f"{name}:0", "", f"not YAML: {error}")
            continue
        for number, doc in enumerate(loaded, start=1):
            if doc is not None:
                documents.append((f"{name}:{number}", doc))

    classes, templates, service_accounts = set(), set(), set()
    for where, doc in documents:
        if not isinstance(doc, dict):
            continue
        metadata = doc.get("metadata") or {}
        if doc.get("kind") == "DeviceClass":
            classes.add(metadata.get("name"))
        elif doc.get("kind") == "ResourceClaimTemplate":
            templates.add((metadata.get("namespace", "default"), metadata.get("name")))
        elif doc.get("kind") == "ServiceAccount":
            service_accounts.add((metadata.get("namespace", "default"), metadata.get("name")))

    for where, doc in documents:
        if not isinstance(doc, dict):
            problems.add(where, "", "a document must be an object")
            continue
        kind, api_version = doc.get("kind"), doc.get("apiVersion")
        namespace = (doc.get("metadata") or {}).get("namespace", "default")
        if kind in SCHEMA_KINDS:
            want, _, schema = SCHEMA_KINDS[kind]
            if api_version != want:
                problems.add(where, "apiVersion", f"{kind} is {want}, not {api_version}")
            validator.validate(where, "", doc, {"$ref": REF_PREFIX + schema})
            check_metadata(problems, where, doc, kind not in ("DeviceClass", "ResourceSlice"))
            if kind == "DeviceClass":
                spec = doc.get("spec") or {}
                for index, selector in enumerate(spec.get("selectors") or []):
                    expression = ((selector or {}).get("cel") or {}).get("expression", "")
                    if DRIVER not in expression:
                        problems.add(where, f"spec.selectors[{index}].cel.expression",
                                     f"a gpu.fgpu.io class should select device.driver == \"{DRIVER}\"")
                check_opaque_configs(problems, where, "spec.config", spec.get("config"))
            elif kind == "ResourceClaimTemplate":
                check_claim_spec(problems, where, "spec.spec", (doc.get("spec") or {}).get("spec"), classes)
            elif kind == "ResourceClaim":
                check_claim_spec(problems, where, "spec", doc.get("spec"), classes)
            elif kind == "Pod":
                check_pod_spec(problems, where, "spec", doc.get("spec"), templates, service_accounts, namespace)
        elif kind in HAND_KINDS:
            want = HAND_KINDS[kind][0]
            if api_version != want:
                problems.add(where, "apiVersion", f"{kind} is {want}, not {api_version}")
            check_by_hand(problems, where, doc)
            if kind == "DaemonSet":
                template = (doc.get("spec") or {}).get("template") or {}
                validator.validate(where, "spec.template.metadata", template.get("metadata") or {},
                                   {"$ref": REF_PREFIX + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"})
                if "spec" not in template:
                    problems.add(where, "spec.template.spec", "required")
                validator.validate(where, "spec.template.spec", template.get("spec") or {},
                                   {"$ref": REF_PREFIX + "io.k8s.api.core.v1.PodSpec"})
                check_pod_spec(problems, where, "spec.template.spec", template.get("spec"), templates,
                               service_accounts, namespace)
        else:
            problems.add(where, "kind", f"unexpected kind {kind!r} ({api_version})")

    for line in problems.lines:
        print(line)
    print(f"check_manifests: {len(documents)} documents in {len(files)} files, {len(problems.lines)} problems")
    return 1 if problems.lines else 0


if __name__ == "__main__":
    sys.exit(main())
