#!/bin/bash
# Whole-run throughput of the baseline strategy (flat allreduce after backward) on 2 ranks for the
# 2.9M-parameter MLP on Fashion-MNIST, batch 64 per rank, one BLAS thread per rank.
# usage: bench/baseline_throughput.sh [BUILD_DIR] [STEPS]
set -euo pipefail
build=${1:-build/release} steps=${2:-300}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/ddplab-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
"$build/cli/ddplab" run "$here/scenarios/default.toml" --np 2 --max-steps "$steps" --db "$work/bench.db" >"$work/out" 2>&1 ||
  { cat "$work/out"; exit 1; }
echo "baseline, 2 ranks, batch 64/rank, $steps steps (2.9M-parameter MLP, Fashion-MNIST):"
"$build/cli/ddplab" report --db "$work/bench.db" | cut -c1-200
"$build/cli/ddplab" report --db "$work/bench.db" --csv | awk -F, '
  NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  { printf "RESULT baseline np=%s samples/s %.0f  step %.2f ms  compute %.2f ms  comm %.2f ms  optimizer %.2f ms\n",
      $col["world_size"], $col["samples_per_s"], 1e3 * $col["step_s"], 1e3 * $col["compute_s"], 1e3 * $col["comm_s"],
      1e3 * $col["optimizer_s"] }'
