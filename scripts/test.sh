#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite: unit tests
# of the pure cores, the store on SQLite and on a throwaway PostgreSQL cluster
# (with crash injection), the podman runtime, and end-to-end tests with a real
# coordinator and agents.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
"$repo/scripts/install-deps.sh"
"$repo/scripts/build.sh"
# The PostgreSQL store tests share one throwaway cluster for the run.
pgdir=$(mktemp -d /tmp/igpg.XXXXXX)
trap '"$repo/scripts/pg-test-cluster.sh" stop "$pgdir" >/dev/null 2>&1 || true' EXIT
IDLEGRID_TEST_PG_URL=$("$repo/scripts/pg-test-cluster.sh" start "$pgdir" $$)
export IDLEGRID_TEST_PG_URL
# Skips are counted: every skipped test is printed with its reason, and one
# that must run here (any not in tests/may-skip.txt) fails the run.
rc=0
ctest --test-dir build --output-on-failure -j2 --timeout 300 --output-junit "$repo/build/ctest-junit.xml" || rc=$?
"$repo/scripts/skip-report.py" "$repo/build/ctest-junit.xml" "$repo/tests/may-skip.txt" || { [ "$rc" -ne 0 ] || rc=1; }
exit "$rc"
