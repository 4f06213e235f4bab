#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite: unit tests
# of the pure cores, the SQLite store (with crash injection), the podman
# runtime, and end-to-end tests with a real coordinator and agents.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
"$repo/scripts/install-deps.sh"
"$repo/scripts/build.sh"
ctest --test-dir build --output-on-failure -j2 --timeout 300
