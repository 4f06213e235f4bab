#!/usr/bin/env bash
# Fuzzes every parser of strangers' bytes (tests/fuzz/*_fuzz.cc) with
# libFuzzer, ASan and UBSan, SECONDS each (default 60).
#
# Usage: scripts/fuzz.sh [SECONDS] ["TARGET ..."]
#   TARGET: a name of tests/fuzz/<name>_fuzz.cc (manifest, tar, receipt, ...);
#   default: all of them.
#
# Configures a separate clang build in build-fuzz/ (IDLEGRID_FUZZ=ON, every
# library instrumented: tests/fuzz/fuzz.cmake), builds the
# <name>_fuzz targets only, and runs each on its own copy of the committed
# corpus, build-fuzz/corpus/<name>/ (kept between runs; new seeds never
# touch tests/fuzz/corpus/). Crashes, leaks, timeouts and out-of-memory
# inputs land in build-fuzz/crashes/<name>/, libFuzzer's output in
# build-fuzz/logs/<name>.log. Prints one line per target (runs, corpus
# size, crashes) and exits 1 if any target crashed this time.
# Replay one crash: build-fuzz/<name>_fuzz build-fuzz/crashes/<name>/crash-...
# To keep a new seed as a regression test, copy it into tests/fuzz/corpus/<name>/.
#
# The top-level CMakeLists.txt sets RelWithDebInfo's own flags (-O2 -g1),
# which come after CMAKE_CXX_FLAGS: the binaries are -O2 with line tables,
# enough for symbolized reports.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

seconds=${1:-60}
[[ "$seconds" =~ ^[0-9]+$ && "$seconds" -gt 0 ]] || { echo "fuzz.sh: SECONDS must be a positive number, got '$seconds'" >&2; exit 2; }
all=()
for f in tests/fuzz/*_fuzz.cc; do
  n=$(basename "$f" .cc)
  all+=("${n%_fuzz}")
done
if [ -n "${2:-}" ]; then
  read -r -a targets <<<"$2"
  for t in "${targets[@]}"; do
    [ -f "tests/fuzz/${t}_fuzz.cc" ] || { echo "fuzz.sh: no target '$t' (have: ${all[*]})" >&2; exit 2; }
  done
else
  targets=("${all[@]}")
fi

for tool in clang-14 clang++-14 cmake ninja; do
  command -v "$tool" >/dev/null || { echo "fuzz.sh: $tool is missing (apt-get install clang-14 cmake ninja-build)" >&2; exit 2; }
done

build="$repo/build-fuzz"
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -g -O1"
CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIDLEGRID_FUZZ=ON \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" >/dev/null
ninja -C "$build" -j"$(nproc)" "${targets[@]/%/_fuzz}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$build/logs"
marker="$build/logs/.started"
report=()
crashed=0
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  crashes="$build/crashes/$t"
  log="$build/logs/$t.log"
  mkdir -p "$corpus" "$crashes"
  # The committed seeds, added to what earlier runs found (never overwritten).
  cp -n tests/fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null || true
  touch "$marker"
  echo "fuzz.sh: $t for ${seconds}s ..." >&2
  rc=0
  "$build/${t}_fuzz" "$corpus" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$crashes/" >"$log" 2>&1 || rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)
  [ -n "$runs" ] || runs=$(grep -o 'Done [0-9]* runs' "$log" | tail -1 | grep -o '[0-9]\+' || true)
  [ -n "$runs" ] || runs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#' || true)
  size=$(find "$corpus" -type f | wc -l)
  found=$(find "$crashes" -type f -newer "$marker" \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  if [ "$found" -eq 0 ] && [ "$rc" -ne 0 ]; then
    found=1  # died without leaving an input (see the log)
  fi
  [ "$found" -eq 0 ] || crashed=1
  report+=("$(printf '%-20s %12s %8s %8s' "$t" "${runs:-?}" "$size" "$found")")
done
rm -f "$marker"

printf '%-20s %12s %8s %8s\n' target runs corpus crashes
printf '%s\n' "${report[@]}"
if [ "$crashed" -ne 0 ]; then
  echo "fuzz.sh: crashes found: inputs in $build/crashes/<target>/, output in $build/logs/<target>.log" >&2
  exit 1
fi
