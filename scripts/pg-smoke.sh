#!/usr/bin/env bash
# Manual check of the PostgreSQL store end to end: a throwaway cluster, two
# coordinators started at the same moment on one database (they migrate it
# once between them), a job submitted to the first and read back from the
# second. Prints what it does; exits non-zero on the first failure.
#
#   scripts/pg-smoke.sh [BUILD_DIR]     (default: build)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}
bin=$build/idlegrid
[ -x "$bin" ] || { echo "no $bin; build first" >&2; exit 1; }

work=$(mktemp -d /tmp/igpgsmoke.XXXXXX)
pg=$(mktemp -d /tmp/igpg.XXXXXX)  # apart: the server's user must reach it
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  "$repo/scripts/pg-test-cluster.sh" stop "$pg" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

server=$("$repo/scripts/pg-test-cluster.sh" start "$pg")
psql -X -q "$server" -c "CREATE DATABASE idlegrid"
db=${server/\/postgres\?//idlegrid?}
echo "database: $db"

for c in a b; do
  "$bin" coordinator --data-dir "$work/$c" --shared-dir "$work/shared" --db "$db" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
    >"$work/$c.log" 2>&1 &
  pids+=($!)
done
for c in a b; do
  for _ in $(seq 1 300); do
    grep -q '^ready ' "$work/$c.log" 2>/dev/null && break
    sleep 0.1
  done
  grep '^ready ' "$work/$c.log" || { cat "$work/$c.log" >&2; echo "coordinator $c did not start" >&2; exit 1; }
done
echo "schema version: $(psql -X -At "$db" -c 'SELECT version FROM idlegrid_schema')"

# No agent builds images here: register one straight in the shared store.
digest="sha256:$(printf 'smoke' | sha256sum | cut -d' ' -f1)"
psql -X -q "$db" -c "INSERT INTO images VALUES ('$digest', '$digest', '$digest', 0)"
cat >"$work/job.yaml" <<EOF
apiVersion: idlegrid/v1
name: pg-smoke
image: smoke@$digest
command: ["/bin/true"]
resources: {cpu: 1, memory: 64Mi}
array: {count: 3}
EOF
job=$("$bin" submit "$work/job.yaml" --config "$work/a/client.yaml" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
echo "submitted to coordinator a: $job"
echo "coordinator b sees:"
"$bin" status "$job" --config "$work/b/client.yaml"
"$bin" jobs --config "$work/b/client.yaml" | grep -q "$job"
echo "rows in the database: $(psql -X -At "$db" -c "SELECT COUNT(*) FROM tasks WHERE job_id = '$job'") tasks"
echo "OK"
