#!/usr/bin/env bash
# The main job, end to end on one machine: installs what is missing, builds,
# starts a local grid (a coordinator and two agents, each agent as its own
# unprivileged user with rootless podman), pushes a FROM scratch image, runs a
# parameter sweep and prints where each task ran and what it computed.
# KEEP_GRID=1 leaves the grid running afterwards.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
"$repo/scripts/install-deps.sh"
"$repo/scripts/build.sh" idlegrid  # only what the demo runs: the first result comes before the test build

data="$repo/idlegrid-data"
bin="$repo/build/idlegrid"
rm -rf "$data"
mkdir -p "$data"
# shellcheck source=scripts/grid-lib.sh
source "$repo/scripts/grid-lib.sh"
trap grid_cleanup EXIT

echo "== starting coordinator"
# --allow-simulated-gpus: the demo's agents add simulated devices (flagged as
# such everywhere) so the fleet looks heterogeneous on a machine without GPUs.
# Heartbeats every second (timeout 3 s) so the checkpoint demo below is quick.
start_coordinator --allow-simulated-gpus --heartbeat-interval-ms 1000
prepare_agents 2
start_agent 1 "$join" --simulate-gpu "RTX 4090:24GiB:8.9"
start_agent 2 "$join" --simulate-gpu "RTX 3060:12GiB:8.6"
wait_agents_ready 2
wait_schedulable 2
"$bin" nodes

echo "== building the sample image (FROM scratch, static Monte Carlo simulation)"
"$repo/scripts/build-image.sh" examples/sweep/sim.c localhost/pi-sim:demo "$data/pi-sim.tar" >/dev/null
image=$("$bin" image push "$data/pi-sim.tar")
echo "pushed image $image"
sed "s/IMAGE/$image/" examples/sweep/job.yaml.in > "$data/job.yaml"

echo "== submitting an 8-task parameter sweep"
job=$("$bin" submit "$data/job.yaml")
"$bin" status "$job" --wait >/dev/null || true
"$bin" status "$job"
"$bin" fetch "$job" "$data/results" >/dev/null

echo "== results"
load_node_names
"$bin" status "$job" --json | python3 -c '
import json, sys
job = json.load(sys.stdin)
for t in job["tasks"]:
    a = t["attempts"][-1]
    print(t.get("index", 0), a["nodeId"], t["state"])
' | while read -r idx node state; do
  result=$(cat "$data/results/task-$idx/result.txt" 2>/dev/null || echo "(no result)")
  printf 'task %-2s ran on %-7s (%s) %-9s %s\n' "$idx" "${names[$node]:-?}" "$node" "$state" "$result"
done
state=$("$bin" status "$job" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
[ "$state" = SUCCEEDED ] || { echo "job ended $state"; exit 1; }
echo "== every sweep task succeeded; outputs verified by sha256 in $data/results"

echo "== checkpoint/resume: a long run (checkpoint every second) whose node is killed midway"
sed "s/IMAGE/$image/" examples/sweep/long-job.yaml.in > "$data/long-job.yaml"
long=$("$bin" submit "$data/long-job.yaml")
deadline=$((SECONDS + 120))
while :; do
  read -r node st saved < <("$bin" status "$long" --json | python3 -c '
import json, sys
t = json.load(sys.stdin)["tasks"][0]
a = (t.get("attempts") or [{}])[-1]
print(a.get("nodeId", "-"), a.get("state", "-"), a.get("checkpoints", 0))')
  [ "$st" = RUNNING ] && [ "$saved" -ge 3 ] && break
  ((SECONDS < deadline)) || { echo "the long run never checkpointed" >&2; "$bin" status "$long" >&2; exit 1; }
  sleep 0.5
done
victim=${names[$node]:-}
case "$victim" in agent1) victim_pid=${pids[1]} ;; agent2) victim_pid=${pids[2]} ;; *) echo "unknown node $node" >&2; exit 1 ;; esac
echo "kill -9 $victim (pid $victim_pid): it runs the task and has saved $saved checkpoints"
kill -9 "$victim_pid"
"$bin" status "$long" --wait >/dev/null || true
"$bin" status "$long"
"$bin" logs "$long" | grep -E "resumed|pi ~=" || true
"$bin" fetch "$long" "$data/long-results" >/dev/null
gcc -O2 -o "$data/sim-host" examples/sweep/sim.c
IDLEGRID_TASK_INDEX=0 "$data/sim-host" 30000000 "$data" >/dev/null 2>&1
if cmp -s "$data/result.txt" "$data/long-results/task-0/result.txt"; then
  echo "resumed result equals an uninterrupted run: $(cat "$data/result.txt")"
else
  echo "resumed result differs from an uninterrupted run:" >&2
  cat "$data/result.txt" "$data/long-results/task-0/result.txt" >&2
  exit 1
fi
echo "== done: every task succeeded; the interrupted run resumed from its checkpoint"
