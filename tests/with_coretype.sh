#!/bin/bash
# Runs a test with OpenBLAS forced to one kernel family (OPENBLAS_CORETYPE), so that a result that depends on
# the GEMM kernels shows here, whatever kernels this machine picks by itself. Skips (exit 77) where the CPU
# cannot run that family's instructions.
# usage: with_coretype.sh CORETYPE COMMAND...
set -u
core=$1
shift
flags=$(grep -m1 '^flags' /proc/cpuinfo)
need=()
case $core in
  Haswell | Zen) need=(avx2 fma) ;;
  SkylakeX) need=(avx512f avx512bw avx512dq avx512vl) ;;
  Sandybridge) need=(avx) ;;
  Nehalem | Prescott) need=() ;;
  *) echo "with_coretype.sh: no CPU check for kernel family $core" >&2; exit 2 ;;
esac
for f in "${need[@]}"; do
  [[ " $flags " == *" $f "* ]] || { echo "skipped: this CPU has no $f for OpenBLAS's $core kernels"; exit 77; }
done
export OPENBLAS_CORETYPE=$core
exec "$@"
