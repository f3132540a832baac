#!/usr/bin/env python3
"""A tiny kubectl for the end-to-end tests, against the test API server over verified TLS.

    kube.py --kubeconfig-env  (reads KUBE_SERVER, KUBE_CA, KUBE_TOKEN from the environment)
    kube.py get PATH                      prints the object (exit 1 with the Status on an error)
    kube.py create PATH [FILE|-]          POST the JSON object
    kube.py put PATH [FILE|-]             PUT
    kube.py delete PATH
    kube.py count PATH                    number of items of a list
    kube.py field PATH EXPR               a Python expression over `o` (the object), printed as JSON
Paths are API paths (/apis/resource.k8s.io/v1/...).
"""
import json
import os
import ssl
import sys
import urllib.error
import urllib.request


def call(method, path, body=None):
    context = ssl.create_default_context(cafile=os.environ["KUBE_CA"])
    request = urllib.request.Request(os.environ["KUBE_SERVER"] + path, method=method,
                                     data=None if body is None else json.dumps(body).encode())
    request.add_header("Authorization", "Bearer " + os.environ["KUBE_TOKEN"])
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def body_of(argv):
    source = argv[0] if argv else "-"
    return json.load(sys.stdin if source == "-" else open(source))


def main(argv):
    verb, path, rest = argv[0], argv[1], argv[2:]
    if verb == "get":
        code, obj = call("GET", path)
    elif verb == "create":
        code, obj = call("POST", path, body_of(rest))
    elif verb == "put":
        code, obj = call("PUT", path, body_of(rest))
    elif verb == "delete":
        code, obj = call("DELETE", path)
    elif verb == "count":
        code, obj = call("GET", path)
        if code == 200:
            print(len(obj.get("items", [])))
            return 0
    elif verb == "field":
        code, obj = call("GET", path)
        if code == 200:
            print(json.dumps(eval(rest[0], {}, {"o": obj})))  # noqa: S307 - test tool, our own expressions
            return 0
    else:
        print("unknown verb " + verb, file=sys.stderr)
        return 2
    print(json.dumps(obj))
    return 0 if code < 300 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
