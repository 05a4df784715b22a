#!/bin/bash
# Simulation at scale: wall time and peak memory of `ddplab simulate` for a DDP step pattern of ResNet-50
# (scenarios/resnet50-scale.toml, strategy overlap-ring: 25 MiB buckets, ring allreduce), in the aggregated
# mode at 1024, 4096 and 16384 ranks and in the exact per-message mode at 256 ranks for comparison (pass
# "256 1024" as WORLDS_EXACT for the exact 1024-rank step too: minutes).
# Targets (docs/simulation.md, Simulation time): 1024 ranks < 1 s; 16384 ranks < 60 s and < 8 GiB.
# cpu_s (user + system) is printed next to wall_s: on a shared machine wall time grows with the load.
# usage: bench/sim_scale.sh [BUILD_DIR] [WORLDS_AGGREGATED] [WORLDS_EXACT]
set -euo pipefail
build=${1:-build/release}
agg_worlds=${2-1024 4096 16384}    # an empty argument runs none
exact_worlds=${3-256}
here=$(cd "$(dirname "$0")/.." && pwd)
ddplab="$build/cli/ddplab"
[[ -x $ddplab ]] || { echo "no $ddplab: build it first (cmake --build --preset release)" >&2; exit 1; }
work=$(mktemp -d /tmp/ddplab-simscale-XXXXXX)
trap 'rm -rf "$work"' EXIT

printf '%-11s %7s %10s %10s %8s %11s %12s\n' mode world step_ms wall_s cpu_s max_rss_MiB comms
run() {  # mode world
  local out="$work/out-$1-$2.txt" timing="$work/time-$1-$2.txt"
  /usr/bin/time -v "$ddplab" simulate "$here/scenarios/resnet50-scale.toml" --strategy overlap-ring --world "$2" \
    --"$1" --db "$work/results.db" >"$out" 2>"$timing" || { echo "$1 $2 failed:" >&2; tail -5 "$timing" >&2; return 0; }
  # The table row of this world size: world step_ms compute_ms comm_ms samples/s efficiency warmup_s sim_wall_s mode comms run
  local row; row=$(awk -v n="$2" '$1 == n { print }' "$out" | tail -1)
  local wall; wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s }' "$timing")
  local rss; rss=$(awk -F': ' '/Maximum resident set size/ { printf "%.0f", $2 / 1024 }' "$timing")
  local cpu; cpu=$(awk -F': ' '/(User|System) time \(seconds\)/ { s += $2 } END { printf "%.2f", s }' "$timing")
  printf '%-11s %7s %10s %10s %8s %11s %12s\n' "$1" "$2" "$(echo "$row" | awk '{print $2}')" "$wall" "$cpu" "$rss" \
    "$(echo "$row" | awk '{print $10}')"
}
for n in $exact_worlds; do run exact "$n"; done
for n in $agg_worlds; do run aggregated "$n"; done
