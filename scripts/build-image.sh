#!/usr/bin/env bash
# Builds a FROM scratch image around one static binary, offline, and saves it
# as an OCI archive: scripts/build-image.sh SOURCE.c TAG OUT.tar
set -euo pipefail
src=$1 tag=$2 out=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -static -O2 -o "$work/sim" "$src"
printf 'FROM scratch\nCOPY sim /sim\nENTRYPOINT ["/sim"]\n' > "$work/Containerfile"
podman build -q --pull=never -t "$tag" "$work" >/dev/null
rm -f "$out"
podman save -q --format oci-archive -o "$out" "$tag"
podman rmi -f "$tag" >/dev/null 2>&1 || true
echo "$out"
