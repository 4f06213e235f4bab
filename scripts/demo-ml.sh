#!/usr/bin/env bash
# The ML example end to end on one machine (examples/ml-sweep, docs/python.md):
# installs what is missing, builds, makes the Debian base image with
# PyTorch and scikit-learn (`idlegrid image base`, once: kept in podman's
# storage), starts a local grid of a coordinator and two agents of two
# provider accounts, builds and pushes the example's image
# (`idlegrid image build`), runs its 16-point sweep with every point
# replicated on both providers, and prints the table gather.py makes with the
# Python SDK. Then point 0 is trained on the host itself and compared, and
# one long point's node is killed midway: it resumes on the other from its
# checkpoint and ends exactly as the same point run again uninterrupted.
# KEEP_GRID=1 leaves the grid running; REBUILD_BASE=1 remakes the base image;
# SKIP_BUILD=1 skips installing and building (done already).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
if [ "${SKIP_BUILD:-0}" != 1 ]; then  # SKIP_BUILD=1: installed and built already
  "$repo/scripts/install-deps.sh" --ml
  "$repo/scripts/build.sh" idlegrid idlegrid_python_stubs
fi

data="$repo/idlegrid-data/ml"  # beside demo.sh's (ignored by git)
base=idlegrid-ml
rm -rf "$data"
mkdir -p "$data"
# Copies (the coordinator finds the readiness benchmarks beside its binary):
# a rebuild of build/ while the demo runs does not pull them away.
mkdir -p "$data/bin"
install -m 755 "$repo/build/idlegrid" "$repo/build/idlegrid-bench" "$repo/build/idlegrid-gpu-bench" "$data/bin/"
bin="$data/bin/idlegrid"
# shellcheck source=scripts/grid-lib.sh
source "$repo/scripts/grid-lib.sh"
trap grid_cleanup EXIT
t0=$SECONDS
phase() { echo "== [$((SECONDS - t0)) s] $*"; }

if [ "${REBUILD_BASE:-0}" = 1 ] || ! podman image exists "localhost/$base:latest"; then
  phase "making the base image $base (Debian bookworm, python3-torch, python3-sklearn; a few minutes the first time)"
  "$bin" image base "$base" --packages python3-torch,python3-sklearn
else
  phase "base image localhost/$base:latest is already in podman's storage (REBUILD_BASE=1 remakes it)"
fi

phase "starting coordinator"
# Heartbeats every second (timeout 3 s) so that the killed node below is soon known lost.
start_coordinator --heartbeat-interval-ms 1000
# verification: replicate runs each point on two provider accounts: one per agent.
tokens=()
for n in 1 2; do
  "$bin" account create "provider$n" --role provider >/dev/null
  tokens[n]=$("$bin" join-token create --provider "provider$n")
done
prepare_agents 2
start_agent 1 "${tokens[1]}"
start_agent 2 "${tokens[2]}"
wait_agents_ready 2
wait_schedulable 2
"$bin" nodes

phase "building the example's image (FROM $base, offline) and pushing it"
image=$("$bin" image build examples/ml-sweep --name ml-sweep)
echo "pushed $image"
sed "s|^image: .*|image: $image|" examples/ml-sweep/job.yaml > "$data/job.yaml"

phase "running the 16-point sweep (each point on both providers) and gathering the results with the SDK"
export PYTHONPATH="$repo/sdk/python:$repo/build/gen/python" IDLEGRID_BIN="$bin"
/usr/bin/python3 examples/ml-sweep/gather.py "$data/job.yaml" | tee "$data/table.txt"
job=$(awk '$1 == "job" {print $2}' "$data/table.txt" | tail -1)
"$bin" status "$job" | sed -n 1,6p  # the first task's verification and provenance
"$bin" fetch "$job" "$data/results" >/dev/null

phase "point 0 trained on the host itself, bare (python3-torch of this machine)"
read -r lr hidden seed epochs < <(/usr/bin/python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
print(m["lr"], m["hidden"], m["seed"], m["epochs"])' "$data/results/task-0/metrics.json")
/usr/bin/python3 examples/ml-sweep/train.py --lr "$lr" --hidden "$hidden" --seed "$seed" --epochs "$epochs" \
  --out "$data/host-0" >/dev/null
echo "grid: $(cat "$data/results/task-0/metrics.json")"
echo "host: $(cat "$data/host-0/metrics.json")"
if cmp -s "$data/results/task-0/metrics.json" "$data/host-0/metrics.json"; then
  echo "identical"
else
  # Same torch, but not necessarily the same BLAS: the image has OpenBLAS
  # (python3-scipy brings it), a host may use the reference libblas.
  echo "they differ in the last digits: this host's BLAS is not the image's ($(readlink -f /etc/alternatives/libblas.so.3-x86_64-linux-gnu 2>/dev/null || echo unknown))"
fi

phase "checkpoint/resume: one long point (1000 epochs, a checkpoint uploaded every second) whose node is killed"
cat >"$data/long.yaml" <<EOF
apiVersion: idlegrid/v1
name: ml-long
image: $image
command: ["python3", "/app/train.py"]
args: ["--lr", "0.03", "--hidden", "64", "--seed", "1", "--epochs", "1000", "--out", "/out"]
resources: {cpu: 1, memory: 1Gi}
output: /out
checkpoint: {path: /ckpt, interval: 1s}
runTimeout: 10m
retries: 2
idempotent: true
verification: none
EOF
long=$("$bin" submit "$data/long.yaml")
deadline=$((SECONDS + 180))
while :; do
  read -r node st saved < <("$bin" status "$long" --json | /usr/bin/python3 -c '
import json, sys
t = json.load(sys.stdin)["tasks"][0]
a = (t.get("attempts") or [{}])[-1]
print(a.get("nodeId", "-"), a.get("state", "-"), a.get("checkpoints", 0))')
  [ "$st" = RUNNING ] && [ "$saved" -ge 3 ] && break
  ((SECONDS < deadline)) || { echo "the long point never checkpointed" >&2; "$bin" status "$long" >&2; exit 1; }
  sleep 0.5
done
load_node_names
victim=${names[$node]:-}
case "$victim" in agent1) victim_pid=${pids[1]} ;; agent2) victim_pid=${pids[2]} ;; *) echo "unknown node $node" >&2; exit 1 ;; esac
echo "kill -9 $victim (pid $victim_pid): it runs the point and has uploaded $saved checkpoints"
kill -9 "$victim_pid"
"$bin" status "$long" --wait >/dev/null || true
"$bin" status "$long" | sed -n 1,5p
"$bin" logs "$long" | grep -E "resumed from epoch" || { echo "the point did not resume from a checkpoint" >&2; exit 1; }
"$bin" fetch "$long" "$data/long-results" >/dev/null 2>&1
echo "== the same point again, uninterrupted, on the agent left"
again=$("$bin" submit "$data/long.yaml")
"$bin" status "$again" --wait >/dev/null || true
"$bin" fetch "$again" "$data/long-again" >/dev/null 2>&1
echo "resumed:       $(cat "$data/long-results/task-0/metrics.json")"
echo "uninterrupted: $(cat "$data/long-again/task-0/metrics.json")"
if cmp -s "$data/long-results/task-0/metrics.json" "$data/long-again/task-0/metrics.json"; then
  echo "identical: the resumed run ended exactly as an uninterrupted one"
else
  echo "the resumed run differs from an uninterrupted one" >&2
  exit 1
fi
phase "done; outputs verified by sha256 in $data/results and $data/long-results"
