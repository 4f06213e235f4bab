#!/usr/bin/env bash
# Checks the .deb (docs/provider.md, "Packaging").
#
#   scripts/test-deb.sh [--build BUILD_DIR | DEB] [--rootfs]
#
# Always (seconds; the ctest `deb_package` runs this part): its contents,
# dependencies from dpkg-shlibdeps, lintian with no errors, the packaged
# binary's --version, and `systemd-analyze verify` of both units against the
# unpacked package.
# With --rootfs (minutes the first time): installs it with apt into a clean
# Debian 12 root filesystem made by mmdebstrap (cached as a tarball in
# $IDLEGRID_ROOTFS_CACHE, default /var/cache/idlegrid-test), then checks
# --version, the units there, the coordinator starting as the idlegrid
# user, and a purge. Needs root (chroot) and Debian's package registry.
set -euo pipefail
cd "$(dirname "$0")/.."
deb="" rootfs=0
while (($#)); do
  case $1 in
    --build) deb=$(scripts/package-deb.sh "$2" | tail -1); shift 2 ;;
    --rootfs) rootfs=1; shift ;;
    *) deb=$(realpath "$1"); shift ;;
  esac
done
[ -n "$deb" ] || deb=$(scripts/package-deb.sh build | tail -1)
[ -f "$deb" ] || { echo "test-deb: no package at $deb" >&2; exit 1; }
fail() { echo "test-deb: FAIL: $*" >&2; exit 1; }
for tool in lintian systemd-analyze dpkg-deb; do
  command -v "$tool" >/dev/null || fail "$tool is missing (scripts/install-deps.sh installs it)"
done
work=$(mktemp -d)
cleanup() {
  for m in "${mounts[@]:-}"; do [ -n "$m" ] && umount -l "$m" 2>/dev/null || true; done
  rm -rf "$work"
}
mounts=()
trap cleanup EXIT

echo "== contents of $(basename "$deb")"
contents=$(dpkg-deb --contents "$deb")
for f in ./usr/bin/idlegrid ./usr/lib/idlegrid/idlegrid ./usr/lib/idlegrid/idlegrid-bench ./usr/lib/idlegrid/idlegrid-gpu-bench \
  ./lib/systemd/system/idlegrid-coordinator.service ./usr/lib/systemd/user/idlegrid-agent.service \
  ./etc/default/idlegrid-coordinator ./usr/share/doc/idlegrid/copyright \
  ./usr/share/man/man1/idlegrid.1.gz ./usr/share/man/man1/idlegrid-coordinator.1.gz \
  ./usr/share/man/man1/idlegrid-agent.1.gz ./usr/share/man/man1/idlegrid-agent-join.1.gz \
  ./usr/share/man/man1/idlegrid-submit.1.gz; do
  grep -q " $f\( ->\|$\)" <<<"$contents" || fail "$f is not in the package"
done
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
grep -q 'libgrpc++' <<<"$depends" || fail "Depends lacks the gRPC library dpkg-shlibdeps should have found"

echo "== lintian"
# Errors fail; warnings are printed (docs/provider.md lists the known ones).
lintian --fail-on error --display-info "$deb" || fail "lintian reported errors"

echo "== the packaged binary and units"
root=$work/root
dpkg-deb -x "$deb" "$root"
got=$("$root/usr/bin/idlegrid" --version)
[ "$got" = "idlegrid $(dpkg-deb -f "$deb" Version)" ] || fail "idlegrid --version printed '$got'"
echo "$got"
grep -q '^ExecStart=/usr/bin/idlegrid agent --config %h/.config/idlegrid/agent.yaml' \
  "$root/usr/lib/systemd/user/idlegrid-agent.service" || fail "the user unit does not run the agent from its config"
# systemd-analyze verify needs no running systemd. It resolves ExecStart= and
# the targets inside --root, so the host's stock units are copied beside the
# package's; the user manager has no --root, so the user unit is verified
# with its ExecStart pointing into the unpacked package. Any complaint fails
# (verify only warns about unknown keys).
verify() {
  local out
  out=$(SYSTEMD_LOG_LEVEL=notice systemd-analyze "$@" 2>&1) && [ -z "$out" ] || { echo "$out" >&2; return 1; }
}
cp -an /lib/systemd/system/. "$root/lib/systemd/system/"
verify verify --man=no --root="$root" /lib/systemd/system/idlegrid-coordinator.service ||
  fail "systemd-analyze verify: coordinator unit"
mkdir -p "$work/user-units" "$work/xdg" && chmod 0700 "$work/xdg"
sed "s|^ExecStart=/usr/bin/idlegrid |ExecStart=$root/usr/bin/idlegrid |" \
  "$root/usr/lib/systemd/user/idlegrid-agent.service" >"$work/user-units/idlegrid-agent.service"
XDG_RUNTIME_DIR=$work/xdg verify --user verify --man=no "$work/user-units/idlegrid-agent.service" ||
  fail "systemd-analyze verify: agent user unit"
echo "units verify"

if ((rootfs)); then
  [ "$(id -u)" -eq 0 ] || fail "--rootfs needs root (chroot)"
  command -v mmdebstrap >/dev/null || fail "mmdebstrap is missing (scripts/install-deps.sh installs it)"
  cache=${IDLEGRID_ROOTFS_CACHE:-/var/cache/idlegrid-test}
  tarball=$cache/bookworm-apt-systemd.tar
  mkdir -p "$cache"
  if [ ! -f "$tarball" ]; then
    echo "== building a clean Debian 12 root filesystem (cached in $tarball)"
    # mmdebstrap picks its output format from the name: the temporary one ends in .tar too.
    mmdebstrap --quiet --variant=apt --include=systemd,ca-certificates,util-linux bookworm "$cache/.partial.tar" \
      "deb http://deb.debian.org/debian bookworm main" "deb http://deb.debian.org/debian bookworm-updates main" \
      "deb http://deb.debian.org/debian-security bookworm-security main"
    mv "$cache/.partial.tar" "$tarball"
  fi
  chroot_dir=$work/bookworm
  mkdir -p "$chroot_dir"
  tar -C "$chroot_dir" -xf "$tarball"
  cp /etc/resolv.conf "$chroot_dir/etc/resolv.conf"
  for fs in proc dev; do
    mount --bind "/$fs" "$chroot_dir/$fs"
    mounts+=("$chroot_dir/$fs")
  done
  cp "$deb" "$chroot_dir/tmp/idlegrid.deb"
  in_root() { chroot "$chroot_dir" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"; }
  echo "== apt-get install ./idlegrid.deb in the clean root"
  in_root apt-get update -qq
  in_root apt-get install -y -qq /tmp/idlegrid.deb >"$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "apt-get install"; }
  in_root idlegrid --version | grep -qx "idlegrid $(dpkg-deb -f "$deb" Version)" || fail "idlegrid --version in the root"
  in_root getent passwd idlegrid >/dev/null || fail "postinst made no idlegrid user"
  in_root_verify() {
    local out
    out=$(in_root SYSTEMD_LOG_LEVEL=notice XDG_RUNTIME_DIR=/tmp systemd-analyze "$@" 2>&1) && [ -z "$out" ] ||
      { echo "$out" >&2; return 1; }
  }
  in_root_verify verify --man=no /lib/systemd/system/idlegrid-coordinator.service ||
    fail "systemd-analyze verify in the root: coordinator unit"
  in_root_verify --user verify --man=no /usr/lib/systemd/user/idlegrid-agent.service ||
    fail "systemd-analyze verify in the root: agent unit"
  echo "== the coordinator starts as the idlegrid user (its unit's ExecStart, on free ports)"
  in_root install -d -o idlegrid -g idlegrid -m 0700 /var/lib/idlegrid-coordinator
  chroot "$chroot_dir" /usr/bin/env -i PATH=/usr/bin:/bin setpriv --reuid=idlegrid --regid=idlegrid --init-groups \
    /usr/bin/idlegrid coordinator --data-dir /var/lib/idlegrid-coordinator --listen 127.0.0.1:0 \
    --http-listen 127.0.0.1:0 >"$work/coordinator.out" 2>"$work/coordinator.err" &
  coordinator=$!
  ready=""
  for _ in $(seq 1 120); do  # its readiness line, or its exit
    ready=$(grep -m1 '^ready ' "$work/coordinator.out" || true)
    [ -n "$ready" ] || ! kill -0 "$coordinator" 2>/dev/null && break
    sleep 1
  done
  kill "$coordinator" 2>/dev/null || true
  wait "$coordinator" || true
  [ -n "$ready" ] || { cat "$work/coordinator.err"; fail "the installed coordinator did not become ready"; }
  echo "$ready"
  echo "== purge"
  in_root apt-get purge -y -qq idlegrid >"$work/purge.log" 2>&1 || { cat "$work/purge.log"; fail "apt-get purge"; }
  [ ! -e "$chroot_dir/var/lib/idlegrid-coordinator" ] || fail "purge left /var/lib/idlegrid-coordinator"
  [ ! -e "$chroot_dir/usr/bin/idlegrid" ] || fail "purge left /usr/bin/idlegrid"
fi
echo "test-deb: ok"
