# shellcheck shell=bash
# shellcheck disable=SC2034,SC2154  # sets variables for the sourcing script and reads its data, bin
# A local grid on loopback, for scripts/demo.sh, scripts/demo-ml.sh and
# bench/ml.sh (sourced, not run): a coordinator and agents, each agent (as
# root) its own unprivileged user with rootless podman.
#
# The sourcing script sets `data` (an empty directory for the grid's files)
# and `bin` (the idlegrid binary), then calls, in order:
#   start_coordinator [FLAG...]      coordinator with these extra flags; sets grpc, http, ca, join, IDLEGRID_CONFIG
#   prepare_agents N                 users, subordinate ids and a copy of the binary for agents 1..N
#   start_agent N TOKEN [FLAG...]    agent N (name agentN, --cpus 1) joining with TOKEN ($join: the operator's)
#   wait_agents_ready N              each of agents 1..N printed "ready"
#   wait_schedulable N               N nodes passed their readiness benchmark
#   load_node_names                  fills the associative array `names`: node id -> agent name
# `pids` holds the coordinator's pid, then each agent's (pids[N] is agent N's);
# grid_cleanup kills them all unless KEEP_GRID=1.

pids=()
declare -A names

grid_cleanup() {
  [ "${KEEP_GRID:-0}" = 1 ] && { echo "grid left running (pids ${pids[*]}); data in $data"; return; }
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}

wait_for_line() {  # FILE PATTERN SECONDS
  local deadline=$((SECONDS + $3))
  until grep -q "$2" "$1" 2>/dev/null; do
    if ((SECONDS > deadline)); then echo "timed out waiting for '$2' in $1:" >&2; cat "$1" "${1%.out}.err" >&2 || true; exit 1; fi
    sleep 0.2
  done
}

start_coordinator() {  # [FLAG...]
  "$bin" coordinator --data-dir "$data/coordinator" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 "$@" \
    >"$data/coordinator.out" 2>"$data/coordinator.err" &
  pids+=($!)
  wait_for_line "$data/coordinator.out" '^ready' 30
  local _
  read -r _ grpc http ca < "$data/coordinator.out"
  grpc=${grpc#grpc=}; ca=${ca#ca=}
  join=$(awk '{for (i=1;i<=NF;i++) if ($i=="--token") print $(i+1)}' "$data/coordinator/agent-join.txt")
  export IDLEGRID_CONFIG="$data/coordinator/client.yaml"
}

# Agents run as unprivileged users with their own rootless podman storage.
prepare_agents() {  # N
  agent_root="$data/agents"
  if [ "$(id -u)" -eq 0 ]; then
    local n u
    for n in $(seq 1 "$1"); do
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
}

# The user agent N runs as ("" when not root: this user).
agent_user() { if [ "$(id -u)" -eq 0 ]; then echo "idlegrid-demo$1"; fi; }

start_agent() {  # N TOKEN [FLAG...]
  local n=$1 token=$2 u dir runner
  shift 2
  dir="$agent_root/agent$n"; mkdir -p "$dir"
  u=$(agent_user "$n")
  if [ -n "$u" ]; then
    local uid xdg
    uid=$(id -u "$u"); xdg="/tmp/idlegrid-xdg-$uid"
    mkdir -p "$xdg"; chown "$u" "$xdg" "$dir"; chmod 700 "$xdg"
    # setpriv execs in place: the pid we hold is the agent itself.
    runner=(setpriv --reuid="$uid" --regid="$(id -g "$u")" --init-groups
            env HOME="$(getent passwd "$u" | cut -d: -f6)" XDG_RUNTIME_DIR="$xdg"
            PATH=/usr/local/bin:/usr/bin:/bin)
  else
    runner=(env)
  fi
  echo "== starting agent$n${u:+ as user $u}"
  (cd "$dir" && exec "${runner[@]}" "$agent_root/idlegrid" agent --coordinator "$grpc" --join-token "$token" \
     --ca-hash "$ca" --data-dir "$dir/state" --name "agent$n" --cpus 1 "$@") \
     >"$data/agent$n.out" 2>"$data/agent$n.err" &
  pids+=($!)
}

wait_agents_ready() {  # N
  local n
  for n in $(seq 1 "$1"); do wait_for_line "$data/agent$n.out" '^ready' 60; done
}

wait_schedulable() {  # N
  echo "== waiting for $1 nodes to pass their readiness benchmark (a known job run in the sandbox)"
  local deadline=$((SECONDS + 120))
  until [ "$("$bin" nodes --json | grep -c '"schedulable": true')" = "$1" ]; do
    ((SECONDS < deadline)) || { echo "nodes did not become schedulable:" >&2; "$bin" nodes >&2; exit 1; }
    sleep 0.3
  done
}

load_node_names() {
  local id name
  while read -r id name; do names[$id]=$name; done < <("$bin" nodes --json |
    python3 -c 'import json,sys; [print(n["id"], n["name"]) for n in json.load(sys.stdin)["nodes"]]' 2>/dev/null ||
    "$bin" nodes | awk 'NR > 1 {print $1, $2}')
}
