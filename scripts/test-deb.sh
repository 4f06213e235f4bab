#!/usr/bin/env bash
# Checks the .deb (docs/packaging.md).
#
#   scripts/test-deb.sh [--build BUILD_DIR | DEB] [--rootfs]
#
# Always (seconds; the ctest `deb_package` runs this part): its contents,
# dependencies from dpkg-shlibdeps, lintian with no errors, the packaged
# binary's --version, and `systemd-analyze verify` of both units against the
# unpacked package.
# With --rootfs (docs/packaging.md has its times): the package's life in a
# clean Debian 12 root filesystem made by mmdebstrap (cached as a tarball in
# $IDLEGRID_ROOTFS_CACHE, default /var/cache/idlegrid-test, with the
# packages apt downloaded). It puts this package and an older version of it
# (VERSION~prev, built by package-deb.sh from the same build tree, or the
# same files repacked when only a DEB is given) in a repository made by
# make-apt-repo.sh, adds that with signed-by= and checks: a tampered
# InRelease fails `apt-get update`; `apt-get install idlegrid=OLD`, the
# units, the coordinator starting as the idlegrid user; the upgrade keeps
# its state.db and CA and the new coordinator starts on them with the same
# CA; remove keeps the state, purge drops it and an operator's enable link.
# Systemd does not run in the root, so this covers the maintainer scripts'
# path without it; then a second install/upgrade/remove/purge with
# stand-ins for systemctl and deb-systemd-invoke checks the calls they make
# when systemd runs. Needs root (chroot) and Debian's package registry.
set -euo pipefail
cd "$(dirname "$0")/.."
deb="" rootfs=0 build_dir=""
while (($#)); do
  case $1 in
    --build) build_dir=$2; deb=$(scripts/package-deb.sh "$2" | tail -1); shift 2 ;;
    --rootfs) rootfs=1; shift ;;
    *) deb=$(realpath "$1"); shift ;;
  esac
done
if [ -z "$deb" ]; then build_dir=build; deb=$(scripts/package-deb.sh build | tail -1); fi
[ -f "$deb" ] || { echo "test-deb: no package at $deb" >&2; exit 1; }
fail() { echo "test-deb: FAIL: $*" >&2; exit 1; }
for tool in lintian systemd-analyze dpkg-deb; do
  command -v "$tool" >/dev/null || fail "$tool is missing (scripts/install-deps.sh installs it)"
done
work=$(mktemp -d)
cleanup() {
  for m in "${mounts[@]:-}"; do if [ -n "$m" ]; then umount -l "$m" 2>/dev/null || true; fi; done
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
  if ! out=$(SYSTEMD_LOG_LEVEL=notice systemd-analyze "$@" 2>&1) || [ -n "$out" ]; then echo "$out" >&2; return 1; fi
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
  mkdir -p "$cache/archives"
  if [ ! -f "$tarball" ]; then
    echo "== building a clean Debian 12 root filesystem (cached in $tarball)"
    # mmdebstrap picks its output format from the name: the temporary one ends in .tar too.
    mmdebstrap --quiet --variant=apt --include=systemd,ca-certificates,util-linux bookworm "$cache/.partial.tar" \
      "deb http://deb.debian.org/debian bookworm main" "deb http://deb.debian.org/debian bookworm-updates main" \
      "deb http://deb.debian.org/debian-security bookworm-security main"
    mv "$cache/.partial.tar" "$tarball"
  fi

  # Two versions of the package in a signed apt repository made by
  # make-apt-repo.sh: this one and an older one to upgrade from.
  new=$(dpkg-deb -f "$deb" Version)
  old="$new~prev"
  echo "== an apt repository with idlegrid $old and $new"
  if [ -n "$build_dir" ]; then
    old_deb=$(IDLEGRID_DEB_VERSION=$old scripts/package-deb.sh "$build_dir" "$work/old" | tail -1)
  else  # only a .deb: the same files under the older version
    dpkg-deb -R "$deb" "$work/old-stage"
    sed -i "s/^Version: .*/Version: $old/" "$work/old-stage/DEBIAN/control"
    old_deb=$work/idlegrid_${old#*:}_$(dpkg-deb -f "$deb" Architecture).deb
    dpkg-deb --root-owner-group -Zxz --build "$work/old-stage" "$old_deb" >/dev/null
  fi
  scripts/make-apt-repo.sh "$work/repo" "$old_deb" "$deb" --key-dir "$work/repo-key" >/dev/null

  chroot_dir=$work/bookworm
  mkdir -p "$chroot_dir"
  tar -C "$chroot_dir" -xf "$tarball"
  cp /etc/resolv.conf "$chroot_dir/etc/resolv.conf"
  for fs in proc dev; do
    mount --bind "/$fs" "$chroot_dir/$fs"
    mounts+=("$chroot_dir/$fs")
  done
  # Packages downloaded by earlier runs (the recommended container tools).
  find "$cache/archives" -maxdepth 1 -name '*.deb' -exec cp -t "$chroot_dir/var/cache/apt/archives/" {} +
  repo=/srv/idlegrid-repo keyring=/usr/share/keyrings/idlegrid-archive-keyring.gpg
  cp -a "$work/repo" "$chroot_dir$repo"
  cp "$work/repo/idlegrid-archive-keyring.gpg" "$chroot_dir$keyring"
  echo "deb [signed-by=$keyring] file:$repo ./" >"$chroot_dir/etc/apt/sources.list.d/idlegrid.list"
  root_path=/usr/sbin:/usr/bin:/sbin:/bin
  in_root() { chroot "$chroot_dir" /usr/bin/env -i PATH="$root_path" DEBIAN_FRONTEND=noninteractive "$@"; }
  apt_in_root() {  # apt_in_root LOG_NAME APT-GET-ARGS...: quiet unless it fails
    local log=$work/$1.log
    shift
    in_root apt-get -y -q -o Dpkg::Use-Pty=0 "$@" >"$log" 2>&1 || { cat "$log" >&2; return 1; }
    ! grep -E '^(W|E): ' "$log" | grep -q "$repo" || { cat "$log" >&2; return 1; }
  }
  # shellcheck disable=SC2016  # dpkg-query's own ${field}s
  installed_version() { in_root dpkg-query -W -f '${Status} ${Version}' idlegrid 2>/dev/null || true; }
  data=/var/lib/idlegrid-coordinator
  enabled_link=/etc/systemd/system/multi-user.target.wants/idlegrid-coordinator.service

  echo "== apt-get update refuses the repository once its Release is tampered with"
  cp "$chroot_dir$repo/InRelease" "$work/InRelease.good"
  sed -i 's/^Label: idlegrid$/Label: idlegrid-tampered/' "$chroot_dir$repo/InRelease" "$chroot_dir$repo/Release"
  grep -q '^Label: idlegrid-tampered' "$chroot_dir$repo/InRelease" || fail "could not tamper with InRelease"
  if in_root apt-get update -q >"$work/update-tampered.log" 2>&1; then
    cat "$work/update-tampered.log" >&2
    fail "apt-get update accepted a tampered InRelease"
  fi
  grep -q 'signature' "$work/update-tampered.log" || { cat "$work/update-tampered.log" >&2; fail "apt-get update failed for another reason than the signature"; }
  cp "$work/InRelease.good" "$chroot_dir$repo/InRelease"
  cp "$work/repo/Release" "$chroot_dir$repo/Release"
  echo "refused: $(grep -m1 -o 'The following signatures were invalid.*\|NO_PUBKEY.*\|BADSIG.*' "$work/update-tampered.log" || echo 'bad signature')"

  echo "== apt-get update (signed-by) and install idlegrid=$old in the clean root"
  apt_in_root update update || fail "apt-get update with the signed repository"
  in_root apt-cache madison idlegrid | grep -q "$old" || fail "apt sees no idlegrid $old in the repository"
  apt_in_root install-old install "idlegrid=$old" || fail "apt-get install idlegrid=$old"
  [ "$(installed_version)" = "install ok installed $old" ] || fail "dpkg says '$(installed_version)' after installing $old"
  # Keeps what apt downloaded for the next run (autoclean drops what Debian no longer has).
  in_root apt-get -q autoclean >/dev/null 2>&1 || true
  find "$cache/archives" -maxdepth 1 -name '*.deb' -delete
  find "$chroot_dir/var/cache/apt/archives" -maxdepth 1 -name '*.deb' -exec cp -t "$cache/archives/" {} +
  in_root getent passwd idlegrid >/dev/null || fail "postinst made no idlegrid user"
  in_root_verify() {
    local out
    if ! out=$(in_root SYSTEMD_LOG_LEVEL=notice XDG_RUNTIME_DIR=/tmp systemd-analyze "$@" 2>&1) || [ -n "$out" ]; then
      echo "$out" >&2
      return 1
    fi
  }
  in_root_verify verify --man=no /lib/systemd/system/idlegrid-coordinator.service ||
    fail "systemd-analyze verify in the root: coordinator unit"
  in_root_verify --user verify --man=no /usr/lib/systemd/user/idlegrid-agent.service ||
    fail "systemd-analyze verify in the root: agent unit"
  # What an operator does once the flags are set; systemctl enable works
  # offline. The link must survive the upgrade and go with the purge.
  in_root systemctl enable idlegrid-coordinator.service >/dev/null 2>&1 || fail "systemctl enable in the root"
  [ -L "$chroot_dir$enabled_link" ] || fail "systemctl enable made no $enabled_link"

  # Runs the coordinator as its unit does (the idlegrid user, the unit's
  # data dir; free ports) until its readiness line; sets $ready.
  run_coordinator() {
    local coordinator
    in_root install -d -o idlegrid -g idlegrid -m 0700 "$data"  # StateDirectory= would
    chroot "$chroot_dir" /usr/bin/env -i PATH=/usr/bin:/bin setpriv --reuid=idlegrid --regid=idlegrid --init-groups \
      /usr/bin/idlegrid coordinator --data-dir "$data" --listen 127.0.0.1:0 \
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
    [ -n "$ready" ] || { cat "$work/coordinator.err" >&2; return 1; }
    echo "$ready"
  }
  ca_hash() { sha256sum "$chroot_dir$data/pki/ca.crt" | cut -d' ' -f1; }
  echo "== idlegrid $old: the coordinator starts as the idlegrid user"
  run_coordinator || fail "the coordinator of $old did not become ready"
  ready_old=${ready#*ca=}
  [ -f "$chroot_dir$data/state.db" ] || fail "the coordinator of $old left no $data/state.db"
  ca_old=$(ca_hash)

  echo "== upgrade to idlegrid $new (apt-get install idlegrid)"
  apt_in_root upgrade install idlegrid || fail "apt-get install idlegrid (the upgrade)"
  [ "$(installed_version)" = "install ok installed $new" ] || fail "dpkg says '$(installed_version)' after the upgrade"
  in_root idlegrid --version | grep -qx "idlegrid $new" || fail "idlegrid --version in the root after the upgrade"
  [ -f "$chroot_dir$data/state.db" ] || fail "the upgrade lost $data/state.db"
  [ "$(ca_hash)" = "$ca_old" ] || fail "the upgrade changed $data/pki/ca.crt"
  [ -L "$chroot_dir$enabled_link" ] || fail "the upgrade dropped $enabled_link"
  run_coordinator || fail "the coordinator of $new did not become ready on the data of $old"
  [ "${ready#*ca=}" = "$ready_old" ] || fail "the coordinator of $new serves another CA (${ready#*ca=}, was $ready_old)"
  [ "$(ca_hash)" = "$ca_old" ] || fail "the coordinator of $new replaced $data/pki/ca.crt"
  echo "same data dir, same CA (ca=$ready_old)"

  echo "== remove: the binary goes, the state and the configuration stay"
  apt_in_root remove remove idlegrid || fail "apt-get remove"
  [ ! -e "$chroot_dir/usr/bin/idlegrid" ] || fail "remove left /usr/bin/idlegrid"
  [ ! -e "$chroot_dir/lib/systemd/system/idlegrid-coordinator.service" ] || fail "remove left the unit"
  [ -f "$chroot_dir$data/state.db" ] || fail "remove took $data/state.db"
  [ "$(ca_hash)" = "$ca_old" ] || fail "remove changed $data/pki/ca.crt"
  [ -L "$chroot_dir$enabled_link" ] || fail "remove dropped $enabled_link (a reinstall would not be enabled)"
  [ -f "$chroot_dir/etc/default/idlegrid-coordinator" ] || fail "remove took the conffile"
  [[ "$(installed_version)" == "deinstall ok config-files "* ]] || fail "dpkg says '$(installed_version)' after remove"

  echo "== purge: the state, the configuration and the enable link go; the user stays"
  apt_in_root purge purge idlegrid || fail "apt-get purge"
  [ ! -e "$chroot_dir$data" ] || fail "purge left $data"
  [ ! -e "$chroot_dir/etc/default/idlegrid-coordinator" ] || fail "purge left the conffile"
  [ ! -L "$chroot_dir$enabled_link" ] || fail "purge left $enabled_link"
  [ -z "$(installed_version)" ] || [[ "$(installed_version)" == "unknown ok not-installed"* ]] ||
    fail "dpkg says '$(installed_version)' after purge"
  in_root getent passwd idlegrid >/dev/null || fail "purge removed the idlegrid user (policy: it stays)"

  # The same cycle as if systemd ran: /run/systemd/system exists and
  # systemctl and deb-systemd-invoke are stand-ins that log their arguments,
  # so the maintainer scripts' systemd branches run and what they asked for
  # is checked (a real systemd cannot run in a chroot). apt runs dpkg with
  # its own PATH (DPkg::Path), hence the option.
  echo "== the maintainer scripts' calls to systemd (stand-ins) on install, upgrade, remove, purge"
  mkdir -p "$chroot_dir/run/systemd/system" "$chroot_dir/usr/local/sbin"
  for tool in systemctl deb-systemd-invoke; do
    printf '#!/bin/sh\necho "%s $*" >>/tmp/systemd-calls\n' "$tool" >"$chroot_dir/usr/local/sbin/$tool"
    chmod 0755 "$chroot_dir/usr/local/sbin/$tool"
  done
  root_path=/usr/local/sbin:$root_path
  systemd_calls() {  # systemd_calls STEP EXPECTED: runs apt-get, compares the calls
    local step=$1 expected=$2 got
    shift 2
    : >"$chroot_dir/tmp/systemd-calls"
    apt_in_root "systemd-$step" -o "DPkg::Path=$root_path" "$@" || fail "apt-get $* (systemd stand-ins)"
    got=$(tr '\n' ';' <"$chroot_dir/tmp/systemd-calls")
    [ "$got" = "$expected" ] || fail "$step called '$got', expected '$expected'"
    echo "$step: ${got:-nothing}"
  }
  systemd_calls install "systemctl --system daemon-reload;" install "idlegrid=$old"
  systemd_calls upgrade "systemctl --system daemon-reload;deb-systemd-invoke try-restart idlegrid-coordinator.service;" install idlegrid
  systemd_calls remove "deb-systemd-invoke stop idlegrid-coordinator.service;systemctl --system daemon-reload;" remove idlegrid
  systemd_calls purge "systemctl --system daemon-reload;" purge idlegrid
  rm -rf "$chroot_dir/run/systemd/system" "$chroot_dir/usr/local/sbin/systemctl" "$chroot_dir/usr/local/sbin/deb-systemd-invoke"

fi
echo "test-deb: ok"
