#!/usr/bin/env bash
# bench/dashboard: what the web dashboard costs on a large job. Starts a local
# coordinator (no agent: the tasks wait, so the figures are the page's, not
# the scheduler's), submits one array job of N tasks (default 10,000), opens
# its page in headless Chromium (bench/dashboard_bench.py) and prints:
#   - time until the job page is interactive (summary and first page of tasks
#     drawn): on a cold load of the page, and on moving to it from the job list;
#   - bytes moved per 2 s poll (Resource Timing transferSize and
#     encodedBodySize), while nothing changes and while tasks on the page on
#     screen end (the bench cancels a few each poll).
# Targets (issue 30): interactive < 1 s, < 50 KB per poll. Prints figures,
# asserts nothing. Uses ${BUILD_DIR:-build}/idlegrid (it never builds it);
# needs podman (to build the test image), chromium, chromium-driver and
# python3-selenium (scripts/install-deps.sh). See docs/dashboard.md.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}
[[ $build = /* ]] || build=$repo/$build

tasks=10000 polls=10
usage() {
  echo "usage: bench/dashboard.sh [--tasks N] [--polls N]   env: BUILD_DIR, KEEP_TMP=1" >&2
  exit 2
}
while (($#)); do
  case $1 in
    --tasks) tasks=$2; shift ;;
    --polls) polls=$2; shift ;;
    *) usage ;;
  esac
  shift
done
[[ $tasks =~ ^[1-9][0-9]*$ && $polls =~ ^[1-9][0-9]*$ ]] || usage
[ -x "$build/idlegrid" ] || { echo "$build/idlegrid missing: build first (scripts/build.sh)" >&2; exit 2; }
for tool in /usr/bin/chromium /usr/bin/chromedriver /usr/bin/python3 podman gcc; do
  command -v "$tool" >/dev/null || { echo "$tool missing: scripts/install-deps.sh" >&2; exit 2; }
done

tmp=$(mktemp -d /var/tmp/idlegrid-dashboard.XXXXXX)
install -p -m 755 "$build/idlegrid" "$tmp/idlegrid"  # a rebuild during the run changes nothing
bin=$tmp/idlegrid
coordinator=""
status=1
cleanup() {
  set +e
  if [ -n "$coordinator" ]; then kill "$coordinator" 2>/dev/null; wait "$coordinator" 2>/dev/null; fi
  if [ "${KEEP_TMP:-0}" = 1 ] || [ "$status" != 0 ]; then echo "logs kept in $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$bin" coordinator --data-dir "$tmp/coordinator" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
  >"$tmp/coordinator.out" 2>"$tmp/coordinator.err" &
coordinator=$!
deadline=$((SECONDS + 30))
until grep -q '^ready' "$tmp/coordinator.out" 2>/dev/null; do
  ((SECONDS < deadline)) || { echo "the coordinator did not start:" >&2; tail -n 20 "$tmp/coordinator.err" >&2; exit 1; }
  sleep 0.2
done
http=$(sed -n 's/^ready .*http=\([^ ]*\).*/\1/p' "$tmp/coordinator.out")
export IDLEGRID_CONFIG=$tmp/coordinator/client.yaml
token=$(sed -n 's/^token: *//p' "$IDLEGRID_CONFIG" | tr -d '"')

"$repo/scripts/build-image.sh" "$repo/tests/e2e/testprog.c" localhost/idlegrid-dashboard:bench "$tmp/image.tar" >/dev/null
image=$("$bin" image push "$tmp/image.tar")
cat >"$tmp/job.yaml" <<YAML
apiVersion: idlegrid/v1
name: dashboard-bench
image: bench@$image
command: ["/sim", "exit", "0"]
resources: {cpu: 1, memory: 64Mi, pids: 16}
array: {count: $tasks}
YAML
job=$("$bin" submit "$tmp/job.yaml" | head -n 1)

echo "== dashboard: job $job of $tasks tasks; $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); commit $(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)"
/usr/bin/python3 "$repo/bench/dashboard_bench.py" --url "https://$http" --token "$token" --job "$job" \
  --tasks "$tasks" --polls "$polls"
status=0
