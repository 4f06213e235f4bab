#!/usr/bin/env bash
# Builds test programs with clang's sanitizers and runs them; any report fails.
#
# Usage: scripts/sanitize.sh asan|tsan [TARGET ...]
#   asan: AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/)
#   tsan: ThreadSanitizer (build-tsan/)
#   TARGET: ctest-built test programs (verify_test, workflow_test,
#   coordinator_test, agent_test, e2e_test, ...). Default for asan: the pure
#   cores' suites, which build in minutes; for tsan: coordinator_test and
#   agent_test, the concurrency tests (a whole build: ~40 min on 2 cores).
#
# Which run on every CI run and which on demand: docs/reliability.md.
# Debian's gRPC, protobuf and OpenSSL are not instrumented: ASan still checks
# every access idlegrid's own code makes; TSan may report races inside them,
# which tests/tsan.supp names and suppresses (each with why).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
kind=${1:-}
shift || true
case "$kind" in
  asan)
    flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    default=(verify_test workflow_test)
    export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:strict_string_checks=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    ;;
  tsan)
    flags="-fsanitize=thread -fno-omit-frame-pointer"
    default=(coordinator_test agent_test)
    export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$repo/tests/tsan.supp}
    ;;
  *)
    echo "usage: $0 asan|tsan [TARGET ...]" >&2
    exit 2
    ;;
esac
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${default[@]}")
for tool in clang-14 clang++-14 cmake ninja; do
  command -v "$tool" >/dev/null || { echo "sanitize.sh: $tool is missing (apt-get install clang-14 cmake ninja-build)" >&2; exit 2; }
done
build="$repo/build-$kind"
CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >/dev/null
ninja -C "$build" -j"$(nproc)" "${targets[@]}"
rc=0
for t in "${targets[@]}"; do
  start=$(date +%s)
  if "$build/$t" --gtest_brief=1 >"$build/$t.log" 2>&1; then
    echo "$kind $t: clean in $(( $(date +%s) - start )) s: $(grep -m1 '^\[  PASSED  \]' "$build/$t.log" || echo '(no gtest summary)')"
  else
    rc=1
    echo "$kind $t: FAILED or reported (see $build/$t.log):"
    grep -m5 -E 'ERROR: (Address|Thread|UndefinedBehavior)Sanitizer|runtime error|WARNING: ThreadSanitizer|FAILED' "$build/$t.log" || tail -5 "$build/$t.log"
  fi
done
exit "$rc"
