#!/usr/bin/env bash
# Makes (or adds to) a signed apt repository of idlegrid packages
# (docs/packaging.md): a flat repository, its packages in OUT_DIR/pool and
# its indices at the top, so one line adds it:
#   deb [signed-by=/etc/apt/keyrings/idlegrid-archive-keyring.gpg] URL ./
#
#   scripts/make-apt-repo.sh OUT_DIR DEB... [--key-dir DIR]
#
# Copies each DEB into OUT_DIR/pool (the ones already there stay, so apt can
# still install an older version), then writes Packages and Packages.gz
# (dpkg-scanpackages, every version), Release with their sizes and hashes,
# InRelease (signed inline) and Release.gpg (detached signature), and the
# public key as OUT_DIR/idlegrid-archive-keyring.gpg, a binary keyring for
# signed-by=. The signing key lives in DIR (default
# ~/.local/share/idlegrid/archive-key, never inside OUT_DIR); if it holds no
# secret key, one is made there: ed25519, no passphrase, no expiry. Keep DIR
# safe and reuse it: users trust that key, and a new one breaks their
# `apt update` until they fetch the new keyring.
# Needs dpkg-scanpackages (dpkg-dev) and gpg (gnupg).
set -euo pipefail
usage() { echo "usage: $0 OUT_DIR DEB... [--key-dir DIR]" >&2; exit 2; }
out="" key_dir="${XDG_DATA_HOME:-$HOME/.local/share}/idlegrid/archive-key"
debs=()
while (($#)); do
  case $1 in
    --key-dir) [ $# -ge 2 ] || usage; key_dir=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) usage ;;
    *) if [ -z "$out" ]; then out=$1; else debs+=("$1"); fi; shift ;;
  esac
done
if [ -z "$out" ] || ((${#debs[@]} == 0)); then usage; fi
for tool in dpkg-scanpackages dpkg-deb gpg gzip sha256sum md5sum; do
  command -v "$tool" >/dev/null || { echo "make-apt-repo: $tool is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
done
out=$(realpath -m "$out")
key_dir=$(realpath -m "$key_dir")
case $key_dir/ in
  "$out"/*) echo "make-apt-repo: the key directory $key_dir must not be inside the published $out" >&2; exit 1 ;;
esac

for deb in "${debs[@]}"; do
  [ -n "$(dpkg-deb -f "$deb" Package 2>/dev/null)" ] || { echo "make-apt-repo: $deb is not a .deb" >&2; exit 1; }
done
umask 022
mkdir -p "$out/pool"
cp -f "${debs[@]}" "$out/pool/"

# Indices. Paths in Packages (Filename:) are relative to the repository's URL.
cd "$out"
dpkg-scanpackages --multiversion pool /dev/null 2>/dev/null >Packages
gzip -9nc Packages >Packages.gz
archs=$(sed -n 's/^Architecture: //p' Packages | sort -u | tr '\n' ' ' | sed 's/ $//')
{
  echo "Origin: idlegrid"
  echo "Label: idlegrid"
  echo "Suite: stable"
  echo "Codename: idlegrid"
  echo "Date: $(LC_ALL=C date -R -u)"
  echo "Architectures: $archs"
  echo "Description: idlegrid packages built by scripts/package-deb.sh"
  for sum in MD5Sum:md5sum SHA256:sha256sum; do
    echo "${sum%%:*}:"
    for index in Packages Packages.gz; do
      printf ' %s %s %s\n' "$(${sum#*:} "$index" | cut -d' ' -f1)" "$(stat -c %s "$index")" "$index"
    done
  done
} >Release

# The signing key: made once, kept in key_dir.
mkdir -p "$key_dir"
chmod 0700 "$key_dir"
export GNUPGHOME=$key_dir
trap 'gpgconf --kill gpg-agent 2>/dev/null || true' EXIT
fingerprint() { gpg --batch --list-secret-keys --with-colons 2>/dev/null | awk -F: '/^fpr:/ {print $10; exit}'; }
if [ -z "$(fingerprint)" ]; then
  echo "make-apt-repo: making a signing key in $key_dir" >&2
  gpg --batch --quiet --passphrase '' --quick-generate-key \
    "idlegrid archive signing key <dev@idlegrid.invalid>" ed25519 sign never
fi
fpr=$(fingerprint)
[ -n "$fpr" ] || { echo "make-apt-repo: no secret key in $key_dir" >&2; exit 1; }
rm -f InRelease Release.gpg
gpg --batch --quiet --yes --local-user "$fpr" --digest-algo SHA512 --clearsign --output InRelease Release
gpg --batch --quiet --yes --local-user "$fpr" --digest-algo SHA512 --armor --detach-sign --output Release.gpg Release
gpg --batch --quiet --yes --export --output idlegrid-archive-keyring.gpg "$fpr"
# Check what was written against the exported keyring alone, as apt will.
gpgv --quiet --keyring "$out/idlegrid-archive-keyring.gpg" InRelease 2>/dev/null ||
  { echo "make-apt-repo: InRelease does not verify" >&2; exit 1; }
gpgv --quiet --keyring "$out/idlegrid-archive-keyring.gpg" Release.gpg Release 2>/dev/null ||
  { echo "make-apt-repo: Release.gpg does not verify" >&2; exit 1; }
echo "make-apt-repo: $(grep -c '^Package:' Packages) package(s) in $out, signed by $fpr" >&2
echo "$out"
