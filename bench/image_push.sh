#!/usr/bin/env bash
# Layered image push and start, measured on a local grid (docs/PERFORMANCE.md,
# "Images"): the example's PyTorch image (examples/ml-sweep, FROM the Debian
# base `idlegrid image base idlegrid-ml --packages
# python3-torch,python3-sklearn`) is pushed, run once on an agent, then its
# script is changed by one line, pushed again and run again. Prints the bytes
# each push uploaded (the coordinator's idlegrid_artifact_bytes_total), the
# bytes the agent downloaded, and how long the first task of each version
# took against a task of an image the agent already had.
# Needs ./scripts/build.sh and the base image (scripts/demo-ml.sh makes it).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
base=${BASE:-idlegrid-ml}
podman image exists "localhost/$base:latest" || {
  echo "no base image localhost/$base: run scripts/demo-ml.sh once, or" \
       "build/idlegrid image base $base --packages python3-torch,python3-sklearn" >&2
  exit 1
}
data="$repo/idlegrid-data/bench-image"  # beside demo.sh's (ignored by git)
rm -rf "$data"
mkdir -p "$data/bin"
# Copies (the coordinator finds the readiness benchmarks beside its binary):
install -m 755 "$repo/build/idlegrid" "$repo/build/idlegrid-bench" "$repo/build/idlegrid-gpu-bench" "$data/bin/"
bin="$data/bin/idlegrid"
# shellcheck source=scripts/grid-lib.sh
source "$repo/scripts/grid-lib.sh"
trap grid_cleanup EXIT

start_coordinator
prepare_agents 1
start_agent 1 "$join"
wait_agents_ready 1
wait_schedulable 1

bytes() {  # DIRECTION: the coordinator's artifact bytes so far
  curl -sS --fail --cacert "$data/coordinator/pki/ca.crt" \
    -H "Authorization: Bearer $(awk '/^token:/ {print $2}' "$IDLEGRID_CONFIG")" "https://${http#http=}/metrics" |
    awk -v d="$1" '$1 == "idlegrid_artifact_bytes_total{direction=\""d"\"}" {print $2}'
}
now_ms() { date +%s%3N; }
run_task() {  # IMAGE: ms for one task that only starts python (submit to done)
  cat > "$data/job.yaml" <<YAML
apiVersion: idlegrid/v1
name: image-start
image: $1
command: ["python3", "-c", "print('started')"]
resources: {cpu: 1, memory: 1Gi}
YAML
  local t=$(now_ms)
  "$bin" submit "$data/job.yaml" --wait >/dev/null
  echo $(($(now_ms) - t))
}

ctx="$data/context"
cp -r examples/ml-sweep "$ctx"
in0=$(bytes in); out0=$(bytes out)
t=$(now_ms); v1=$("$bin" image build "$ctx" --name bench-ml 2>"$data/push1.err"); push1_ms=$(($(now_ms) - t))
in1=$(bytes in)
first_ms=$(run_task "$v1"); out1=$(bytes out)
cached_ms=$(run_task "$v1")
echo "# one-line change" >> "$ctx/train.py"
in1b=$(bytes in)
t=$(now_ms); v2=$("$bin" image build "$ctx" --name bench-ml 2>"$data/push2.err"); push2_ms=$(($(now_ms) - t))
in2=$(bytes in)
changed_ms=$(run_task "$v2"); out2=$(bytes out)

python3 - "$in0" "$in1" "$in1b" "$in2" "$out0" "$out1" "$out2" "$push1_ms" "$push2_ms" "$first_ms" "$cached_ms" \
  "$changed_ms" <<'PY'
import sys
in0, in1, in1b, in2, out0, out1, out2 = map(float, sys.argv[1:8])
push1, push2, first, cached, changed = map(int, sys.argv[8:13])
up1, up2, down1, down2 = in1 - in0, in2 - in1b, out1 - out0, out2 - out1
print(f"first push:   {up1/1e6:9.1f} MB uploaded in {push1/1000:.1f} s (image build + push)")
print(f"second push:  {up2/1e6:9.3f} MB uploaded in {push2/1000:.1f} s: {100*up2/up1:.3f} % of the first")
print(f"agent fetch:  {down1/1e6:9.1f} MB for the first version, {down2/1e6:.3f} MB for the changed one "
      f"({100*down2/down1:.3f} %)")
print(f"first task on v1 (cold node):        {first/1000:6.2f} s")
print(f"a task on v1 again (image cached):   {cached/1000:6.2f} s")
print(f"first task on the changed image:     {changed/1000:6.2f} s "
      f"(+{(changed-cached)/1000:.2f} s over a cached image: fetch, assemble, verify, load)")
PY
