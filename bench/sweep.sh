#!/usr/bin/env bash
# bench/sweep: end-to-end throughput of one array job of N trivial tasks on a
# real local grid (a coordinator and agents, each agent its own unprivileged
# user with rootless podman, on loopback), then the same workload on a
# single-node Slurm started here: (a) /bin/true, (b) the same container with
# `podman run`. Prints a summary (and --json FILE); exits 1 if any idlegrid
# task did not succeed exactly once. Run as root from anywhere; uses the
# binaries in ${BUILD_DIR:-build}/ (it never builds them). See
# docs/PERFORMANCE.md, "Sweep throughput".
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$repo/build}
[[ $build = /* ]] || build=$repo/$build

tasks=500 agents=2 hb_ms=1000 cpu=250m agent_args="" slurm=1 json_out="" slurm_sched=""
usage() {
  cat <<EOF
usage: bench/sweep.sh [--tasks N] [--agents N] [--heartbeat-ms MS] [--cpu Q]
                      [--agent-args "ARGS"] [--no-slurm] [--slurm-sched PARAMS] [--json FILE]
  --cpu Q          per-task cpu request (manifest syntax: 250m, 0.5, 1)
  --agent-args     extra words for every agent's command line (e.g. a runtime driver flag)
  --slurm-sched    SchedulerParameters for slurm.conf (default: Slurm's own defaults)
env: BUILD_DIR (default build), KEEP_TMP=1 keeps the temp dir (logs, JSON)
EOF
  exit 2
}
while (($#)); do
  case $1 in
    --tasks) tasks=$2; shift ;;
    --agents) agents=$2; shift ;;
    --heartbeat-ms) hb_ms=$2; shift ;;
    --cpu) cpu=$2; shift ;;
    --agent-args) agent_args=$2; shift ;;
    --no-slurm) slurm=0 ;;
    --slurm-sched) slurm_sched=$2; shift ;;
    --json) json_out=$(realpath -m "$2"); shift ;;
    *) usage ;;
  esac
  shift
done
[[ $tasks =~ ^[1-9][0-9]*$ && $agents =~ ^[1-9][0-9]?$ && $hb_ms =~ ^[1-9][0-9]*$ ]] || usage
[ "$(id -u)" -eq 0 ] || { echo "run as root: the bench creates the agents' users" >&2; exit 2; }
if [ ! -x "$build/idlegrid" ] || [ ! -x "$build/idlegrid-bench" ]; then
  echo "$build/idlegrid (and idlegrid-bench) missing: build first (scripts/build.sh)" >&2; exit 2
fi
command -v python3 >/dev/null || { apt-get update -qq && apt-get install -y -qq python3 >/dev/null; }
read -ra extra_agent_args <<<"$agent_args"
commit=$(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)

# Everything lives in one temp dir under /var/tmp, readable by the agents'
# users (the repo may not be). The binaries are copied so a rebuild of
# build/ during the run changes nothing.
tmp=$(mktemp -d /var/tmp/idlegrid-sweep.XXXXXX)
chmod 755 "$tmp"
mkdir -p "$tmp/bin" "$tmp/log"
for b in idlegrid idlegrid-bench idlegrid-gpu-bench; do
  if [ -e "$build/$b" ]; then install -p -m 755 "$build/$b" "$tmp/bin/$b"; fi
done
bin=$tmp/bin/idlegrid
pids=() slurm_pids=() users=() notes=() loads=()
status=1
# Running and not a zombie; a process that ends while we look is not alive.
alive() { local s; s=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) && [ -n "$s" ] && [ "$s" != Z ]; }
stop() {  # PID...: SIGTERM, then SIGKILL whatever still runs 45 s later
  # (an agent drains first, bounded by its 30 s --shutdown-grace; a stuck one
  # must not hang the bench, and is reported).
  local deadline=$((SECONDS + 45)) p
  kill "$@" 2>/dev/null || true
  for p in "$@"; do
    while alive "$p" && ((SECONDS < deadline)); do sleep 0.2; done
    if alive "$p"; then notes+=("pid $p ($(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null | cut -c1-60)) ignored SIGTERM for 45 s: killed"); kill -9 "$p"; fi
  done
  wait "$@" 2>/dev/null || true
  # Commands an agent left running as its user (podman kill/rm of its
  # containers) finish on their own; wait a little, then end them by pid.
  local u left
  for u in "${users[@]}"; do
    deadline=$((SECONDS + 30))
    while left=$(pgrep -u "$u" | grep -vx "$(cat "/tmp/idlegrid-xdg-$(id -u "$u")/libpod/tmp/pause.pid" 2>/dev/null || echo x)") &&
      ((SECONDS < deadline)); do sleep 0.5; done
    if [ -n "$left" ]; then notes+=("$(wc -w <<<"$left") processes of $u left by its agent: killed"); kill -9 $left 2>/dev/null; fi
  done
}
cleanup() {
  set +e
  if ((${#slurm_pids[@]})); then scancel --quiet --user root >/dev/null 2>&1; sleep 0.5; fi
  ((${#pids[@]} == 0)) || stop "${pids[@]}"
  for p in "${slurm_pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  # Rootless podman leaves one "pause" process per user holding its user
  # namespace; it is ours (these users exist for the bench), end it by pid.
  for u in "${users[@]}"; do
    pf=/tmp/idlegrid-xdg-$(id -u "$u")/libpod/tmp/pause.pid
    [ -s "$pf" ] && kill "$(cat "$pf")" 2>/dev/null
  done
  if [ "${KEEP_TMP:-0}" = 1 ] || [ "$status" != 0 ]; then echo "logs kept in $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_for_line() {  # FILE PATTERN SECONDS
  local deadline=$((SECONDS + $3))
  until grep -q "$2" "$1" 2>/dev/null; do
    ((SECONDS <= deadline)) || { echo "timed out waiting for '$2' in $1" >&2; tail -n 20 "${1%.out}.err" >&2; exit 1; }
    sleep 0.2
  done
}
now() { date +%s.%N; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
# CPU seconds a process used, its reaped children (runc, the jobs) included.
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{sub(/.*\) /, ""); print ($12 + $13 + $14 + $15) / hz}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# CPU seconds the whole machine spent (user + nice + system + irq + softirq).
cpu_all() { awk -v hz="$(getconf CLK_TCK)" '/^cpu /{print ($2 + $3 + $4 + $7 + $8) / hz}' /proc/stat; }

# --- users: one per agent, rootless podman needs a subordinate id range ------
as_user=()  # set by runner_for: exec a command as user $1 with its podman env
runner_for() {
  local u=$1 uid; uid=$(id -u "$u")
  mkdir -p "/tmp/idlegrid-xdg-$uid"; chown "$u" "/tmp/idlegrid-xdg-$uid"; chmod 700 "/tmp/idlegrid-xdg-$uid"
  # setpriv execs in place (no root parent left behind), as the demo does.
  as_user=(setpriv --reuid="$uid" --regid="$(id -g "$u")" --init-groups
           env HOME="$(getent passwd "$u" | cut -d: -f6)" XDG_RUNTIME_DIR="/tmp/idlegrid-xdg-$uid"
           PATH=/usr/local/bin:/usr/bin:/bin)
}
for n in $(seq 1 "$agents"); do
  u=idlegrid-bench$n; users+=("$u")
  id "$u" >/dev/null 2>&1 || useradd -m -s /usr/sbin/nologin "$u"
  # Ranges far above the demo's and the tests' (300000-600000) so none overlap.
  for f in /etc/subuid /etc/subgid; do
    grep -q "^$u:" "$f" || echo "$u:$((1000000 + n * 65536)):65536" >>"$f"
  done
done

# --- the image: a static FROM scratch program that exits 0 at once ----------
# tests/e2e/testprog.c in "exit 0" mode prints one line to each stream, exits.
"$repo/scripts/build-image.sh" "$repo/tests/e2e/testprog.c" localhost/idlegrid-sweep:bench "$tmp/image.tar" >/dev/null

# --- the grid -----------------------------------------------------------------
loads+=("idlegrid_start=$(load)")
echo "== idlegrid: coordinator + $agents agents (heartbeat ${hb_ms} ms), $tasks tasks of cpu $cpu; load $(load)"
"$bin" coordinator --data-dir "$tmp/coordinator" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
  --heartbeat-interval-ms "$hb_ms" >"$tmp/log/coordinator.out" 2>"$tmp/log/coordinator.err" &
pids+=($!)
wait_for_line "$tmp/log/coordinator.out" '^ready' 30
read -r _ grpc _ ca <"$tmp/log/coordinator.out"
grpc=${grpc#grpc=}; ca=${ca#ca=}
join=$(awk '{for (i=1;i<=NF;i++) if ($i=="--token") print $(i+1)}' "$tmp/coordinator/agent-join.txt")
export IDLEGRID_CONFIG=$tmp/coordinator/client.yaml
# The agents share this host: each offers its share of the real cores, so
# together they offer what the machine has (as Slurm's node does below).
ncpu=$(nproc)
share=$((ncpu / agents)); ((share >= 1)) || share=1
for n in $(seq 1 "$agents"); do
  u=idlegrid-bench$n dir=$tmp/agent$n
  mkdir -p "$dir"; chown "$u" "$dir"
  runner_for "$u"
  (cd "$dir" && exec "${as_user[@]}" "$bin" agent --coordinator "$grpc" --join-token "$join" --ca-hash "$ca" \
     --data-dir "$dir/state" --name "agent$n" --cpus "$share" "${extra_agent_args[@]}") \
    >"$tmp/log/agent$n.out" 2>"$tmp/log/agent$n.err" &
  pids+=($!)
done
for n in $(seq 1 "$agents"); do wait_for_line "$tmp/log/agent$n.out" '^ready' 60; done
# A node takes work only after its readiness benchmark passed.
deadline=$((SECONDS + 180))
until [ "$("$bin" nodes --json | grep -c '"schedulable": true')" = "$agents" ]; do
  ((SECONDS < deadline)) || { echo "nodes did not become schedulable:" >&2; "$bin" nodes >&2; exit 1; }
  sleep 0.3
done
image=$("$bin" image push "$tmp/image.tar")
# idempotent + retries: a task lost with its node is retried elsewhere, and
# the report counts those attempts instead of the bench hanging on them.
cat >"$tmp/job.yaml" <<EOF
apiVersion: idlegrid/v1
name: sweep-bench
image: sweep@$image
command: ["/sim", "exit", "0"]
resources: {cpu: $cpu, memory: 64Mi, pids: 16}
runTimeout: 5m
retries: 3
idempotent: true
array: {count: $tasks}
EOF
t0=$(now)
cpu0_all=$(cpu_all); cpu0=(); for p in "${pids[@]}"; do cpu0+=("$(cpu_of "$p")"); done
job=$("$bin" submit "$tmp/job.yaml")
# Bounded so a stuck grid ends the bench (and is reported) instead of hanging it.
timeout $((300 + tasks)) "$bin" status "$job" --wait --json >"$tmp/job.json" 2>"$tmp/log/wait.err" || true
t1=$(now)
[ -s "$tmp/job.json" ] || "$bin" status "$job" --json >"$tmp/job.json"
ig_wall=$(python3 -c "print(round($t1 - $t0, 3))")
echo "idlegrid: $tasks tasks settled in ${ig_wall}s; load $(load)"
# Where the CPU went while the job ran, per task (the coordinator is pids[0];
# an agent's figure includes the runc processes and jobs it reaped).
cpu_line="cpu ms per task:"
for i in "${!pids[@]}"; do
  label=coordinator; ((i == 0)) || label=agent$i
  cpu_line+=" $label $(python3 -c "print(round(($(cpu_of "${pids[$i]}") - ${cpu0[$i]}) * 1000 / $tasks, 1))")"
done
cpu_line+=" whole-machine $(python3 -c "print(round(($(cpu_all) - $cpu0_all) * 1000 / $tasks, 1))")"
echo "$cpu_line"
loads+=("idlegrid_end=$(load)")
# Stop the grid before Slurm runs so the two never share the CPUs: the agents
# first (they drain and say goodbye while the coordinator is up), then it.
stop "${pids[@]:1}"
stop "${pids[0]}"
pids=()

# --- Slurm: same host, same users, same image --------------------------------
sl_true="" sl_podman="" slurm_failed=0
if [ "$slurm" = 1 ]; then
  if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    echo "== installing slurm-wlm and munge"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
  fi
  s=$tmp/slurm
  mkdir -p "$s/state" "$s/spool" "$s/munge-key"; mkdir -m 755 "$s/munge"; chmod 700 "$s/munge-key"
  # Our own munged (own key, socket and files), not the system's.
  dd if=/dev/urandom of="$s/munge-key/key" bs=1024 count=1 status=none; chmod 400 "$s/munge-key/key"
  munged -F --key-file="$s/munge-key/key" --socket="$s/munge/sock" --pid-file="$s/munge-key/pid" \
    --log-file="$tmp/log/munged.log" --seed-file="$s/munge-key/seed" >"$tmp/log/munged.out" 2>&1 &
  slurm_pids+=($!)
  read -r ctld_port slurmd_port < <(python3 -c '
import socket; s = [socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1", 0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
  mem_mb=$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
  # One node with the host's real cores and memory. Tasks ask one CPU (Slurm
  # has no fractions), so the partition shares each CPU among 1/cpu tasks:
  # the same concurrency as the grid (host cores / per-task request).
  ways=$(python3 -c "c='$cpu'; c=float(c[:-1])/1000 if c.endswith('m') else float(c); print(max(1, int(1/c)))")
  cat >"$s/slurm.conf" <<EOF
ClusterName=igsweep
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$s/munge/sock
CredType=cred/munge
StateSaveLocation=$s/state
SlurmdSpoolDir=$s/spool
SlurmctldPidFile=$s/slurmctld.pid
SlurmdPidFile=$s/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
MaxArraySize=$((tasks + 1))
MaxJobCount=$((tasks * 3 + 100))
${slurm_sched:+SchedulerParameters=$slurm_sched}
NodeName=sweep NodeHostname=$(hostname) NodeAddr=127.0.0.1 CPUs=$ncpu RealMemory=$mem_mb State=UNKNOWN
PartitionName=sweep Nodes=sweep Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:$ways
EOF
  export SLURM_CONF=$s/slurm.conf
  slurmctld -D -i >"$tmp/log/slurmctld.out" 2>&1 &
  slurm_pids+=($!)
  slurmd -D -N sweep >"$tmp/log/slurmd.out" 2>&1 &
  slurm_pids+=($!)
  deadline=$((SECONDS + 60))
  until sinfo -h -o %t 2>/dev/null | grep -qx idle; do
    ((SECONDS < deadline)) || { echo "slurm did not come up; see $tmp/log" >&2; exit 1; }
    sleep 0.5
  done
  # Task script for (b): array task i runs the container as user i % agents,
  # with the same setpriv environment as the grid's agents.
  {
    echo '#!/bin/bash'
    echo 'case $((SLURM_ARRAY_TASK_ID % '"$agents"')) in'
    for n in $(seq 1 "$agents"); do
      runner_for "idlegrid-bench$n"
      echo "  $((n - 1))) exec ${as_user[*]} podman run --rm --network none localhost/idlegrid-sweep:bench exit 0 ;;"
    done
    echo 'esac'
  } >"$s/podman-task.sh"
  chmod 755 "$s/podman-task.sh"
  for n in $(seq 1 "$agents"); do  # load the image and warm each user's podman (not timed)
    runner_for "idlegrid-bench$n"
    (cd / && "${as_user[@]}" podman load -q -i "$tmp/image.tar" >/dev/null &&
      "${as_user[@]}" podman run --rm --network none localhost/idlegrid-sweep:bench exit 0 >/dev/null 2>&1)
  done
  # Times `sbatch --wait` of the array, but takes the end from squeue polled
  # every 0.2 s: sbatch --wait itself polls every few seconds (its return is
  # printed too).
  slurm_array() {  # NAME SCRIPT... -> "SECONDS SBATCH_RETURN_SECONDS"; fails if a task failed
    local name=$1 start id end; shift
    start=$(now)
    sbatch --wait --array="0-$((tasks - 1))" -J "$name" -D / -o /dev/null -e "$tmp/log/$name-%a.err" "$@" \
      >"$tmp/log/$name.sbatch" 2>&1 &
    local sb=$!
    until id=$(awk '/Submitted batch job/ {print $4}' "$tmp/log/$name.sbatch" 2>/dev/null) && [ -n "$id" ]; do
      kill -0 "$sb" 2>/dev/null || { cat "$tmp/log/$name.sbatch" >&2; return 1; }
      sleep 0.05
    done
    while [ -n "$(squeue -h -r -j "$id" -t PD,R,CG,CF,S 2>/dev/null | head -n1)" ]; do sleep 0.2; done
    end=$(now)
    wait "$sb" || { echo "slurm $name: some tasks failed, see $tmp/log/$name-*.err" >&2; return 1; }
    python3 -c "print(round($end - $start, 3), round($(now) - $start, 3))"
  }
  loads+=("slurm_start=$(load)")
  echo "== slurm $(slurmctld -V | cut -d' ' -f2): 1 node, $ncpu CPUs, OverSubscribe=FORCE:$ways; load $(load)"
  # A failed Slurm run leaves its figure empty and fails the bench at the end.
  if r=$(slurm_array sweep-true --wrap /bin/true); then
    read -r sl_true sb <<<"$r"
    echo "slurm /bin/true: $tasks tasks in ${sl_true}s (sbatch --wait returned at ${sb}s); load $(load)"
    loads+=("slurm_true_end=$(load)")
  else slurm_failed=1; fi
  if r=$(slurm_array sweep-podman "$s/podman-task.sh"); then
    read -r sl_podman sb <<<"$r"
    echo "slurm podman run: $tasks tasks in ${sl_podman}s (sbatch --wait returned at ${sb}s); load $(load)"
    loads+=("slurm_podman_end=$(load)")
  else slurm_failed=1; fi
fi

# --- report -------------------------------------------------------------------
status=0
python3 "$repo/bench/sweep_report.py" --job "$tmp/job.json" --wall "$ig_wall" --tasks "$tasks" \
  --agents "$agents" --heartbeat-ms "$hb_ms" --cpu "$cpu" --agent-args "$agent_args" \
  --slurm-true "$sl_true" --slurm-podman "$sl_podman" --slurm-sched "$slurm_sched" \
  --commit "$commit" --binary "$bin" "${loads[@]/#/--load=}" "${notes[@]/#/--note=}" \
  ${json_out:+--json "$json_out"} || status=$?
((slurm_failed == 0)) || status=1
exit "$status"
