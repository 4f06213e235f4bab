#!/usr/bin/env bash
# Installs, with apt-get, whatever of idlegrid's build and runtime
# dependencies this Debian 12 machine lacks. Safe to run repeatedly.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libsqlite3-dev libpq-dev postgresql libsodium-dev libssl-dev libyaml-cpp-dev libspdlog-dev libfmt-dev
  libcli11-dev libcpp-httplib-dev libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev
  podman runc runsc uidmap slirp4netns fuse-overlayfs catatonit conmon
  containernetworking-plugins golang-github-containers-common
  skopeo docker-registry openssl prometheus
  iproute2 iptables curl ca-certificates passwd util-linux python3
  libfaketime  # the fault tests' clock offsets and jumps (tests/e2e/fault_env_test.cc)
  python3-grpcio python3-protobuf python3-tqdm python3-yaml python3-setuptools python3-wheel python3-pip python3-venv
  dpkg-dev help2man lintian systemd  # scripts/package-deb.sh and test-deb.sh
  mmdebstrap  # idlegrid image base (and test-deb.sh's clean root)
  clang clang-format  # the test suite's thread-safety analysis and format check
  chromium chromium-driver python3-selenium
  nodejs  # the JavaScript SDK (sdk/js) and its tests
)
# --ml: also what runs the ML example on the host itself (scripts/demo-ml.sh
# compares a point with the grid's; bench/ml.sh times a bare epoch). Jobs
# never need these: their image has its own (idlegrid image base).
if [ "${1:-}" = --ml ]; then
  packages+=(python3-torch python3-sklearn python3-numpy)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
