#!/usr/bin/env bash
# The GPU check (issue 27), for a developer's machine with an NVIDIA GPU, the
# driver, nvidia-container-toolkit with a CDI spec (`nvidia-ctk cdi generate
# --output=/etc/cdi/nvidia.yaml`), rootless podman and nvcc (CUDA 12.x/13):
#   1. builds idlegrid (scripts/build.sh idlegrid) and examples/cuda/gpu_work.cu;
#   2. prints `idlegrid agent --discover --json`;
#   3. runs the GPU readiness benchmark (build/idlegrid-gpu-bench) bare and
#      prints its result.txt;
#   4. starts a real local grid: a coordinator (no --allow-simulated-gpus) and
#      one agent as an unprivileged user with the host's real NVML and CDI
#      spec, waits until the GPU has passed its readiness benchmark;
#   5. runs gpu-work bare RUNS times and as a `gpus: 1` job RUNS times, and
#      compares the best of each: the attempt's run time (finishedAtMs -
#      startedAtMs in `idlegrid status JOB --json`, what is billed) against
#      the bare binary's wall time; target within 2%;
#   6. prints a summary block to paste into docs/PERFORMANCE.md.
# Exits 2 at once, before building anything, on a machine without an NVIDIA
# GPU. Env: LAUNCHES (gpu-work's kernel launches, default 4000), RUNS
# (default 3), GPU_BENCH_ROUNDS (default 2000, the coordinator's), NVCC,
# KEEP_GRID=1 leaves the grid running.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

die() { echo "gpu-check: $*" >&2; exit 1; }

# --- 0. fail early and clearly without a GPU ------------------------------
if ! command -v nvidia-smi >/dev/null 2>&1 || ! ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml\.so\.1'; then
  echo "gpu-check: no NVIDIA GPU: nvidia-smi/NVML not found (install the NVIDIA driver; this check needs a real GPU)" >&2
  exit 2
fi
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU: nvidia-smi sees no device ($(nvidia-smi -L 2>&1 | head -1))" >&2
  exit 2
fi
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$nvcc" ] || die "nvcc not found (set NVCC=/path/to/nvcc); it builds examples/cuda/gpu_work.cu"
command -v podman >/dev/null || die "podman not found"
cdi=""
for f in /etc/cdi/nvidia.yaml /var/run/cdi/nvidia.yaml; do [ -r "$f" ] && cdi=$f && break; done
[ -n "$cdi" ] || die "no CDI spec for the GPU: run 'sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml'"
command -v python3 >/dev/null || die "python3 not found (reads the JSON the CLI prints)"

launches=${LAUNCHES:-4000}
runs=${RUNS:-3}
bench_rounds=${GPU_BENCH_ROUNDS:-2000}  # readiness::kDefaultGpuBenchRounds

# --- 1. build --------------------------------------------------------------
echo "== building idlegrid"
"$repo/scripts/build.sh" idlegrid
bin="$repo/build/idlegrid"
gpu_bench="$repo/build/idlegrid-gpu-bench"
[ -x "$gpu_bench" ] || die "$gpu_bench was not built"

data="$repo/idlegrid-gpu-check"
rm -rf "$data"
mkdir -p "$data"

echo "== building examples/cuda/gpu_work.cu with $nvcc"
ctx="$data/image"
mkdir -p "$ctx/lib64" "$ctx/lib/x86_64-linux-gnu"
gencode=()
for sm in 75 80 86 89 90; do gencode+=(-gencode "arch=compute_$sm,code=sm_$sm"); done
gencode+=(-gencode "arch=compute_90,code=compute_90")
"$nvcc" -O2 -std=c++17 -cudart static "${gencode[@]}" -Xcompiler -static-libgcc -Xcompiler -static-libstdc++ \
  -o "$ctx/gpu-work" examples/cuda/gpu_work.cu
# The loader and libc for gpu-work; libm, libdl, libpthread, librt for the
# driver's libcuda.so.1 (CDI mounts the driver, not glibc). As bench_image.cc.
cp -L /lib64/ld-linux-x86-64.so.2 "$ctx/lib64/"
for lib in libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1; do
  cp -L "/lib/x86_64-linux-gnu/$lib" "$ctx/lib/x86_64-linux-gnu/"
done
cp examples/cuda/Containerfile "$ctx/Containerfile"

# --- 2. discovery ----------------------------------------------------------
echo "== idlegrid agent --discover --json"
"$bin" agent --discover --json --cdi-spec "$cdi" | tee "$data/discover.json"
python3 - "$data/discover.json" <<'EOF' || die "discovery found no GPU (see above)"
import json, sys
gpus = json.load(open(sys.argv[1]))["inventory"]["gpus"]
sys.exit(0 if gpus.get("devices") else 1)
EOF

# --- 3. readiness benchmark, bare ------------------------------------------
echo "== GPU readiness benchmark, bare: $gpu_bench $bench_rounds SEED OUT 0"
mkdir -p "$data/gpu-bench"
CUDA_CACHE_DISABLE=1 "$gpu_bench" "$bench_rounds" "$RANDOM$RANDOM" "$data/gpu-bench" 0 >/dev/null ||
  die "the GPU readiness benchmark failed (its stderr is above)"
cat "$data/gpu-bench/result.txt"

# --- 4. a local grid with one real-GPU agent --------------------------------
pids=()
cleanup() {
  [ "${KEEP_GRID:-0}" = 1 ] && { echo "grid left running (pids ${pids[*]}); data in $data"; return; }
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

wait_for_line() {  # FILE PATTERN SECONDS (as scripts/demo.sh)
  local deadline=$((SECONDS + $3))
  until grep -q "$2" "$1" 2>/dev/null; do
    if ((SECONDS > deadline)); then echo "timed out waiting for '$2' in $1:" >&2; cat "$1" "${1%.out}.err" >&2 || true; exit 1; fi
    sleep 0.2
  done
}

echo "== starting the coordinator (real GPUs only: no --allow-simulated-gpus)"
"$bin" coordinator --data-dir "$data/coordinator" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
  >"$data/coordinator.out" 2>"$data/coordinator.err" &
pids+=($!)
wait_for_line "$data/coordinator.out" '^ready' 30
read -r _ grpc _ ca < "$data/coordinator.out"
grpc=${grpc#grpc=}; ca=${ca#ca=}
join=$(awk '{for (i=1;i<=NF;i++) if ($i=="--token") print $(i+1)}' "$data/coordinator/agent-join.txt")
export IDLEGRID_CONFIG="$data/coordinator/client.yaml"

# The agent runs unprivileged: as its own user when we are root (as demo.sh),
# else as the invoking user.
agent_root="$data/agent"
if [ "$(id -u)" -eq 0 ]; then
  u=idlegrid-gpucheck
  id "$u" >/dev/null 2>&1 || useradd -m -s /usr/sbin/nologin "$u"
  grep -q "^$u:" /etc/subuid || echo "$u:500000:65536" >> /etc/subuid
  grep -q "^$u:" /etc/subgid || echo "$u:500000:65536" >> /etc/subgid
  if ! runuser -u "$u" -- test -x "$bin"; then agent_root=/var/tmp/idlegrid-gpu-check-agent; fi
fi
rm -rf "$agent_root"; mkdir -p "$agent_root"; chmod 755 "$agent_root"
install -m 755 "$bin" "$agent_root/idlegrid"
if [ "$(id -u)" -eq 0 ]; then
  uid=$(id -u "$u"); xdg="/tmp/idlegrid-xdg-$uid"
  mkdir -p "$xdg"; chown "$u" "$xdg" "$agent_root"; chmod 700 "$xdg"
  runner=(setpriv --reuid="$uid" --regid="$(id -g "$u")" --init-groups
          env HOME="$(getent passwd "$u" | cut -d: -f6)" XDG_RUNTIME_DIR="$xdg"
          PATH=/usr/local/bin:/usr/bin:/bin)
else
  runner=(env)
fi
echo "== starting the agent${u:+ as user $u} (NVML, CDI spec $cdi)"
(cd "$agent_root" && exec "${runner[@]}" "$agent_root/idlegrid" agent --coordinator "$grpc" --join-token "$join" \
   --ca-hash "$ca" --data-dir "$agent_root/state" --name gpu-node --cpus 2 --cdi-spec "$cdi") \
   >"$data/agent.out" 2>"$data/agent.err" &
pids+=($!)
wait_for_line "$data/agent.out" '^ready' 60

echo "== waiting for the node and its GPU 0 to pass their readiness benchmarks"
deadline=$((SECONDS + 600))
until "$bin" nodes --json | python3 -c '
import json, sys
nodes = json.load(sys.stdin).get("nodes", [])
ok = nodes and nodes[0].get("schedulable") and any(
    g.get("measured") and not g.get("unavailableReason") for g in nodes[0].get("gpus", []))
sys.exit(0 if ok else 1)'; do
  ((SECONDS < deadline)) || { echo "the GPU never became ready:" >&2; "$bin" nodes >&2; exit 1; }
  sleep 1
done
"$bin" nodes

# --- 5. the CUDA job, bare and through the grid ------------------------------
echo "== image build $ctx"
image=$("$bin" image build "$ctx" --name gpu-work)
image=${image#gpu-work@}
echo "image gpu-work@$image"
sed -e "s/IMAGE/$image/" -e "s/LAUNCHES/$launches/" examples/cuda/job.yaml.in > "$data/job.yaml"

ms_now() { date +%s%3N; }
bare_ms=() job_ms=() agent_ms=()
echo "== gpu-work $launches bare, $runs runs"
for i in $(seq "$runs"); do
  mkdir -p "$data/bare-$i"
  t0=$(ms_now)
  "$ctx/gpu-work" "$launches" "$data/bare-$i" >/dev/null || die "gpu-work failed bare"
  t1=$(ms_now)
  bare_ms+=($((t1 - t0)))
  echo "bare run $i: $((t1 - t0)) ms wall; $(tr '\n' ' ' < "$data/bare-$i/result.txt")"
done

echo "== gpu-work $launches as a gpus: 1 job, $runs runs"
for i in $(seq "$runs"); do
  job=$("$bin" submit "$data/job.yaml")
  "$bin" status "$job" --wait >/dev/null || true
  "$bin" status "$job" --json > "$data/job-$i.json"
  read -r state run_ms < <(python3 - "$data/job-$i.json" <<'EOF'
import json, sys
job = json.load(open(sys.argv[1]))
a = job["tasks"][0]["attempts"][-1]
print(job["state"], int(a.get("finishedAtMs", 0)) - int(a.get("startedAtMs", 0)))
EOF
)
  [ "$state" = SUCCEEDED ] || { "$bin" status "$job" >&2; "$bin" logs "$job" >&2 || true; die "job $job ended $state"; }
  "$bin" fetch "$job" "$data/job-$i" >/dev/null
  # The agent's own container run time (its signed receipt), for comparison.
  a_ms=$("$bin" receipt "$job" --json 2>/dev/null | python3 -c '
import json, sys
s = json.load(sys.stdin)["statement"]
print(int(s["finishedAtMs"]) - int(s["startedAtMs"]))' 2>/dev/null || echo "?")
  job_ms+=("$run_ms"); agent_ms+=("$a_ms")
  echo "job run $i ($job): attempt $run_ms ms, agent's container $a_ms ms; $(tr '\n' ' ' < "$data/job-$i/task-0/result.txt")"
done

sums=$(cat "$data"/bare-*/result.txt "$data"/job-*/task-0/result.txt | grep '^checksum=' | sort -u | wc -l)
[ "$sums" = 1 ] || die "checksums differ between runs: $(grep -h '^checksum=' "$data"/bare-*/result.txt "$data"/job-*/task-0/result.txt | tr '\n' ' ')"

min() { printf '%s\n' "$@" | sort -n | head -1; }
best_bare=$(min "${bare_ms[@]}")
best_job=$(min "${job_ms[@]}")
diff_pct=$(python3 -c "print(f'{($best_job - $best_bare) / $best_bare * 100:+.2f}')")
verdict=$(python3 -c "print('PASS (within 2%)' if abs($best_job - $best_bare) <= 0.02 * $best_bare else 'OVER 2%')")

# --- 6. the summary ----------------------------------------------------------
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')
bench=$(grep -v '^$' "$data/gpu-bench/result.txt" | sed 's/^/    /')
cat <<EOF

==== paste into docs/PERFORMANCE.md, "GPU check (scripts/gpu-check.sh)" ====
$(date -u +%F): GPU $gpu; CPU $cpu; nvcc $("$nvcc" --version | grep -o 'release [0-9.]*' | cut -d' ' -f2)
readiness benchmark, bare ($bench_rounds rounds), result.txt:
$bench
gpu-work $launches launches (checksum $(grep -h '^checksum=' "$data/bare-1/result.txt" | cut -d= -f2)), best of $runs:
    bare wall time          $best_bare ms   (runs: ${bare_ms[*]})
    job attempt run time    $best_job ms   (runs: ${job_ms[*]}; finishedAtMs - startedAtMs)
    agent's container time  (runs: ${agent_ms[*]}; receipt statement)
    difference              $diff_pct %   $verdict
EOF
