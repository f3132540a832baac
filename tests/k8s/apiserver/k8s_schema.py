"""Validation of Kubernetes objects for the test API server: the OpenAPI schemas of the reference
kit, applied as /work/shared/reference/kubernetes/README.md "How to use these in tests" says,
plus by hand the semantic rules fgpu's DRA plugin relies on (each citing its field).

Two kinds of failure, as the real API server reports them:
  DecodeError  -> HTTP 400 BadRequest: wrong JSON type, bad format, unknown field (Strict).
  Invalid      -> HTTP 422 Invalid: required values, uniqueness, and the semantic rules.
"""
import copy
import datetime
import decimal
import json
import os
import re

REF_PREFIX = "#/components/schemas/"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"

# core/v1 Event is not in core-v1.schema.json (the kit's brief capped the set). NOT FROM THE
# REFERENCE KIT: written from kubernetes/kubernetes staging/src/k8s.io/api/core/v1/types.go
# (type Event, EventSource, EventSeries) and meta/v1 MicroTime, in the kit's OpenAPI shape, so
# Events are validated as strictly as the rest. Required: metadata and involvedObject (the two
# fields without omitempty that are objects; the string fields without omitempty are required
# by the Go validation only when the event is new-style, which we do not model).
EXTRA_SCHEMAS = {
    "io.k8s.api.core.v1.Event": {
        "type": "object",
        "required": ["metadata", "involvedObject"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"allOf": [{"$ref": REF_PREFIX + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]},
            "involvedObject": {"allOf": [{"$ref": REF_PREFIX + "io.k8s.api.core.v1.ObjectReference"}]},
            "reason": {"type": "string"},
            "message": {"type": "string"},
            "source": {"allOf": [{"$ref": REF_PREFIX + "io.k8s.api.core.v1.EventSource"}]},
            "firstTimestamp": {"allOf": [{"$ref": REF_PREFIX + "io.k8s.apimachinery.pkg.apis.meta.v1.Time"}]},
            "lastTimestamp": {"allOf": [{"$ref": REF_PREFIX + "io.k8s.apimachinery.pkg.apis.meta.v1.Time"}]},
            "count": {"type": "integer", "format": "int32"},
            "type": {"type": "string"},
            "eventTime": {"allOf": [{"$ref": REF_PREFIX + "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"}]},
            "series": {"allOf": [{"$ref": REF_PREFIX + "io.k8s.api.core.v1.EventSeries"}]},
            "action": {"type": "string"},
            "related": {"allOf": [{"$ref": REF_PREFIX + "io.k8s.api.core.v1.ObjectReference"}]},
            "reportingComponent": {"type": "string"},
            "reportingInstance": {"type": "string"},
        },
    },
    "io.k8s.api.core.v1.EventSource": {
        "type": "object",
        "properties": {"component": {"type": "string"}, "host": {"type": "string"}},
    },
    "io.k8s.api.core.v1.EventSeries": {
        "type": "object",
        "properties": {
            "count": {"type": "integer", "format": "int32"},
            "lastObservedTime": {"allOf": [{"$ref": REF_PREFIX + "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"}]},
        },
    },
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": {"type": "string", "format": "date-time"},
}

RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$")
# resource.Quantity's grammar (k8s.io/apimachinery/pkg/api/resource/quantity.go).
QUANTITY_RE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][+-]?\d+)?$")
SUFFIX = {"": 1, "m": decimal.Decimal("0.001"), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
          "P": 10**15, "E": 10**18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
          "Pi": 2**50, "Ei": 2**60}


class DecodeError(Exception):
    """The body does not decode into the Go type: 400 BadRequest."""


class Invalid(Exception):
    """The object decodes but fails validation: 422 Invalid. causes: [(field, message)]."""

    def __init__(self, causes):
        super().__init__("; ".join(f"{f}: {m}" for f, m in causes))
        self.causes = causes


def parse_quantity(value):
    """Decimal value of a Quantity (string or JSON number); None when it breaks the grammar."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return decimal.Decimal(str(value))
    if not isinstance(value, str):
        return None
    m = QUANTITY_RE.match(value)
    if not m:
        return None
    number, suffix = decimal.Decimal(m.group(1)), m.group(2) or ""
    if suffix[:1] in ("e", "E"):
        return number * (decimal.Decimal(10) ** int(suffix[1:]))
    return number * decimal.Decimal(SUFFIX[suffix])


def load_schemas(reference_dir):
    schemas = {}
    for name in ("resource.k8s.io-v1.schema.json", "core-v1.schema.json"):
        with open(os.path.join(reference_dir, name)) as f:
            schemas.update(json.load(f)["components"]["schemas"])
    schemas.update(EXTRA_SCHEMAS)
    return schemas


class SchemaValidator:
    def __init__(self, schemas):
        self.schemas = schemas

    def check(self, value, schema_name):
        """Raises DecodeError or Invalid; returns None when the object is schema-valid."""
        invalid = []
        self._walk(value, {"$ref": REF_PREFIX + schema_name}, "", invalid)
        if invalid:
            raise Invalid(invalid)

    def _walk(self, value, schema, path, invalid):
        if "$ref" in schema:
            name = schema["$ref"][len(REF_PREFIX):]
            target = self.schemas.get(name)
            if target is None:  # dangling $ref (README): any JSON object
                if value is not None and not isinstance(value, dict):
                    raise DecodeError(f"{path or '<root>'}: expected an object, got {_json_type(value)}")
                return
            self._walk(value, target, path, invalid)
            if name == QUANTITY and value is not None and parse_quantity(value) is None:
                # Quantity grammar (resource.Quantity UnmarshalJSON rejects it: a decode error).
                raise DecodeError(f"{path}: quantities must match the regular expression "
                                  f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got {value!r}")
            return
        for sub in schema.get("allOf", []):
            self._walk(value, sub, path, invalid)
        if value is None:
            return  # Go decodes null as the zero value, as the real server does
        if "oneOf" in schema:
            matches = sum(1 for s in schema["oneOf"] if _type_ok(value, s.get("type")))
            if matches != 1:
                raise DecodeError(f"{path}: {value!r} matches {matches} of "
                                  f"{[s.get('type') for s in schema['oneOf']]}, expected exactly one")
        t = schema.get("type")
        if t is not None and not _type_ok(value, t):
            raise DecodeError(f"{path or '<root>'}: expected {t}, got {_json_type(value)} {json.dumps(value)[:60]}")
        fmt = schema.get("format")
        if fmt == "int32" and not -2**31 <= value < 2**31:
            raise DecodeError(f"{path}: {value} is out of the int32 range")
        if fmt == "int64" and not -2**63 <= value < 2**63:
            raise DecodeError(f"{path}: {value} is out of the int64 range")
        if fmt == "date-time" and not _rfc3339(value):
            raise DecodeError(f"{path}: {value!r} is not an RFC 3339 date-time")
        if t == "object":
            props = schema.get("properties")
            extra = schema.get("additionalProperties")
            for req in schema.get("required", []):
                if value.get(req) is None:
                    invalid.append((_join(path, req), "Required value"))
            for key, item in value.items():
                if props is not None and key in props:
                    self._walk(item, props[key], _join(path, key), invalid)
                elif isinstance(extra, dict):
                    self._walk(item, extra, f"{path}[{key}]", invalid)
                elif props is not None or extra is False:
                    raise DecodeError(f'strict decoding error: unknown field "{_join(path, key)}"')
                # type: object with neither: free-form (FieldsV1, RawExtension, Patch)
        elif t == "array":
            items = schema.get("items", {})
            for i, item in enumerate(value):
                self._walk(item, items, f"{path}[{i}]", invalid)
            self._list_type(value, schema, path, invalid)

    @staticmethod
    def _list_type(value, schema, path, invalid):
        kind = schema.get("x-kubernetes-list-type")
        seen = {}
        if kind == "set":
            for i, item in enumerate(value):
                key = json.dumps(item, sort_keys=True)
                if key in seen:
                    invalid.append((f"{path}[{i}]", f"Duplicate value: {json.dumps(item)}"))
                seen[key] = i
        elif kind == "map":
            keys = schema.get("x-kubernetes-list-map-keys", [])
            for i, item in enumerate(value):
                if not isinstance(item, dict):
                    continue
                key = json.dumps([item.get(k) for k in keys])
                if key in seen:
                    shown = ", ".join(f"{k}={json.dumps(item.get(k))}" for k in keys)
                    invalid.append((f"{path}[{i}]", f"Duplicate value: map[{shown}]"))
                seen[key] = i


def _type_ok(value, t):
    if t is None:
        return True
    if t == "object":
        return isinstance(value, dict)
    if t == "array":
        return isinstance(value, list)
    if t == "string":
        return isinstance(value, str)
    if t == "boolean":
        return isinstance(value, bool)
    if t == "integer":  # JSON 1.0 does not decode into a Go int
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return False


def _json_type(value):
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer",
            float: "number", type(None): "null"}.get(type(value), type(value).__name__)


def _rfc3339(value):
    if not RFC3339.match(value):
        return False
    try:
        datetime.datetime.fromisoformat(re.sub(r"[Zz]$", "+00:00", re.sub(r"\.\d+", "", value)))
        return True
    except ValueError:
        return False


def _join(path, key):
    return f"{path}.{key}" if path else key


# ----- semantic rules (by hand; the schemas cannot say them) ------------------------------------

def dns_subdomain_errors(value, field):
    if not value:
        return [(field, "Required value")]
    if len(value) > 253 or not DNS1123_SUBDOMAIN.match(value):
        return [(field, f"Invalid value: {json.dumps(value)}: a lowercase RFC 1123 subdomain must consist "
                        "of lower case alphanumeric characters, '-' or '.', and must start and end with an "
                        "alphanumeric character (at most 253 characters)")]
    return []


def dns_label_errors(value, field):
    if not value:
        return [(field, "Required value")]
    if len(value) > 63 or not DNS1123_LABEL.match(value):
        return [(field, f"Invalid value: {json.dumps(value)}: a lowercase RFC 1123 label must consist of "
                        "lower case alphanumeric characters or '-', and must start and end with an "
                        "alphanumeric character (at most 63 characters)")]
    return []


def qualified_name_errors(value, field):
    """metav1 qualified name: an optional DNS-subdomain prefix and '/', then a name of <= 63."""
    prefix, _, name = value.rpartition("/")
    errs = []
    if prefix and dns_subdomain_errors(prefix, field):
        errs.append((field, f"Invalid value: {json.dumps(value)}: prefix part must be a DNS subdomain"))
    if not name or len(name) > 63 or not QUALIFIED_NAME.match(name):
        errs.append((field, f"Invalid value: {json.dumps(value)}: name part must consist of alphanumeric "
                            "characters, '-', '_' or '.', and must start and end with an alphanumeric "
                            "character (at most 63 characters)"))
    return errs


def validate_object_meta(obj, namespaced):
    """metadata.name / generateName (DNS subdomain), metadata.namespace (DNS label), labels."""
    meta = obj.get("metadata") or {}
    errs = []
    name = meta.get("name")
    if name:
        errs += dns_subdomain_errors(name, "metadata.name")
    elif meta.get("generateName"):
        # The generated name is generateName plus 5 characters: the prefix must be able to start one.
        errs += [("metadata.generateName", m.split(": a lowercase", 1)[0] + ": a lowercase RFC 1123 "
                  "subdomain prefix") for _, m in dns_subdomain_errors(meta["generateName"].rstrip("-.") or "-",
                                                                       "metadata.generateName")]
    else:
        errs.append(("metadata.name", "Required value: name or generateName is required"))
    if namespaced:
        errs += dns_label_errors(meta.get("namespace") or "", "metadata.namespace")
    elif meta.get("namespace"):
        errs.append(("metadata.namespace", "Forbidden: not allowed on this type"))
    for key, value in (meta.get("labels") or {}).items():
        errs += qualified_name_errors(key, f"metadata.labels")
        if len(value) > 63 or not LABEL_VALUE.match(value):
            errs.append(("metadata.labels", f"Invalid value: {json.dumps(value)}: a valid label value"))
    return errs


def _quantity(value):
    return parse_quantity(value) if value is not None else None


def validate_resource_slice(obj):
    spec = obj.get("spec") or {}
    errs = []
    # ResourceSliceSpec.driver: a DNS subdomain of at most 63 characters.
    driver = spec.get("driver") or ""
    errs += dns_subdomain_errors(driver, "spec.driver")
    if len(driver) > 63:
        errs.append(("spec.driver", "Too long: may not be more than 63 bytes"))
    # ResourceSliceSpec.pool: name (DNS subdomains separated by '/'), generation >= 0, count > 0.
    pool = spec.get("pool") or {}
    pool_name = pool.get("name") or ""
    if not pool_name:
        errs.append(("spec.pool.name", "Required value"))
    else:
        for part in pool_name.split("/"):
            if dns_subdomain_errors(part, "spec.pool.name"):
                errs.append(("spec.pool.name", f"Invalid value: {json.dumps(pool_name)}: "
                                               "each '/'-separated part must be a DNS subdomain"))
                break
    if pool.get("generation") is not None and pool["generation"] < 0:
        errs.append(("spec.pool.generation", "Invalid value: must be greater than or equal to 0"))
    if pool.get("resourceSliceCount") is not None and pool["resourceSliceCount"] <= 0:
        errs.append(("spec.pool.resourceSliceCount", "Invalid value: must be greater than zero"))
    # ResourceSliceSpec: exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection.
    set_fields = [f for f in ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")
                  if spec.get(f) not in (None, "", False)]
    if len(set_fields) != 1:
        errs.append(("spec", "Invalid value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                             f"`perDeviceNodeSelection` is required, got {set_fields}"))
    if spec.get("nodeName"):
        errs += dns_subdomain_errors(spec["nodeName"], "spec.nodeName")
    devices = spec.get("devices") or []
    # ResourceSliceSpec: devices or sharedCounters, not both.
    if devices and spec.get("sharedCounters"):
        errs.append(("spec", "Invalid value: only one of `devices` and `sharedCounters` may be set"))
    # ResourceSliceSpec.devices: at most 128, or 64 when any device uses taints or consumesCounters.
    limit = 64 if any(d.get("taints") or d.get("consumesCounters") for d in devices) else 128
    if len(devices) > limit:
        errs.append(("spec.devices", f"Too many: {len(devices)}: must have at most {limit} items"))
    errs += _shared_counters_errors(spec.get("sharedCounters"))
    names = set()
    per_device = bool(spec.get("perDeviceNodeSelection"))
    for i, dev in enumerate(devices):
        field = f"spec.devices[{i}]"
        name = dev.get("name") or ""
        # Device.name: a DNS label, unique within the slice.
        errs += dns_label_errors(name, f"{field}.name")
        if name and name in names:
            errs.append((f"{field}.name", f"Duplicate value: {json.dumps(name)}"))
        names.add(name)
        # Device.nodeName/nodeSelector/allNodes: exactly one when the slice sets
        # perDeviceNodeSelection, none otherwise.
        dev_sel = [f for f in ("nodeName", "nodeSelector", "allNodes") if dev.get(f) not in (None, "", False)]
        if per_device and len(dev_sel) != 1:
            errs.append((field, "Invalid value: exactly one of `nodeName`, `nodeSelector`, `allNodes` is "
                                "required when `perDeviceNodeSelection` is set"))
        if not per_device and dev_sel:
            errs.append((field, f"Forbidden: {dev_sel[0]} requires `perDeviceNodeSelection` on the slice"))
        attrs, caps = dev.get("attributes") or {}, dev.get("capacity") or {}
        # Device.attributes + capacity: at most 32 in total.
        if len(attrs) + len(caps) > 32:
            errs.append((field, "Too many: attributes and capacities must have at most 32 entries together"))
        for key, attr in attrs.items():
            errs += _attribute_errors(key, attr, f"{field}.attributes[{key}]")
        for key, cap in caps.items():
            errs += _capacity_errors(key, cap, dev, f"{field}.capacity[{key}]")
        errs += _consumes_counters_errors(dev.get("consumesCounters"), f"{field}.consumesCounters")
    return errs


# KEP-4815 (partitionable devices) limits, from the resource.k8s.io/v1 field descriptions.
MAX_COUNTER_SETS = 8  # ResourceSliceSpec.sharedCounters
MAX_DEVICE_COUNTER_CONSUMPTIONS = 2  # Device.consumesCounters
MAX_COUNTERS = 32  # CounterSet.counters, DeviceCounterConsumption.counters


def _counters_errors(counters, field, require_entries):
    """A counters map (CounterSet.counters, DeviceCounterConsumption.counters): at most 32
    entries, each name a DNS label, each Counter.value a Quantity >= 0. A missing map is the
    schema's "Required value"; an empty one is reported here when the caller requires entries."""
    if not isinstance(counters, dict):
        return []
    errs = []
    if require_entries and not counters:
        errs.append((field, "Required value: must have at least one counter"))
    if len(counters) > MAX_COUNTERS:
        errs.append((field, f"Too many: {len(counters)}: must have at most {MAX_COUNTERS} items"))
    for key, counter in counters.items():
        errs += dns_label_errors(key, f"{field}[{key}]")
        value = (counter or {}).get("value") if isinstance(counter, dict) else None
        if value is None:
            continue  # Counter.value: the schema's "Required value"
        parsed = parse_quantity(value)
        if parsed is None:
            errs.append((f"{field}[{key}].value", f"Invalid value: {json.dumps(value)}: must be a quantity"))
        elif parsed < 0:
            errs.append((f"{field}[{key}].value",
                         f"Invalid value: {json.dumps(value)}: must be greater than or equal to 0"))
    return errs


def _counter_holders_errors(items, field, key, limit, require_entries):
    """A list of counter holders (CounterSets, DeviceCounterConsumptions): at most `limit`; each
    one's `key` a DNS label, unique in the list; its counters at most 32 entries (and at least
    one when `require_entries`)."""
    if not isinstance(items, list):
        return []
    errs = []
    if len(items) > limit:
        errs.append((field, f"Too many: {len(items)}: must have at most {limit} items"))
    seen = set()
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        at = f"{field}[{i}]"
        name = item.get(key)
        if name is not None:  # a missing one is the schema's "Required value"
            errs += dns_label_errors(name, f"{at}.{key}")
            if name and name in seen:
                errs.append((f"{at}.{key}", f"Duplicate value: {json.dumps(name)}"))
            seen.add(name)
        errs += _counters_errors(item.get("counters"), f"{at}.counters", require_entries=require_entries)
    return errs


def _shared_counters_errors(sets):
    """ResourceSliceSpec.sharedCounters: at most 8 CounterSets; CounterSet.name a DNS label,
    unique in the slice (pool-wide uniqueness: pool_counter_set_errors); CounterSet.counters
    non-empty, at most 32 entries."""
    return _counter_holders_errors(sets, "spec.sharedCounters", "name", MAX_COUNTER_SETS, True)


def _consumes_counters_errors(entries, field):
    """Device.consumesCounters: at most 2 entries, one per counter set;
    DeviceCounterConsumption.counterSet a DNS label; its counters at most 32 entries."""
    return _counter_holders_errors(entries, field, "counterSet", MAX_DEVICE_COUNTER_CONSUMPTIONS, False)


def pool_counter_set_errors(obj, other_slices):
    """ResourceSliceSpec.sharedCounters: "The names of the counter sets must be unique in the
    ResourcePool" -- a rule across objects, which the server checks on create and update against
    the other stored ResourceSlices (other_slices must not include obj's stored version). The pool
    is the slices with the same spec.driver, spec.pool.name and spec.pool.generation: slices of an
    older generation are stale (the scheduler ignores them), and a driver that republishes its pool
    under a new generation reuses its counter set names while the old slices are still there."""
    spec = obj.get("spec") or {}
    sets = spec.get("sharedCounters")
    if not isinstance(sets, list) or not sets:
        return []
    pool = spec.get("pool") or {}
    key = (spec.get("driver"), pool.get("name"), pool.get("generation"))
    taken = {}
    for other in other_slices:
        ospec = other.get("spec") or {}
        opool = ospec.get("pool") or {}
        if (ospec.get("driver"), opool.get("name"), opool.get("generation")) != key:
            continue
        for cs in ospec.get("sharedCounters") or []:
            if isinstance(cs, dict) and cs.get("name"):
                taken.setdefault(cs["name"], (other.get("metadata") or {}).get("name"))
    errs = []
    for i, cs in enumerate(sets):
        name = cs.get("name") if isinstance(cs, dict) else None
        if name and name in taken:
            errs.append((f"spec.sharedCounters[{i}].name",
                         f"Duplicate value: {json.dumps(name)}: counter set names must be unique in the pool "
                         f"(also in ResourceSlice {json.dumps(taken[name])})"))
    return errs


def _attribute_errors(key, attr, field):
    errs = qualified_attribute_name_errors(key, field)
    # DeviceAttribute: exactly one of int, bool, string, version (or the list forms).
    kinds = [k for k in ("int", "bool", "string", "version", "ints", "bools", "strings", "versions")
             if attr.get(k) is not None]
    if len(kinds) != 1:
        errs.append((field, f"Invalid value: exactly one value must be specified, got {kinds or 'none'}"))
    if isinstance(attr.get("string"), str) and len(attr["string"]) > 64:
        errs.append((f"{field}.string", "Too long: may not be more than 64 bytes"))
    if isinstance(attr.get("version"), str) and not SEMVER.match(attr["version"]):
        errs.append((f"{field}.version", f"Invalid value: {json.dumps(attr['version'])}: must be semantic version 2.0.0"))
    return errs


def qualified_attribute_name_errors(key, field):
    """Attribute and capacity names: an optional DNS-subdomain domain and '/', then a C identifier
    of at most 32 characters (resource.k8s.io QualifiedName)."""
    domain, _, ident = key.rpartition("/")
    errs = []
    if domain and dns_subdomain_errors(domain, field):
        errs.append((field, f"Invalid value: {json.dumps(key)}: the domain must be a DNS subdomain"))
    if not C_IDENTIFIER.match(ident) or len(ident) > 32:
        errs.append((field, f"Invalid value: {json.dumps(key)}: the name must be a C identifier of at most 32 characters"))
    return errs


def _capacity_errors(key, cap, dev, field):
    errs = qualified_attribute_name_errors(key, field)
    policy = cap.get("requestPolicy")
    if policy is None:
        return errs
    # DeviceCapacity.requestPolicy: only with Device.allowMultipleAllocations.
    if not dev.get("allowMultipleAllocations"):
        errs.append((f"{field}.requestPolicy", "Forbidden: only allowed when allowMultipleAllocations is true"))
    values, rng = policy.get("validValues"), policy.get("validRange")
    default = _quantity(policy.get("default"))
    capacity = _quantity(cap.get("value"))
    # CapacityRequestPolicy: at most one of validValues and validRange.
    if values is not None and rng is not None:
        errs.append((f"{field}.requestPolicy", "Invalid value: at most one of `validValues` and `validRange` may be set"))
    if (values is not None or rng is not None) and default is None:
        errs.append((f"{field}.requestPolicy.default", "Required value: required when validValues or validRange is set"))
    if default is not None and capacity is not None and default > capacity:
        errs.append((f"{field}.requestPolicy.default", "Invalid value: must not exceed the capacity value"))
    if values is not None:
        parsed = [_quantity(v) for v in values]
        # CapacityRequestPolicy.validValues: at most 10, sorted ascending, default among them.
        if len(values) > 10:
            errs.append((f"{field}.requestPolicy.validValues", f"Too many: {len(values)}: must have at most 10 items"))
        if any(a is None or b is None or a >= b for a, b in zip(parsed, parsed[1:])):
            errs.append((f"{field}.requestPolicy.validValues", "Invalid value: must be sorted in ascending order without duplicates"))
        if default is not None and default not in parsed:
            errs.append((f"{field}.requestPolicy.default", "Invalid value: default must be one of validValues"))
    if rng is not None:
        lo, hi, step = _quantity(rng.get("min")), _quantity(rng.get("max")), _quantity(rng.get("step"))
        # CapacityRequestPolicyRange: min <= default <= max, default = min + k*step.
        if lo is not None and hi is not None and lo > hi:
            errs.append((f"{field}.requestPolicy.validRange", "Invalid value: min must not exceed max"))
        if default is not None and lo is not None:
            if default < lo or (hi is not None and default > hi):
                errs.append((f"{field}.requestPolicy.default", "Invalid value: default must be within validRange"))
            elif step is not None and step > 0 and (default - lo) % step != 0:
                errs.append((f"{field}.requestPolicy.default", "Invalid value: default must be min plus a multiple of step"))
        if step is not None and step <= 0:
            errs.append((f"{field}.requestPolicy.validRange.step", "Invalid value: must be positive"))
    return errs


def _device_claim_errors(claim, field):
    errs = []
    names = set()
    for i, req in enumerate(claim.get("requests") or []):
        rf = f"{field}.requests[{i}]"
        # DeviceRequest.name: a DNS label, unique in the claim.
        errs += dns_label_errors(req.get("name") or "", f"{rf}.name")
        if req.get("name") in names:
            errs.append((f"{rf}.name", f"Duplicate value: {json.dumps(req.get('name'))}"))
        names.add(req.get("name"))
        # DeviceRequest: exactly one of exactly and firstAvailable.
        if (req.get("exactly") is None) == (not req.get("firstAvailable")):
            errs.append((rf, "Invalid value: exactly one of `exactly` or `firstAvailable` is required"))
        subs = [(f"{rf}.exactly", req["exactly"])] if req.get("exactly") else []
        subs += [(f"{rf}.firstAvailable[{j}]", s) for j, s in enumerate(req.get("firstAvailable") or [])]
        for sf, sub in subs:
            # ExactDeviceRequest.deviceClassName: a DNS subdomain.
            errs += dns_subdomain_errors(sub.get("deviceClassName") or "", f"{sf}.deviceClassName")
            mode = sub.get("allocationMode")
            if mode not in (None, "ExactCount", "All"):
                errs.append((f"{sf}.allocationMode", f'Unsupported value: {json.dumps(mode)}: supported values: "All", "ExactCount"'))
            if sub.get("count") is not None and sub["count"] <= 0:
                errs.append((f"{sf}.count", "Invalid value: must be greater than zero"))
            errs += _selector_errors(sub.get("selectors"), f"{sf}.selectors")
            for key in ((sub.get("capacity") or {}).get("requests") or {}):
                errs += qualified_attribute_name_errors(key, f"{sf}.capacity.requests[{key}]")
    return errs


def _selector_errors(selectors, field):
    # DeviceSelector.cel: required; CELDeviceSelector.expression non-empty.
    errs = []
    for i, sel in enumerate(selectors or []):
        cel = sel.get("cel")
        if cel is None:
            errs.append((f"{field}[{i}].cel", "Required value"))
        elif not (cel.get("expression") or "").strip():
            errs.append((f"{field}[{i}].cel.expression", "Required value"))
    return errs


def validate_resource_claim(obj):
    return _device_claim_errors(((obj.get("spec") or {}).get("devices")) or {}, "spec.devices")


def validate_resource_claim_template(obj):
    spec = ((obj.get("spec") or {}).get("spec")) or {}
    return _device_claim_errors(spec.get("devices") or {}, "spec.spec.devices")


def validate_device_class(obj):
    return _selector_errors((obj.get("spec") or {}).get("selectors"), "spec.selectors")


def validate_pod(obj):
    spec = obj.get("spec") or {}
    errs = []
    claims = set()
    for i, rc in enumerate(spec.get("resourceClaims") or []):
        f = f"spec.resourceClaims[{i}]"
        # PodResourceClaim.name: a DNS label, unique; exactly one of the two sources.
        errs += dns_label_errors(rc.get("name") or "", f"{f}.name")
        if rc.get("name") in claims:
            errs.append((f"{f}.name", f"Duplicate value: {json.dumps(rc.get('name'))}"))
        claims.add(rc.get("name"))
        if bool(rc.get("resourceClaimName")) == bool(rc.get("resourceClaimTemplateName")):
            errs.append((f, "Invalid value: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"))
    for group in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(group) or []):
            errs += dns_label_errors(c.get("name") or "", f"spec.{group}[{i}].name")
            # ResourceRequirements.claims[].name: must name one of spec.resourceClaims.
            for j, cl in enumerate(((c.get("resources") or {}).get("claims")) or []):
                if cl.get("name") not in claims:
                    errs.append((f"spec.{group}[{i}].resources.claims[{j}].name",
                                 f"Not found: {json.dumps(cl.get('name'))}"))
    if not spec.get("containers"):
        errs.append(("spec.containers", "Required value"))
    return errs


def validate_event(obj):
    # Event.involvedObject.namespace must match the event's namespace when set.
    ns = (obj.get("metadata") or {}).get("namespace")
    inv = (obj.get("involvedObject") or {}).get("namespace")
    if inv and inv != ns:
        return [("involvedObject.namespace", f"Invalid value: {json.dumps(inv)}: does not match event.namespace")]
    return []


SEMANTIC = {
    "ResourceSlice": validate_resource_slice,
    "ResourceClaim": validate_resource_claim,
    "ResourceClaimTemplate": validate_resource_claim_template,
    "DeviceClass": validate_device_class,
    "Pod": validate_pod,
    "Event": validate_event,
}


def validate(validator, obj, kind, schema_name, namespaced):
    """Full validation of one object body: schema (decode errors first, as the real decoder),
    then ObjectMeta and the kind's semantic rules. Raises DecodeError or Invalid."""
    causes = []
    try:
        validator.check(obj, schema_name)
    except Invalid as e:
        causes += e.causes
    causes += validate_object_meta(obj, namespaced)
    rule = SEMANTIC.get(kind)
    if rule is not None:
        causes += rule(obj)
    if causes:
        raise Invalid(causes)


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target, ops):
    """RFC 6902 JSON patch; raises ValueError on a malformed or failing operation."""
    doc = copy.deepcopy(target)
    if not isinstance(ops, list):
        raise ValueError("a JSON patch must be an array of operations")

    def split(pointer):
        if pointer == "":
            return []
        if not pointer.startswith("/"):
            raise ValueError(f"bad JSON pointer {pointer!r}")
        return [p.replace("~1", "/").replace("~0", "~") for p in pointer[1:].split("/")]

    def parent(doc, parts):
        cur = doc
        for p in parts[:-1]:
            cur = cur[int(p)] if isinstance(cur, list) else cur[p]
        return cur

    def get(doc, parts):
        cur = doc
        for p in parts:
            cur = cur[int(p)] if isinstance(cur, list) else cur[p]
        return cur

    for op in ops:
        try:
            kind, parts = op["op"], split(op["path"])
            if kind in ("add", "replace", "test"):
                value = op["value"]
            if kind == "test":
                if get(doc, parts) != value:
                    raise ValueError(f"test operation failed at {op['path']}")
                continue
            if kind in ("move", "copy"):
                value = copy.deepcopy(get(doc, split(op["from"])))
                if kind == "move":
                    fp = split(op["from"])
                    fparent = parent(doc, fp)
                    del fparent[int(fp[-1]) if isinstance(fparent, list) else fp[-1]]
                kind = "add"
            if not parts:
                if kind == "remove":
                    raise ValueError("cannot remove the root")
                doc = copy.deepcopy(value)
                continue
            par, last = parent(doc, parts), parts[-1]
            if isinstance(par, list):
                if kind == "add":
                    par.insert(len(par) if last == "-" else int(last), copy.deepcopy(value))
                elif kind == "remove":
                    del par[int(last)]
                else:
                    par[int(last)] = copy.deepcopy(value)
            else:
                if kind in ("remove", "replace") and last not in par:
                    raise ValueError(f"{kind}: no value at {op['path']}")
                if kind == "remove":
                    del par[last]
                elif kind in ("add", "replace"):
                    par[last] = copy.deepcopy(value)
                else:
                    raise ValueError(f"unknown operation {kind!r}")
        except (KeyError, IndexError, TypeError) as e:
            raise ValueError(f"cannot apply {json.dumps(op)[:100]}: {e!r}") from None
    return doc
