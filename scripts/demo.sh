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
pids=()
cleanup() {
  [ "${KEEP_GRID:-0}" = 1 ] && { echo "grid left running (pids ${pids[*]}); data in $data"; return; }
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

wait_for_line() {  # FILE PATTERN SECONDS
  local deadline=$((SECONDS + $3))
  until grep -q "$2" "$1" 2>/dev/null; do
    if ((SECONDS > deadline)); then echo "timed out waiting for '$2' in $1:" >&2; cat "$1" "${1%.out}.err" >&2 || true; exit 1; fi
    sleep 0.2
  done
}

echo "== starting coordinator"
# --allow-simulated-gpus: the demo's agents add simulated devices (flagged as
# such everywhere) so the fleet looks heterogeneous on a machine without GPUs.
# Heartbeats every second (timeout 3 s) so the checkpoint demo below is quick.
"$bin" coordinator --data-dir "$data/coordinator" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
  --allow-simulated-gpus --heartbeat-interval-ms 1000 \
  >"$data/coordinator.out" 2>"$data/coordinator.err" &
pids+=($!)
wait_for_line "$data/coordinator.out" '^ready' 30
read -r _ grpc http ca < "$data/coordinator.out"
grpc=${grpc#grpc=}; ca=${ca#ca=}
join=$(awk '{for (i=1;i<=NF;i++) if ($i=="--join-token") print $(i+1)}' "$data/coordinator/agent-join.txt")
export IDLEGRID_CONFIG="$data/coordinator/client.yaml"

# Agents run as unprivileged users with their own rootless podman storage.
agent_root="$data/agents"
if [ "$(id -u)" -eq 0 ]; then
  for n in 1 2; do
    u="idlegrid-demo$n"
    id "$u" >/dev/null 2>&1 || useradd -m -s /usr/sbin/nologin "$u"
    grep -q "^$u:" /etc/subuid || echo "$u:$((300000 + n * 65536)):65536" >> /etc/subuid
    grep -q "^$u:" /etc/subgid || echo "$u:$((300000 + n * 65536)):65536" >> /etc/subgid
  done
  # The agents must reach their binary and data dir: fall back to /var/tmp if the repo is private.
  if ! runuser -u idlegrid-demo1 -- test -x "$bin"; then agent_root=/var/tmp/idlegrid-demo-agents; fi
fi
rm -rf "$agent_root"; mkdir -p "$agent_root"; chmod 755 "$agent_root"
install -m 755 "$bin" "$agent_root/idlegrid"
for n in 1 2; do
  dir="$agent_root/agent$n"; mkdir -p "$dir"
  if [ "$(id -u)" -eq 0 ]; then
    u="idlegrid-demo$n"; uid=$(id -u "$u"); xdg="/tmp/idlegrid-xdg-$uid"
    mkdir -p "$xdg"; chown "$u" "$xdg" "$dir"; chmod 700 "$xdg"
    # setpriv execs in place: the pid we hold is the agent itself.
    runner=(setpriv --reuid="$uid" --regid="$(id -g "$u")" --init-groups
            env HOME="$(getent passwd "$u" | cut -d: -f6)" XDG_RUNTIME_DIR="$xdg"
            PATH=/usr/local/bin:/usr/bin:/bin)
  else
    runner=(env)
  fi
  if [ "$n" = 1 ]; then sim=(--simulate-gpu "RTX 4090:24GiB:8.9"); else sim=(--simulate-gpu "RTX 3060:12GiB:8.6"); fi
  echo "== starting agent$n${u:+ as user $u}"
  (cd "$dir" && exec "${runner[@]}" "$agent_root/idlegrid" agent --coordinator "$grpc" --join-token "$join" \
     --ca-hash "$ca" --data-dir "$dir/state" --name "agent$n" --cpus 1 "${sim[@]}") \
     >"$data/agent$n.out" 2>"$data/agent$n.err" &
  pids+=($!)
done
wait_for_line "$data/agent1.out" '^ready' 60
wait_for_line "$data/agent2.out" '^ready' 60
echo "== waiting for both nodes to pass their readiness benchmark (a known job run in the sandbox)"
deadline=$((SECONDS + 120))
until [ "$("$bin" nodes --json | grep -c '"schedulable": true')" = 2 ]; do
  ((SECONDS < deadline)) || { echo "nodes did not become schedulable:" >&2; "$bin" nodes >&2; exit 1; }
  sleep 0.3
done
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
declare -A names
while read -r id name; do names[$id]=$name; done < <("$bin" nodes --json |
  python3 -c 'import json,sys; [print(n["id"], n["name"]) for n in json.load(sys.stdin)["nodes"]]' 2>/dev/null ||
  "$bin" nodes | awk '{print $1, $2}')
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
