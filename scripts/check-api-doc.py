#!/usr/bin/env python3
"""Checks docs/api.md against the code it documents: every route the HTTPS
API registers (src/api/http_api.cc) is in the table and nothing else is, and
every message and gRPC method the table names exists in the proto. Exit 1
naming each difference. ctest: api_doc."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLACEHOLDERS = [(r"([A-Za-z0-9-]+)", "{id}"), (r"(sha256:[0-9a-f]{64})", "{digest}")]


def routes_in_code():
    text = open(os.path.join(ROOT, "src/api/http_api.cc"), encoding="utf-8").read()
    out = set()
    for method, raw, plain in re.findall(r'server_->(Get|Post|Put|Delete)\(\s*(?:R"\((.*?)\)"|"([^"]*)")', text):
        path = raw or plain
        for pattern, name in PLACEHOLDERS:
            path = path.replace(pattern, name)
        out.add((method.upper(), path))
    return out


def table_rows():
    rows = []
    for line in open(os.path.join(ROOT, "docs/api.md"), encoding="utf-8"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[0] in ("GET", "POST", "PUT", "DELETE"):
            rows.append(cells)
    return rows


def main():
    proto = open(os.path.join(ROOT, "proto/idlegrid/v1/idlegrid.proto"), encoding="utf-8").read()
    messages = set(re.findall(r"^\s*message (\w+)", proto, re.M))
    methods = set(re.findall(r"^\s*rpc (\w+)\(", proto, re.M))
    rows = table_rows()
    documented = {(r[0], r[1].strip("`")) for r in rows}
    code = routes_in_code()
    problems = []
    for method, path in sorted(code - documented):
        problems.append(f"{method} {path} is served (src/api/http_api.cc) but not in docs/api.md")
    for method, path in sorted(documented - code):
        problems.append(f"{method} {path} is in docs/api.md but not served")
    for r in rows:
        for name in re.findall(r"`([A-Z]\w+)`", r[2] + " " + r[3]):
            if name not in messages:
                problems.append(f"{r[0]} {r[1]}: message {name} is not in the proto")
        for name in re.findall(r"`(\w+)`", r[4]):
            if name not in methods:
                problems.append(f"{r[0]} {r[1]}: rpc {name} is not in the proto")
    if not code:
        problems.append("no route found in src/api/http_api.cc: the pattern no longer matches the code")
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"check-api-doc: {len(code)} routes documented, their messages and methods in the proto")
    return 0


if __name__ == "__main__":
    sys.exit(main())
