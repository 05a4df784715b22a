#!/bin/bash
# Install the Debian 12 packages ddplab needs to build, test and run the demo.
# Does nothing when they are all present already.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev libopenmpi-dev openmpi-bin
  libsimgrid-dev
  qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev libgl-dev
  libtomlplusplus-dev libsqlite3-dev nlohmann-json3-dev
  libcli11-dev libfmt-dev libspdlog-dev zlib1g-dev
  dataset-fashion-mnist fortunes
  python3-torch
  iproute2 procps
  clang libclang-rt-14-dev clang-format lld
  slurm-wlm munge
  sqlite3
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "setup: all ${#PKGS[@]} packages present"
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""
[[ $(id -u) -eq 0 ]] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
