#!/bin/sh
# Prepares what the GPU check machine cannot download: fmt, zlib, nlohmann/json and toml++ headers, NCCL's header (for
# a machine whose NCCL wheel ships none), googletest's sources and the Fashion-MNIST files, copied from this (Debian 12) machine into an ignored folder that travels with the
# tree (the device tool's `carry`). Usage: scripts/gpu-bundle.sh [DIR] (default .gpu-bundle).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/.gpu-bundle}
data=${DDPLAB_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
need() { [ -e "$1" ] || { echo "gpu-bundle: missing $1 ($2)" >&2; exit 1; }; }
need /usr/include/fmt/format.h "apt-get install libfmt-dev"
need /usr/include/zlib.h "apt-get install zlib1g-dev"
need /usr/include/nlohmann/json.hpp "apt-get install nlohmann-json3-dev"
need /usr/include/toml++/toml.h "apt-get install libtomlplusplus-dev"
need /usr/src/googletest/CMakeLists.txt "apt-get install googletest"
need "$data/train-images-idx3-ubyte.gz" "apt-get install dataset-fashion-mnist"
nccl_h=${NCCL_ROOT:-/usr/local/cuda}/include/nccl.h
need "$nccl_h" "NCCL's development files (set NCCL_ROOT)"
# Replaces only a bundle this script made (its marker file), never another folder given by mistake.
if [ -e "$out" ] && [ ! -e "$out/.ddplab-gpu-bundle" ]; then
  echo "gpu-bundle: $out exists and is not a bundle made by this script; give a new folder" >&2; exit 1
fi
rm -rf "$out"
mkdir -p "$out/include" "$out/fashion-mnist" "$out/nccl/include"
touch "$out/.ddplab-gpu-bundle"
cp "$nccl_h" "$out/nccl/include/"
cp -r /usr/include/fmt /usr/include/nlohmann /usr/include/toml++ "$out/include/"
cp /usr/include/zlib.h /usr/include/zconf.h "$out/include/"
for z in /usr/include/*-linux-gnu/zconf.h; do [ -e "$z" ] && cp "$z" "$out/include/"; done  # multiarch (x86_64, aarch64)
cp -r /usr/src/googletest "$out/googletest"
cp "$data"/*-ubyte.gz "$out/fashion-mnist/"
echo "gpu-bundle: $out ($(du -sh "$out" | cut -f1))"
