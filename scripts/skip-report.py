#!/usr/bin/env python3
"""Counts the tests a ctest run skipped, prints each with its reason, and
fails when one skipped that must run on the README's machine.

    skip-report.py JUNIT_XML [MAY_SKIP_FILE]

JUNIT_XML is ctest's --output-junit file. MAY_SKIP_FILE (default
tests/may-skip.txt) lists, one per line, a glob over ctest names and after it
why that test may skip on the README's machine (Debian 12, root, 2 cores, no
GPU). Every other test must run: a skip outside that list (podman broken,
PostgreSQL missing, a tool not installed) fails the run instead of leaving
it green. Exit status: 0 when every skip is allowed, 1 otherwise, 2 on a
missing or unreadable report.
"""
import fnmatch
import os
import re
import sys
import xml.etree.ElementTree as ET


def skip_reason(output):
    """The reason GoogleTest printed ("file:line: Skipped" then the message), or
    the last non-empty line of the output."""
    lines = (output or "").splitlines()
    for i, line in enumerate(lines):
        if re.search(r": Skipped$", line.strip()):
            reason = []
            for follow in lines[i + 1:]:
                if follow.startswith("[  SKIPPED ]"):
                    break
                if follow.strip():
                    reason.append(follow.strip())
            if reason:
                return " ".join(reason)
    rest = [l.strip() for l in lines if l.strip() and not l.startswith("[")]
    return rest[-1] if rest else "(no reason printed)"


def read_allowed(path):
    allowed = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            glob, _, why = line.partition(" ")
            if not why.strip():
                sys.exit(f"{path}:{n}: a pattern needs a reason after it: {line!r}")
            allowed.append((glob, why.strip()))
    return allowed


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    report = sys.argv[1]
    may_skip = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "may-skip.txt")
    try:
        root = ET.parse(report).getroot()
    except (OSError, ET.ParseError) as e:
        print(f"skip-report: cannot read {report}: {e}", file=sys.stderr)
        return 2
    allowed = read_allowed(may_skip)
    skipped = []
    for case in root.iter("testcase"):
        status = case.get("status", "")
        if status not in ("skipped", "notrun", "disabled") and case.find("skipped") is None:
            continue
        out = case.find("system-out")
        skipped.append((case.get("name", "?"), status or "skipped", skip_reason(out.text if out is not None else "")))
    bad = []
    print(f"{len(skipped)} test(s) skipped:")
    for name, status, reason in sorted(skipped):
        rule = next((why for glob, why in allowed if fnmatch.fnmatchcase(name, glob)), None)
        mark = "allowed" if rule else "MUST RUN HERE"
        print(f"  {name} [{status}, {mark}]: {reason}")
        if rule is None:
            bad.append(name)
    if bad:
        print(f"skip-report: {len(bad)} test(s) skipped that must run on this machine "
              f"(not in {os.path.relpath(may_skip)}): {', '.join(bad)}; mend what each reason names "
              f"(scripts/install-deps.sh installs the tools), or, if this machine truly cannot run it, "
              f"add it to that file with why", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
