#!/usr/bin/env bash
# One epoch of examples/ml-sweep/train.py three ways, each timed from start
# to the metrics written (the process's whole life: interpreter, imports,
# data, one epoch), the median of RUNS (5) rounds that take each in turn:
#   bare    python3 train.py --epochs 1 on the host (its python3-torch)
#   podman  podman run of the example's image (FROM the idlegrid-ml base)
#   grid    a one-task job on a local grid (a coordinator and one agent, as
#           scripts/demo-ml.sh starts them): `idlegrid submit --wait`, from
#           the submit to the job's end, once the node has the image
# and prints the grid's (and podman's) overhead over bare in %. The base image
# is made first if podman's storage lacks it (minutes, once).
#   ./bench/ml.sh    (as root or a user with rootless podman; SKIP_BUILD=1: installed and built already)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
if [ "${SKIP_BUILD:-0}" != 1 ]; then  # SKIP_BUILD=1: installed and built already
  "$repo/scripts/install-deps.sh" --ml >/dev/null
  "$repo/scripts/build.sh" idlegrid idlegrid_python_stubs >/dev/null
fi
runs=${RUNS:-5}
base=idlegrid-ml
data="$repo/idlegrid-data/bench-ml"
rm -rf "$data"; mkdir -p "$data"
# Copies (the coordinator finds the readiness benchmarks beside its binary):
# a rebuild of build/ meanwhile does not pull them away.
mkdir -p "$data/bin"
install -m 755 "$repo/build/idlegrid" "$repo/build/idlegrid-bench" "$repo/build/idlegrid-gpu-bench" "$data/bin/"
bin="$data/bin/idlegrid"
# shellcheck source=scripts/grid-lib.sh
source "$repo/scripts/grid-lib.sh"
local_image=localhost/ml-sweep-bench:latest
cleanup() { podman rmi "$local_image" >/dev/null 2>&1 || true; grid_cleanup; }
trap cleanup EXIT

now() { date +%s.%N; }
median() { sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
timed() {  # prints the seconds "$@" took; its output goes to $data/last.log
  local t; t=$(now)
  "$@" >"$data/last.log" 2>&1 || { cat "$data/last.log" >&2; return 1; }
  echo "$(now) $t" | awk '{printf "%.3f\n", $1 - $2}'
}

if ! podman image exists "localhost/$base:latest"; then
  echo "== making the base image $base (once)"
  "$bin" image base "$base" --packages python3-torch,python3-sklearn
fi

echo "== a local grid: a coordinator and one agent"
start_coordinator
prepare_agents 1
start_agent 1 "$join"
wait_agents_ready 1
wait_schedulable 1
image=$("$bin" image build examples/ml-sweep --name ml-sweep 2>/dev/null)
cat >"$data/one-epoch.yaml" <<EOF
apiVersion: idlegrid/v1
name: ml-one-epoch
image: $image
command: ["python3", "/app/train.py"]
args: ["--epochs", "1", "--out", "/out"]
resources: {cpu: 1, memory: 1Gi}
output: /out
verification: none
EOF
echo "== the first grid task, which brings the image to the node"
first=$(timed "$bin" submit "$data/one-epoch.yaml" --wait)
podman build --quiet --pull=never --network=none --layers=false --tag "$local_image" examples/ml-sweep >/dev/null

# Rounds of bare, podman, grid in turn, so that whatever else the machine
# runs meanwhile weighs on the three alike.
echo "== $runs rounds of: bare, podman run, grid task (load before: $(cut -d' ' -f1-3 /proc/loadavg))"
: >"$data/bare.s"; : >"$data/podman.s"; : >"$data/grid.s"
for _ in $(seq "$runs"); do
  timed /usr/bin/python3 examples/ml-sweep/train.py --epochs 1 --out "$data/bare" >>"$data/bare.s"
  # Modest explicit rlimits: root without CAP_SYS_RESOURCE (inside a
  # container, some CI) cannot raise them to podman's defaults.
  timed podman run --rm --network=none --read-only --tmpfs /out --ulimit nofile=1024:1024 \
    --ulimit nproc=4096:4096 "$local_image" --epochs 1 --out /out >>"$data/podman.s"
  timed "$bin" submit "$data/one-epoch.yaml" --wait >>"$data/grid.s"
done
echo "   load after: $(cut -d' ' -f1-3 /proc/loadavg)"
bare=$(median <"$data/bare.s"); pod=$(median <"$data/podman.s"); grid=$(median <"$data/grid.s")
echo "bare: $(tr '\n' ' ' <"$data/bare.s") podman: $(tr '\n' ' ' <"$data/podman.s") grid: $(tr '\n' ' ' <"$data/grid.s")"

awk -v b="$bare" -v p="$pod" -v g="$grid" -v f="$first" 'BEGIN {
  printf "one epoch of examples/ml-sweep/train.py (median of '"$runs"' rounds, wall seconds)\n"
  printf "  bare on the host   %7.2f s\n", b
  printf "  podman run         %7.2f s  (%+.0f%% over bare)\n", p, (p - b) / b * 100
  printf "  grid task          %7.2f s  (%+.0f%% over bare; the first, fetching the image to the node: %.2f s)\n", g, (g - b) / b * 100, f
}'
