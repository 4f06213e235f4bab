#!/usr/bin/env python3
"""Checks the thread-safety annotations (src/common/thread_annotations.h).

Every source file that locks an annotated Mutex or declares a member
IG_GUARDED_BY one is compiled by clang with -Wthread-safety as an error,
syntax only (nothing is generated), with the flags the build used
(BUILD/compile_commands.json). A guarded member touched without its lock, a
function that needs a lock called without it, or a lock taken twice fails.

Usage: scripts/check-thread-safety.py [BUILD_DIR]   (default: build)
"""
import json
import os
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
PATTERN = re.compile(r"IG_GUARDED_BY|IG_REQUIRES|IG_EXCLUDES|MutexLock|IG_PT_GUARDED_BY")
CLANG = next((c for c in ("clang++-14", "clang++") if subprocess.run(["which", c], capture_output=True).returncode == 0), None)


def annotated_headers():
    out = set()
    for dirpath, _, files in os.walk(os.path.join(ROOT, "src")):
        for f in files:
            path = os.path.join(dirpath, f)
            if f.endswith(".h") and PATTERN.search(open(path, encoding="utf-8").read()):
                out.add(os.path.relpath(path, os.path.join(ROOT, "src")))
    return out


def uses_annotations(path, headers):
    text = open(path, encoding="utf-8").read()
    if PATTERN.search(text):
        return True
    return any('#include "%s"' % h in text for h in headers)


def clang_command(entry):
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    out = [CLANG]
    skip = False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD", "-w") or a.startswith("-fno-canonical"):
            continue
        out.append(a)
    return out + ["-fsyntax-only", "-Wno-everything", "-Wthread-safety", "-Werror=thread-safety"]


def main():
    if CLANG is None:
        print("check-thread-safety: no clang++ on this machine (apt-get install clang)", file=sys.stderr)
        return 2
    db = os.path.join(BUILD, "compile_commands.json")
    if not os.path.exists(db):
        print("check-thread-safety: %s is missing: configure the build first" % db, file=sys.stderr)
        return 2
    headers = annotated_headers()
    entries = [e for e in json.load(open(db))
               if e["file"].startswith(os.path.join(ROOT, "src") + os.sep) and e["file"].endswith(".cc")
               and os.path.exists(e["file"])  # a file removed since the build was configured
               and uses_annotations(e["file"], headers)]

    def check(entry):
        r = subprocess.run(clang_command(entry), cwd=entry["directory"], capture_output=True, text=True)
        return entry["file"], r.returncode, r.stderr

    failed = 0
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for path, rc, err in pool.map(check, entries):
            if rc != 0:
                failed += 1
                sys.stderr.write(err)
    print("check-thread-safety: %d file(s) checked with clang -Wthread-safety, %d failed" % (len(entries), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
