#!/bin/bash
# Device-free checks of scripts/gpu-check.sh: argument handling, the GPU-only configure with CUDA found,
# and the no-device message of the probe it runs after building.
# usage: gpu_check_script.sh SOURCE_DIR TRAIN_BINARY HAVE_CUDA
set -u
src=$1 train=$2 have_cuda=$3
script=$src/scripts/gpu-check.sh
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
bad=0
expect() {  # expect RC PATTERN command...
  local rc=$1 pat=$2; shift 2
  local got; got=$("$@" 2>&1); local r=$?
  if [ $r -ne "$rc" ] || ! grep -q -- "$pat" <<<"$got"; then
    echo "FAIL: $* -> rc $r (want $rc), output: $got"; bad=1
  else echo "ok: $* -> rc $r, '$pat'"; fi
}
expect 2 "usage:" "$script"
expect 2 "usage:" "$script" a b
expect 2 "unknown option" "$script" --bogus "$tmp/o"
expect 2 "cannot write to output folder" "$script" /proc/ddplab-no-such-dir
chmod 500 "$tmp" && [ ! -w "$tmp" ] && expect 2 "cannot write to output folder" "$script" "$tmp/sub"  # not as root
chmod 700 "$tmp"
DDPLAB_GPU_BUNDLE=$tmp/none expect 2 "run scripts/gpu-bundle.sh" "$script" "$tmp/o"
if [ "$have_cuda" = ON ]; then
  # A device-free machine gets the reason, not a crash, from the probe the script runs after the build.
  if "$train" --probe >/dev/null 2>&1; then echo "skip probe check: a device is visible"
  else expect 3 "no CUDA device visible" "$train" --probe; fi
  # The GPU-only target set configures here (system fmt, zlib and googletest stand in for the bundle).
  expect 0 "ddplab GPU-only build" cmake -S "$src" -B "$tmp/b" -G Ninja -DDDPLAB_GPU_ONLY=ON -DCMAKE_CUDA_ARCHITECTURES=90
fi
exit $bad
