#!/usr/bin/env bash
# Builds idlegrid_<version>_<arch>.deb from an existing build tree
# (docs/packaging.md): the binary and its readiness benchmark in
# /usr/lib/idlegrid (the coordinator looks for the benchmark beside the
# binary), /usr/bin/idlegrid, man pages generated from the CLI with
# help2man, the coordinator's system unit, the agent's user unit (printed by
# `idlegrid agent unit`, the same text `agent join` installs) and
# dependencies read from the shared libraries the binary links
# (dpkg-shlibdeps).
#
#   scripts/package-deb.sh [BUILD_DIR [OUT_DIR]]   (defaults: build, build/deb)
# Prints the .deb's path on its last line. The package's version is the
# binary's (`idlegrid --version`) unless IDLEGRID_DEB_VERSION sets another,
# e.g. 0.1.0~prev: scripts/test-deb.sh --rootfs upgrades from such a package.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build}")
out=$(realpath -m "${2:-$build/deb}")
bin=$build/idlegrid
for tool in help2man dpkg-deb dpkg-shlibdeps strip gzip; do
  command -v "$tool" >/dev/null || { echo "package-deb: $tool is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
done
if [ ! -x "$bin" ] || [ ! -x "$build/idlegrid-bench" ]; then echo "package-deb: build idlegrid first (scripts/build.sh idlegrid)" >&2; exit 1; fi

upstream_version=$("$bin" --version | awk '{print $2}')
version=${IDLEGRID_DEB_VERSION:-$upstream_version}
dpkg --validate-version "$version" || { echo "package-deb: '$version' is not a Debian version" >&2; exit 1; }
arch=$(dpkg --print-architecture)
umask 022
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=$work/stage
mkdir -p "$stage/DEBIAN" "$stage/usr/bin" "$stage/usr/lib/idlegrid" "$stage/lib/systemd/system" \
  "$stage/usr/lib/systemd/user" "$stage/etc/default" "$stage/usr/share/man/man1" \
  "$stage/usr/share/doc/idlegrid" "$stage/usr/share/lintian/overrides"

# Binaries, stripped (policy 10.1): the debug info stays in the build tree.
strip --strip-unneeded --remove-section=.comment --remove-section=.note -o "$stage/usr/lib/idlegrid/idlegrid" "$bin"
objcopy --remove-section=.comment "$build/idlegrid-bench" "$stage/usr/lib/idlegrid/idlegrid-bench"
# The GPU benchmark needs no CUDA toolkit to build (it loads libcuda.so.1 at
# run time), so every package ships it.
strip --strip-unneeded --remove-section=.comment --remove-section=.note -o "$stage/usr/lib/idlegrid/idlegrid-gpu-bench" "$build/idlegrid-gpu-bench"
chmod 0755 "$stage"/usr/lib/idlegrid/*
ln -s ../lib/idlegrid/idlegrid "$stage/usr/bin/idlegrid"

# Units and their defaults.
install -m 0644 packaging/systemd/idlegrid-coordinator.service "$stage/lib/systemd/system/"
"$bin" agent unit --binary /usr/bin/idlegrid --config '%h/.config/idlegrid/agent.yaml' \
  >"$stage/usr/lib/systemd/user/idlegrid-agent.service"
install -m 0644 packaging/deb/idlegrid-coordinator.default "$stage/etc/default/idlegrid-coordinator"

# Man pages: one per subcommand the CLI lists (and agent join/status), from
# its own --help, so they never drift from the flags.
wrappers=$work/wrappers
mkdir -p "$wrappers"
manpage() {  # manpage NAME "SUBCOMMAND WORDS" DESCRIPTION
  local name=$1 words=$2 what=$3
  printf '#!/bin/sh\nexec %q %s "$@"\n' "$bin" "$words" >"$wrappers/$name"
  chmod +x "$wrappers/$name"
  help2man --no-info --section=1 --version-string="$upstream_version" --name="$what" \
    --output="$work/$name.1" "$wrappers/$name"
  gzip -9n -c "$work/$name.1" >"$stage/usr/share/man/man1/$name.1.gz"
}
manpage idlegrid "" "a grid of idle GPUs and CPUs for batch ML and simulation jobs"
# The Subcommands section of `idlegrid --help`: "  name   description".
"$bin" --help | awk '/^(SUBCOMMANDS|Subcommands):/{on=1; next} on && /^  [a-z]/{name=$1; $1=""; sub(/^ +/, ""); print name "\t" $0}' |
  while IFS=$'\t' read -r sub what; do
    manpage "idlegrid-$sub" "$sub" "$what"
  done
manpage idlegrid-agent-join "agent join" "join a coordinator as this user and install the agent's user unit"
manpage idlegrid-agent-status "agent status" "this node's state, current work and earnings"

# Documentation (policy 12.5, 12.7) and lintian overrides.
install -m 0644 packaging/deb/copyright "$stage/usr/share/doc/idlegrid/copyright"
sed -e "s/@VERSION@/$version/" -e "s/@DATE@/$(date -R -u -d @"${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}")/" \
  packaging/deb/changelog | gzip -9n >"$stage/usr/share/doc/idlegrid/changelog.gz"
install -m 0644 packaging/deb/lintian-overrides "$stage/usr/share/lintian/overrides/idlegrid"

# Dependencies from the shared libraries actually linked. dpkg-shlibdeps reads
# debian/control, so it runs in a scratch source tree.
mkdir -p "$work/src/debian"
printf 'Source: idlegrid\n\nPackage: idlegrid\nArchitecture: any\n' >"$work/src/debian/control"
shlibs=$(cd "$work/src" && dpkg-shlibdeps -O -e"$stage/usr/lib/idlegrid/idlegrid" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || { echo "package-deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

install -m 0755 packaging/deb/postinst packaging/deb/prerm packaging/deb/postrm "$stage/DEBIAN/"
echo /etc/default/idlegrid-coordinator >"$stage/DEBIAN/conffiles"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" -e "s/@SHLIBS@/$shlibs/" \
  packaging/deb/control.in >"$stage/DEBIAN/control"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) >"$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/control" "$stage/DEBIAN/conffiles" "$stage/DEBIAN/md5sums"

mkdir -p "$out"
deb=$out/idlegrid_${version#*:}_${arch}.deb  # file names carry no epoch
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "$deb"
