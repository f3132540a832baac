#!/usr/bin/env python3
"""A test Kubernetes API server, at least as strict as a real one (python3 stdlib only).

HTTPS with bearer-token auth (and optional client-certificate auth), for resource.k8s.io/v1
ResourceSlice, ResourceClaim (+/status), ResourceClaimTemplate, DeviceClass and core/v1 Pod
(+/status), Node (+/status), Event. GET, LIST (label/field selectors, limit/continue), WATCH
(bookmarks, timeoutSeconds, 410 once history is compacted), POST, PUT (resourceVersion
precondition -> 409), PATCH (merge, json, strategic treated as merge, apply treated as merge),
DELETE (finalizers honoured). Every object body it accepts is validated by k8s_schema.py.

Usage:
  fake_apiserver.py --cert S.crt --key S.key --token-file TOKEN --reference DIR
                    [--client-ca CA.crt] [--port 0] [--control-port 0]
                    [--bookmark-interval 1.0] [--history 1000]
First line on stdout: {"port": P, "control_port": C} (JSON), then it serves until killed.

Control endpoint (plain HTTP, 127.0.0.1:control_port, for tests only):
  POST   /faults    {"method": "GET"|"*", "path_prefix": "/apis/...", "count": N,
                     "action": "status"|"drop"|"delay", "status": 429, "retry_after": 1,
                     "delay_ms": 500}        fail/delay the next N matching API requests
                    {"action": "reply", "status": 200, "body": "raw text"}
                                              answer them with exactly that body (a hostile server)
  DELETE /faults                              forget all faults
  POST   /compact   {"close_watches": false}  drop the watch history: older resourceVersions get 410;
                                              close_watches also ends every open watch with a 410
  GET    /dump                                {"resourceVersion": "N", "objects": [...]} everything stored
  GET    /requests   DELETE /requests         the API request log [{method, path, query, code}]
  POST   /reset                               empty the store, history, faults and log
  POST   /token      {"token": "..."}         (nothing: the token file is re-read on every request)
"""
import argparse
import base64
import copy
import datetime
import json
import os
import random
import socket
import ssl
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import k8s_schema  # noqa: E402

# plural -> (group, version, kind, namespaced, schema, has /status, extra field selectors)
RESOURCES = {
    "pods": ("", "v1", "Pod", True, "io.k8s.api.core.v1.Pod", True, ("spec.nodeName", "status.phase")),
    "nodes": ("", "v1", "Node", False, "io.k8s.api.core.v1.Node", True, ("spec.unschedulable",)),
    "events": ("", "v1", "Event", True, "io.k8s.api.core.v1.Event", False,
               ("involvedObject.kind", "involvedObject.name", "involvedObject.namespace",
                "involvedObject.uid", "reason", "type")),
    "resourceslices": ("resource.k8s.io", "v1", "ResourceSlice", False, "io.k8s.api.resource.v1.ResourceSlice",
                       False, ("spec.driver", "spec.nodeName", "spec.pool.name")),
    "resourceclaims": ("resource.k8s.io", "v1", "ResourceClaim", True, "io.k8s.api.resource.v1.ResourceClaim",
                       True, ()),
    "resourceclaimtemplates": ("resource.k8s.io", "v1", "ResourceClaimTemplate", True,
                               "io.k8s.api.resource.v1.ResourceClaimTemplate", False, ()),
    "deviceclasses": ("resource.k8s.io", "v1", "DeviceClass", False, "io.k8s.api.resource.v1.DeviceClass",
                      False, ()),
}
NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # apiserver's generateName alphabet


class ApiError(Exception):
    def __init__(self, code, reason, message, details=None):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def status(self):
        body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": self.message, "reason": self.reason, "code": self.code}
        if self.details:
            body["details"] = self.details
        return body


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def group_resource(plural):
    group = RESOURCES[plural][0]
    return f"{plural}.{group}" if group else plural


def kind_group(plural):
    group, _, kind = RESOURCES[plural][:3]
    return f"{kind}.{group}" if group else kind


def invalid_error(plural, name, causes):
    shown = causes[0][0] + ": " + causes[0][1] if len(causes) == 1 else \
        "[" + ", ".join(f"{f}: {m}" for f, m in causes) + "]"
    return ApiError(422, "Invalid", f'{kind_group(plural)} "{name}" is invalid: {shown}',
                    {"name": name, "group": RESOURCES[plural][0], "kind": RESOURCES[plural][2],
                     "causes": [{"reason": "FieldValueInvalid", "message": m, "field": f} for f, m in causes]})


# ----- selectors ---------------------------------------------------------------------------------

def _split_terms(text):
    terms, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        terms.append(cur.strip())
    return terms


def parse_label_selector(text):
    """[(key, op, values)], op in = != exists !exists in notin. Raises ApiError 400."""
    reqs = []
    for term in _split_terms(text or ""):
        words = term.split()
        if len(words) == 3 and words[1] in ("in", "notin") and words[2].startswith("("):
            vals = [v.strip() for v in words[2].strip("()").split(",")]
            reqs.append((words[0], words[1], vals))
        elif len(words) >= 2 and words[1] in ("in", "notin"):
            rest = term.split(None, 2)[2]
            if not (rest.startswith("(") and rest.endswith(")")):
                raise ApiError(400, "BadRequest", f"unable to parse requirement: {term!r}")
            reqs.append((words[0], words[1], [v.strip() for v in rest[1:-1].split(",")]))
        elif "!=" in term:
            k, v = term.split("!=", 1)
            reqs.append((k.strip(), "!=", [v.strip()]))
        elif "==" in term or "=" in term:
            k, v = term.split("==", 1) if "==" in term else term.split("=", 1)
            reqs.append((k.strip(), "=", [v.strip()]))
        elif term.startswith("!"):
            reqs.append((term[1:].strip(), "!exists", []))
        elif term:
            reqs.append((term, "exists", []))
        if reqs and not reqs[-1][0]:
            raise ApiError(400, "BadRequest", f"unable to parse requirement: {term!r}")
    return reqs


def labels_match(reqs, labels):
    for key, op, vals in reqs:
        has = key in labels
        if op == "=" and labels.get(key) != vals[0]:
            return False
        if op == "!=" and has and labels[key] == vals[0]:
            return False
        if op == "exists" and not has:
            return False
        if op == "!exists" and has:
            return False
        if op == "in" and labels.get(key) not in vals:
            return False
        if op == "notin" and has and labels[key] in vals:
            return False
    return True


def parse_field_selector(text, plural):
    allowed = ("metadata.name", "metadata.namespace") + RESOURCES[plural][6]
    reqs = []
    for term in _split_terms(text or ""):
        if "!=" in term:
            k, v = term.split("!=", 1)
            op = "!="
        elif "=" in term:
            k, v = term.split("==", 1) if "==" in term else term.split("=", 1)
            op = "="
        else:
            raise ApiError(400, "BadRequest", f"invalid selector: '{text}'; can't understand '{term}'")
        k = k.strip()
        if k not in allowed:
            raise ApiError(400, "BadRequest", f'field label not supported: {k}')
        reqs.append((k, op, v.strip()))
    return reqs


def field_value(obj, path):
    cur = obj
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else None
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def fields_match(reqs, obj):
    for key, op, val in reqs:
        have = field_value(obj, key)
        if (op == "=") != (have == val):
            return False
    return True


# ----- the store ---------------------------------------------------------------------------------

class Store:
    def __init__(self, history_limit):
        self.cond = threading.Condition()
        self.objects = {}  # (plural, namespace, name) -> object
        self.rv = 100  # resourceVersions are opaque to clients; start away from 0
        self.history = []  # (rv, type, plural, old, new)
        self.oldest = self.rv  # events with rv > oldest are retained
        self.history_limit = history_limit
        self.watch_epoch = 0  # bumped by /compact {"close_watches": true}: open watches get 410

    def _bump(self):
        self.rv += 1
        return str(self.rv)

    def record(self, etype, plural, old, new):
        self.history.append((self.rv, etype, plural, copy.deepcopy(old), copy.deepcopy(new)))
        if len(self.history) > self.history_limit:
            drop = len(self.history) - self.history_limit
            self.oldest = self.history[drop - 1][0]
            del self.history[:drop]
        self.cond.notify_all()

    def compact(self, close_watches=False):
        with self.cond:
            self.history.clear()
            self.oldest = self.rv
            if close_watches:
                self.watch_epoch += 1
            self.cond.notify_all()


class Fault:
    def __init__(self, spec):
        self.method = spec.get("method", "*").upper()
        self.prefix = spec.get("path_prefix", "/")
        self.count = int(spec.get("count", 1))
        self.action = spec.get("action", "status")
        self.status = int(spec.get("status", 500))
        self.retry_after = spec.get("retry_after")
        self.delay_ms = int(spec.get("delay_ms", 0))
        self.body = str(spec.get("body", ""))

    def matches(self, method, path):
        return self.count > 0 and self.method in ("*", method) and path.startswith(self.prefix)


class Server:
    def __init__(self, args):
        self.args = args
        self.validator = k8s_schema.SchemaValidator(k8s_schema.load_schemas(args.reference))
        self.store = Store(args.history)
        self.faults = []
        self.log = []
        self.lock = threading.Lock()  # faults and log

    def take_fault(self, method, path):
        with self.lock:
            for f in self.faults:
                if f.matches(method, path):
                    f.count -= 1
                    return f
        return None

    def note(self, method, path, query):
        """Logs a request before it is answered (a test reading /requests right after its reply
        must find it); the handler sets the entry's code just before the reply's bytes leave."""
        entry = {"method": method, "path": path, "query": query, "code": 0}
        with self.lock:
            self.log.append(entry)
        return entry

    def reset(self):
        with self.store.cond:
            self.store.objects.clear()
            self.store.history.clear()
            self.store.oldest = self.store.rv
        with self.lock:
            self.faults.clear()
            self.log.clear()

    def authenticate(self, handler):
        if getattr(handler, "client_cert_ok", False):
            return True
        auth = handler.headers.get("Authorization", "")
        if not auth.startswith("Bearer "):
            return False
        try:
            with open(self.args.token_file) as f:  # re-read: tests rotate it
                want = f.read().strip()
        except OSError:
            return False
        return bool(want) and auth[len("Bearer "):].strip() == want


# ----- request routing ---------------------------------------------------------------------------

def parse_path(path):
    """(plural, namespace, name, subresource) or raises 404."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        rest, group = parts[2:], ""
    elif parts[:3] == ["apis", "resource.k8s.io", "v1"]:
        rest, group = parts[3:], "resource.k8s.io"
    else:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    namespace = None
    if len(rest) >= 2 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not rest or rest[0] not in RESOURCES or RESOURCES[rest[0]][0] != group:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    plural = rest[0]
    namespaced = RESOURCES[plural][3]
    if namespace is not None and not namespaced:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    if len(rest) > 3 or (sub is not None and (sub != "status" or not RESOURCES[plural][5])):
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    if name is not None and namespaced and namespace is None:
        raise ApiError(404, "NotFound", "the server could not find the requested resource")
    return plural, namespace, name, sub


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-apiserver/1"

    def log_message(self, *args):  # quiet: the request log is on the control port
        pass

    def setup(self):
        self.client_cert_ok = False
        # Headers and body leave in separate writes: without NODELAY, Nagle plus the client's
        # delayed ACK add 40 ms to every keep-alive request.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(10)
            self.request.do_handshake()  # raises on a failed handshake; QuietServer drops it
            self.request.settimeout(None)
            self.client_cert_ok = bool(self.request.getpeercert())
        super().setup()

    def handle(self):
        try:
            super().handle()
        except (ConnectionError, ssl.SSLError, socket.timeout):
            pass

    # every verb goes through dispatch
    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def read_body(self):
        length = self.headers.get("Content-Length")
        if length is None:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                data = b""
                while True:
                    size = int(self.rfile.readline().strip().split(b";")[0], 16)
                    if size == 0:
                        self.rfile.readline()
                        return data
                    data += self.rfile.read(size)
                    self.rfile.readline()
            return b""
        return self.rfile.read(int(length))

    def send_raw(self, code, data):
        self.log_entry["code"] = code
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_json(self, code, body, extra_headers=()):
        self.log_entry["code"] = code
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra_headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def dispatch(self, method):
        srv = self.server.app
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        self.log_entry = srv.note(method, url.path, url.query)
        try:
            body = self.read_body()
            fault = srv.take_fault(method, url.path)
            if fault is not None:
                if fault.action == "drop":
                    self.log_entry["code"] = -1
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if fault.action == "delay":
                    time.sleep(fault.delay_ms / 1000)
                elif fault.action == "reply":
                    self.send_raw(fault.status, fault.body.encode())
                    return
                else:
                    code = fault.status
                    headers = [("Retry-After", str(fault.retry_after))] if fault.retry_after is not None else []
                    reason = {429: "TooManyRequests", 503: "ServiceUnavailable"}.get(code, "InternalError")
                    self.send_json(code, ApiError(code, reason, f"injected fault {code}").status(), headers)
                    return
            if not srv.authenticate(self):
                raise ApiError(401, "Unauthorized", "Unauthorized")
            self.route(srv, method, url.path, query, body)
        except ApiError as e:
            self.send_json(e.code, e.status())
        except (ConnectionError, ssl.SSLError, BrokenPipeError):
            self.close_connection = True

    def route(self, srv, method, path, query, body):
        plural, ns, name, sub = parse_path(path)
        api = Api(srv, plural, ns, query)
        if method == "GET" and name is None:
            if query.get("watch") in ("1", "true"):
                return api.watch(self)
            self.send_json(200, api.list())
            return 200
        if method == "GET":
            self.send_json(200, api.get(name))
            return 200
        if method == "POST" and name is None and sub is None:
            self.send_json(201, api.create(decode(body)))
            return 201
        if method == "PUT" and name is not None:
            self.send_json(200, api.update(name, decode(body), sub))
            return 200
        if method == "PATCH" and name is not None:
            code, obj = api.patch(name, body, self.headers.get("Content-Type", ""), sub)
            self.send_json(code, obj)
            return code
        if method == "DELETE" and name is not None and sub is None:
            self.send_json(200, api.delete(name))
            return 200
        raise ApiError(405, "MethodNotAllowed", f"the server does not allow this method on the requested resource")

    # chunked streaming for watch
    def start_stream(self):
        self.log_entry["code"] = 200
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def send_chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_stream(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def decode(body):
    try:
        obj = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ApiError(400, "BadRequest", f"the body of the request was in an unknown format: {e}")
    if not isinstance(obj, dict):
        raise ApiError(400, "BadRequest", "the body of the request must be a JSON object")
    return obj


class Api:
    """One request's view of one resource type."""

    def __init__(self, srv, plural, namespace, query):
        self.srv, self.store, self.plural, self.ns, self.query = srv, srv.store, plural, namespace, query
        group, version, self.kind, self.namespaced, self.schema, self.has_status, _ = RESOURCES[plural]
        self.api_version = f"{group}/{version}" if group else version

    def key(self, name):
        return (self.plural, self.ns if self.namespaced else None, name)

    def not_found(self, name):
        return ApiError(404, "NotFound", f'{group_resource(self.plural)} "{name}" not found',
                        {"name": name, "group": RESOURCES[self.plural][0], "kind": self.plural})

    def get(self, name):
        with self.store.cond:
            obj = self.store.objects.get(self.key(name))
            if obj is None:
                raise self.not_found(name)
            return copy.deepcopy(obj)

    def selected(self, obj, labels, fields):
        meta = obj["metadata"]
        if self.ns is not None and meta.get("namespace") != self.ns:
            return False
        return labels_match(labels, meta.get("labels") or {}) and fields_match(fields, obj)

    def list(self):
        labels = parse_label_selector(self.query.get("labelSelector"))
        fields = parse_field_selector(self.query.get("fieldSelector"), self.plural)
        limit = int(self.query.get("limit") or 0)
        start = None
        with self.store.cond:
            list_rv = str(self.store.rv)
            token = self.query.get("continue")
            if token:
                try:
                    state = json.loads(base64.urlsafe_b64decode(token.encode()))
                    start, token_rv = tuple(state["start"]), int(state["rv"])
                except (ValueError, KeyError, TypeError):
                    raise ApiError(400, "BadRequest", "continue key is not valid")
                if token_rv < self.store.oldest:
                    raise ApiError(410, "Expired", "The provided continue parameter is too old to display a "
                                   "consistent list result. You can start a new list without the continue parameter.")
                list_rv = str(token_rv)
            keys = sorted(k for k in self.store.objects if k[0] == self.plural)
            items, next_token = [], ""
            for k in keys:
                if start is not None and (k[1] or "", k[2]) <= start:
                    continue
                obj = self.store.objects[k]
                if not self.selected(obj, labels, fields):
                    continue
                if limit and len(items) == limit:
                    last = items[-1]["metadata"]
                    next_token = base64.urlsafe_b64encode(json.dumps(
                        {"rv": int(list_rv), "start": [last.get("namespace") or "", last["name"]]}).encode()).decode()
                    break
                items.append(copy.deepcopy(obj))
        meta = {"resourceVersion": list_rv}
        if next_token:
            meta["continue"] = next_token
        return {"kind": self.kind + "List", "apiVersion": self.api_version, "metadata": meta, "items": items}

    def watch(self, handler):
        labels = parse_label_selector(self.query.get("labelSelector"))
        fields = parse_field_selector(self.query.get("fieldSelector"), self.plural)
        bookmarks = self.query.get("allowWatchBookmarks") in ("true", "1")
        timeout = float(self.query.get("timeoutSeconds") or self.srv.args.watch_timeout)
        deadline = time.monotonic() + min(timeout, self.srv.args.watch_timeout)
        rv_param = self.query.get("resourceVersion") or ""
        pending = []
        with self.store.cond:
            epoch = self.store.watch_epoch
            if rv_param in ("", "0"):
                since = self.store.rv
                for k in sorted(k for k in self.store.objects if k[0] == self.plural):
                    obj = self.store.objects[k]
                    if self.selected(obj, labels, fields):
                        pending.append({"type": "ADDED", "object": copy.deepcopy(obj)})
            else:
                try:
                    since = int(rv_param)
                except ValueError:
                    raise ApiError(400, "BadRequest", f"invalid resource version: {rv_param!r}")
                if since < self.store.oldest:
                    # What the real server's watch cache does: 200, then one ERROR event with 410.
                    pending.append({"type": "ERROR", "object": ApiError(
                        410, "Expired", f"too old resource version: {since} ({self.store.oldest + 1})").status()})
                    since = None
        handler.start_stream()
        last_bookmark = time.monotonic()
        try:
            while True:
                for ev in pending:
                    handler.send_chunk(json.dumps(ev).encode() + b"\n")
                pending = []
                if since is None:
                    break
                now = time.monotonic()
                if now >= deadline:
                    break
                with self.store.cond:
                    if not (self.store.history and self.store.history[-1][0] > since):
                        wait = deadline - now
                        if bookmarks:
                            wait = min(wait, max(0.0, last_bookmark + self.srv.args.bookmark_interval - now))
                        self.store.cond.wait(timeout=max(0.01, min(wait, 0.5)))
                    if since < self.store.oldest or epoch != self.store.watch_epoch:
                        pending.append({"type": "ERROR", "object": ApiError(
                            410, "Expired", f"too old resource version: {since} ({self.store.oldest + 1})").status()})
                        since = None
                        continue
                    for rv, etype, plural, old, new in self.store.history:
                        if rv <= since or plural != self.plural:
                            continue
                        was = old is not None and self.selected(old, labels, fields)
                        now_in = self.selected(new, labels, fields)
                        if etype == "DELETED":
                            if was or now_in:
                                pending.append({"type": "DELETED", "object": new})
                        elif was and now_in:
                            pending.append({"type": "MODIFIED", "object": new})
                        elif now_in:
                            pending.append({"type": "ADDED", "object": new})
                        elif was:
                            pending.append({"type": "DELETED", "object": new})
                    since = self.store.rv
                if bookmarks and not pending and time.monotonic() - last_bookmark >= self.srv.args.bookmark_interval:
                    pending.append({"type": "BOOKMARK", "object": {
                        "kind": self.kind, "apiVersion": self.api_version,
                        "metadata": {"resourceVersion": str(since)}}})
                    last_bookmark = time.monotonic()
            handler.end_stream()
        except (ConnectionError, ssl.SSLError, OSError):
            handler.close_connection = True
        return 200

    # --- writes ---

    def check_type(self, obj):
        if obj.get("apiVersion") not in (None, self.api_version):
            raise ApiError(400, "BadRequest", f"the API version in the data ({obj['apiVersion']}) does not match "
                           f"the expected API version ({self.api_version})")
        if obj.get("kind") not in (None, self.kind):
            raise ApiError(400, "BadRequest", f"the kind in the data ({obj['kind']}) does not match the "
                           f"expected kind ({self.kind})")
        obj["apiVersion"], obj["kind"] = self.api_version, self.kind

    def validate(self, obj, name):
        try:
            k8s_schema.validate(self.srv.validator, obj, self.kind, self.schema, self.namespaced)
        except k8s_schema.DecodeError as e:
            raise ApiError(400, "BadRequest", str(e))
        except k8s_schema.Invalid as e:
            raise invalid_error(self.plural, name, e.causes)

    def validate_across(self, obj, name, key):
        """Rules across stored objects (caller holds the store lock; key: obj's own entry, skipped)."""
        if self.plural == "resourceslices":
            others = [o for k, o in self.store.objects.items() if k[0] == self.plural and k != key]
            causes = k8s_schema.pool_counter_set_errors(obj, others)
            if causes:
                raise invalid_error(self.plural, name, causes)

    def fill_namespace(self, meta):
        if self.namespaced:
            if meta.get("namespace") not in (None, "", self.ns):
                raise ApiError(400, "BadRequest", "the namespace of the provided object does not match the "
                               "namespace sent on the request")
            meta["namespace"] = self.ns

    def create(self, obj, from_apply_name=None):
        self.check_type(obj)
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(400, "BadRequest", "metadata: expected an object")
        self.fill_namespace(meta)
        if meta.get("resourceVersion"):
            raise ApiError(400, "BadRequest", "resourceVersion should not be set on objects to be created")
        if from_apply_name:
            meta["name"] = from_apply_name
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"][:58] + "".join(random.choice(NAME_CHARS) for _ in range(5))
        self.validate(obj, meta.get("name") or "")
        with self.store.cond:
            key = self.key(meta["name"])
            if key in self.store.objects:
                raise ApiError(409, "AlreadyExists", f'{group_resource(self.plural)} "{meta["name"]}" already exists',
                               {"name": meta["name"], "group": RESOURCES[self.plural][0], "kind": self.plural})
            self.validate_across(obj, meta["name"], key)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now_rfc3339()
            meta["generation"] = 1
            meta.pop("deletionTimestamp", None)
            meta["resourceVersion"] = self.store._bump()
            self.store.objects[key] = obj
            self.store.record("ADDED", self.plural, None, obj)
            return copy.deepcopy(obj)

    def commit_update(self, name, new, sub, precondition_rv):
        """Store new in place of the current object, keeping what this request may not change."""
        with self.store.cond:
            key = self.key(name)
            old = self.store.objects.get(key)
            if old is None:
                raise self.not_found(name)
            if precondition_rv and precondition_rv != old["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {group_resource(self.plural)} '
                               f'"{name}": the object has been modified; please apply your changes to the '
                               'latest version and try again',
                               {"name": name, "group": RESOURCES[self.plural][0], "kind": self.plural})
            if sub == "status":  # /status changes status only
                merged = copy.deepcopy(old)
                if "status" in new:
                    merged["status"] = new["status"]
                else:
                    merged.pop("status", None)
                new = merged
            elif self.has_status:  # the main resource cannot change status
                if "status" in old:
                    new["status"] = copy.deepcopy(old["status"])
                else:
                    new.pop("status", None)
            meta = new.setdefault("metadata", {})
            for field in ("name", "namespace", "uid", "creationTimestamp"):
                if old["metadata"].get(field) != meta.get(field) and meta.get(field) not in (None, ""):
                    raise invalid_error(self.plural, name, [(f"metadata.{field}", "Invalid value: field is immutable")])
                if old["metadata"].get(field) is not None:
                    meta[field] = old["metadata"][field]
                else:
                    meta.pop(field, None)
            meta.pop("generateName", None) if "generateName" not in old["metadata"] else None
            if old["metadata"].get("deletionTimestamp"):
                meta["deletionTimestamp"] = old["metadata"]["deletionTimestamp"]
            else:
                meta.pop("deletionTimestamp", None)
            self.validate(new, name)
            self.validate_across(new, name, key)
            spec_of = (lambda o: o.get("spec")) if "spec" in old or "spec" in new else \
                (lambda o: {k: v for k, v in o.items() if k not in ("metadata", "status")})
            meta["generation"] = old["metadata"].get("generation", 1) + (spec_of(old) != spec_of(new))
            meta["resourceVersion"] = old["metadata"]["resourceVersion"]
            if new == old:
                return copy.deepcopy(old)  # a no-op write does not bump resourceVersion
            if meta.get("deletionTimestamp") and not meta.get("finalizers"):
                del self.store.objects[key]
                meta["resourceVersion"] = self.store._bump()
                self.store.record("DELETED", self.plural, old, new)
                return copy.deepcopy(new)
            meta["resourceVersion"] = self.store._bump()
            self.store.objects[key] = new
            self.store.record("MODIFIED", self.plural, old, new)
            return copy.deepcopy(new)

    def update(self, name, obj, sub):
        self.check_type(obj)
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(400, "BadRequest", "metadata: expected an object")
        self.fill_namespace(meta)
        if meta.get("name") != name:
            raise ApiError(400, "BadRequest", "the name of the object "
                           f"({meta.get('name')}) does not match the name on the URL ({name})")
        return self.commit_update(name, obj, sub, meta.get("resourceVersion"))

    def patch(self, name, body, content_type, sub):
        ctype = content_type.split(";")[0].strip()
        try:
            patch = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise ApiError(400, "BadRequest", f"error decoding patch: {e}")
        if ctype == "application/apply-patch+yaml":
            if not self.query.get("fieldManager"):
                raise ApiError(400, "BadRequest", "PATCH, application/apply-patch+yaml requires fieldManager")
            try:
                current = self.get(name)
            except ApiError:
                if sub is not None:
                    raise
                if isinstance(patch, dict):
                    return 201, self.create(patch, from_apply_name=name)
                raise ApiError(400, "BadRequest", "an apply patch must be a JSON object")
        else:
            current = self.get(name)
        if ctype in ("application/merge-patch+json", "application/strategic-merge-patch+json",
                     "application/apply-patch+yaml"):
            if not isinstance(patch, dict):
                raise ApiError(400, "BadRequest", "a merge patch must be a JSON object")
            result = k8s_schema.merge_patch(current, patch)
            precondition = ((patch.get("metadata") or {}).get("resourceVersion"))
        elif ctype == "application/json-patch+json":
            try:
                result = k8s_schema.json_patch(current, patch)
            except ValueError as e:
                raise ApiError(422, "Invalid", f"the server rejected our request due to an error in our request: {e}")
            precondition = None
            if (result.get("metadata") or {}).get("resourceVersion") != current["metadata"]["resourceVersion"]:
                precondition = (result.get("metadata") or {}).get("resourceVersion")
        else:
            raise ApiError(415, "UnsupportedMediaType", f"the body of the request was in an unknown format - "
                           f"accepted media types include: application/json-patch+json, "
                           f"application/merge-patch+json, application/apply-patch+yaml, "
                           f"application/strategic-merge-patch+json")
        if not isinstance(result, dict):
            raise ApiError(422, "Invalid", "the patched object is not a JSON object")
        self.check_type(result)
        self.fill_namespace(result.setdefault("metadata", {}))
        if precondition:
            result["metadata"]["resourceVersion"] = precondition
        return 200, self.commit_update(name, result, sub, precondition)

    def delete(self, name):
        with self.store.cond:
            key = self.key(name)
            old = self.store.objects.get(key)
            if old is None:
                raise self.not_found(name)
            new = copy.deepcopy(old)
            if old["metadata"].get("finalizers"):
                if old["metadata"].get("deletionTimestamp"):
                    return new
                new["metadata"]["deletionTimestamp"] = now_rfc3339()
                new["metadata"]["resourceVersion"] = self.store._bump()
                self.store.objects[key] = new
                self.store.record("MODIFIED", self.plural, old, new)
                return copy.deepcopy(new)
            del self.store.objects[key]
            new["metadata"]["resourceVersion"] = self.store._bump()
            self.store.record("DELETED", self.plural, old, new)
            return new


# ----- control endpoint --------------------------------------------------------------------------

class ControlHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"{}")

    def do_GET(self):
        app = self.server.app
        if self.path == "/dump":
            with app.store.cond:
                objs = [copy.deepcopy(o) for _, o in sorted(app.store.objects.items(), key=lambda kv: [x or "" for x in kv[0]])]
                self.reply(200, {"resourceVersion": str(app.store.rv), "objects": objs})
        elif self.path == "/requests":
            with app.lock:
                self.reply(200, [dict(e) for e in app.log])
        elif self.path == "/healthz":
            self.reply(200, {"ok": True})
        else:
            self.reply(404, {"error": "unknown control path"})

    def do_POST(self):
        app = self.server.app
        body = self.body()
        if self.path == "/faults":
            with app.lock:
                app.faults.append(Fault(body))
            self.reply(200, {"ok": True})
        elif self.path == "/compact":
            app.store.compact(bool(body.get("close_watches")))
            self.reply(200, {"ok": True, "resourceVersion": str(app.store.rv)})
        elif self.path == "/reset":
            app.reset()
            self.reply(200, {"ok": True})
        else:
            self.reply(404, {"error": "unknown control path"})

    def do_DELETE(self):
        app = self.server.app
        with app.lock:
            if self.path == "/faults":
                app.faults.clear()
            elif self.path == "/requests":
                app.log.clear()
            else:
                return self.reply(404, {"error": "unknown control path"})
        self.reply(200, {"ok": True})


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass  # TLS failures and dropped clients are what tests provoke


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cert", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--token-file", required=True)
    p.add_argument("--client-ca", help="also accept client certificates signed by this CA")
    p.add_argument("--reference", default=os.path.join(here, "../../../../shared/reference/kubernetes"))
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--control-port", type=int, default=0)
    p.add_argument("--bookmark-interval", type=float, default=1.0, help="seconds between BOOKMARK events")
    p.add_argument("--history", type=int, default=1000, help="watch events retained")
    p.add_argument("--watch-timeout", type=float, default=1800.0, help="longest watch, seconds")
    args = p.parse_args()

    app = Server(args)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(args.cert, args.key)
    if args.client_ca:
        ctx.load_verify_locations(args.client_ca)
        ctx.verify_mode = ssl.CERT_OPTIONAL
    api = QuietServer((args.host, args.port), Handler)
    # Handshake in the handler thread (Handler.setup), so a bad client never blocks accept().
    api.socket = ctx.wrap_socket(api.socket, server_side=True, do_handshake_on_connect=False)
    api.app = app
    control = QuietServer(("127.0.0.1", args.control_port), ControlHandler)
    control.app = app
    threading.Thread(target=control.serve_forever, daemon=True).start()
    print(json.dumps({"port": api.server_address[1], "control_port": control.server_address[1]}), flush=True)
    try:
        api.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
