#!/usr/bin/env bash
# Fails, naming each file and line, when a C++ source under src/, tests/ or
# bench/ is not as clang-format formats it (.clang-format at the root).
# Fix with: scripts/check-format.sh --fix
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format is missing (apt-get install clang-format)" >&2; exit 2; }
mapfile -t files < <(find src tests bench -type f \( -name '*.cc' -o -name '*.h' \) | sort)
if [ "${1:-}" = --fix ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
clang-format --dry-run -Werror "${files[@]}"
echo "check-format: ${#files[@]} file(s) formatted as .clang-format says"
