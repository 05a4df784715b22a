#!/bin/bash
# Fails when a program links a CUDA/NCCL library: the CUDA backend must come only from the dlopen'ed plugin.
# usage: no_cuda_link.sh PLUGIN PROGRAM...   (PLUGIN must show cuBLAS, proving the pattern matches)
set -u
pat='lib(cuda|cudart|cublas|cublasLt|nccl)\.so'
plugin=$1; shift
ldd "$plugin" | grep -qE "$pat" || { echo "FAIL: $plugin links no CUDA library: pattern '$pat' is stale"; exit 1; }
bad=0
for p in "$@"; do
  if hits=$(ldd "$p" | grep -E "$pat"); then echo "FAIL: $p links CUDA:"; echo "$hits"; bad=1
  else echo "ok: $p links no CUDA library"; fi
done
exit $bad
