#!/usr/bin/env bash
# Configures and builds idlegrid into build/ (Ninja, RelWithDebInfo).
# With arguments, builds only those targets (the demo needs just `idlegrid`,
# which pulls in the benchmark programs it ships); without, everything.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build -j"$(nproc)" "$@"
