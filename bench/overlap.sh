#!/bin/bash
# Overlap: how much of the communication the overlap policy hides. Runs the default MLP on 2 ranks with
# policy "overlap" (ring schedule, 4 MiB buckets so several buckets can start during backward) and reports
# step_s against max(compute_s, comm_s), per rank and step means. The target is step <= 1.05 x max.
# usage: bench/overlap.sh [BUILD_DIR] [STEPS]
set -euo pipefail
build=${1:-build/release} steps=${2:-200}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/ddplab-overlap-XXXXXX)
trap 'rm -rf "$work"' EXIT
cat >"$work/overlap.toml" <<TOML
[model]
layers = [784, 1024, 1024, 1024, 10]
[train]
batch_size = 64
max_steps = $steps
eval_every = 0
[cluster]
world_size = 2
[[strategy]]
name = "overlap-ring-4MiB"
policy = "overlap"
schedule = "ring"
bucket_cap = "4MiB"
[[strategy]]
name = "bucketed-ring-4MiB"
policy = "bucketed"
schedule = "ring"
bucket_cap = "4MiB"
TOML
"$build/cli/ddplab" run "$work/overlap.toml" --db "$work/o.db" >"$work/out" 2>&1 || { cat "$work/out"; exit 1; }
"$build/cli/ddplab" report --db "$work/o.db" --csv | awk -F, '
  NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  { c = $col["compute_s"] * 1e3; m = $col["comm_s"] * 1e3; s = $col["step_s"] * 1e3; x = $col["exposed_comm_s"] * 1e3
    o = $col["optimizer_s"] * 1e3; mx = c > m ? c : m
    printf "RESULT %-20s step %.2f ms  compute %.2f  comm %.2f  exposed %.2f  optimizer %.2f  step/max(compute,comm) %.3f\n",
      $col["strategy"], s, c, m, x, o, s / mx }'
