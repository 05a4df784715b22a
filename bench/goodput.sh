#!/bin/bash
# Goodput (docs/goodput.md): `ddplab predict`'s validation and the study at scale.
#  1. The fits: every strategy of scenarios/goodput.toml at 2 ranks, per-rank batch 8, 16 and 32 (global 16, 32,
#     64), seeds 1-6, on shared memory. Statistical efficiency does not depend on the network, so every
#     validation below fits these runs (`--fit-below 128`) and predicts global batch 128.
#  2. Shared memory, 2 ranks x 64: a calibration at 2 ranks and batch 64 for the time per step, `predict` at
#     world 2, and 6 measured runs per strategy (seeds 1-6).
#  3. Shared memory, 4 ranks x 32 (4 ranks on 2 cores): the same with a calibration at 4 ranks.
#  4. The test bed, 4 hosts at 1 Gbit/s and at 100 Mbit/s, 4 x 32: the same with `calibrate --testbed` and
#     `run --testbed` (needs root).
#  5. At scale: `predict` at 4, 64 and 512 ranks of the scenario's 10 Gbit/s cluster, compute from the
#     2-rank runs at batch 32.
# Nothing else should run meanwhile: the measured step times are what the predictions are checked against.
# Environment: SCENARIO (default scenarios/goodput.toml), SEEDS, MAX_STEPS, LEGS (default "shm2 shm4
# testbed-1gbit testbed-100mbit scale"; leave the testbed legs out where there is no root).
# usage: bench/goodput.sh [BUILD_DIR] [OUT_DIR]   (about 50 minutes on 2 cores; a fits.db in OUT_DIR is reused)
set -euo pipefail
build=${1:-build/release}
here=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$(mktemp -d /tmp/ddplab-goodput-XXXXXX)}
mkdir -p "$out"
cp "$build/cli/ddplab" "$out/ddplab"  # a rebuild during the bench must not replace the binary under mpirun
ddplab="$out/ddplab"
sc=${SCENARIO:-$here/scenarios/goodput.toml}
target=0.80
seeds=${SEEDS:-1 2 3 4 5 6}
max_steps=${MAX_STEPS:-400}  # of the validation runs: enough to reach the target at global batch 128
legs=${LEGS:-shm2 shm4 testbed-1gbit testbed-100mbit scale}
export OPENBLAS_NUM_THREADS=1
run() { "$ddplab" run "$@" 2>&1 | grep -E 'ranks .* steps in|error' >&2; }

if [ ! -e "$out/fits.db" ]; then
  echo "== fits: 2 ranks, batch 8, 16, 32, seeds $seeds" >&2
  for s in $seeds; do for b in 8 16 32; do run "$sc" --np 2 --batch-size $b --seed $s --db "$out/fits.db.part"; done; done
  mv "$out/fits.db.part" "$out/fits.db"
fi

# validate ENV NP BATCH [run/calibrate options...]: calibrate at NP ranks and per-rank BATCH, measure a run per seed
# there, predict them from the fits.
validate() {
  local env=$1 np=$2 batch=$3
  shift 3
  cp "$out/fits.db" "$out/$env.db"
  sed -e "s/^\[cluster\]/[cluster]\ncalibration = \"$env\"/" -e "s/^batch_size = 32 /batch_size = $batch /" "$sc" \
    >"$out/goodput-$env.toml"
  echo "== $env: calibration at $np ranks, batch $batch" >&2
  "$ddplab" calibrate --np $np "$@" --name "$env" --scenario "$out/goodput-$env.toml" --schedules none --coll-iters 10 \
    --sizes 4KiB,16KiB,64KiB,256KiB,1MiB,4MiB --pingpong-budget 0.3 --db "$out/$env.db" >"$out/$env-calibrate.out" 2>&1
  echo "== $env: $np ranks x $batch, seeds $seeds" >&2
  for s in $seeds; do run "$out/goodput-$env.toml" --np $np "$@" --seed $s --max-steps $max_steps --db "$out/$env.db"; done
  echo "RESULT $env" >&2
  "$ddplab" predict "$out/goodput-$env.toml" --target-accuracy $target --world $np --fit-below 128 --db "$out/$env.db" |
    tee "$out/$env-predict.out"
}
for leg in $legs; do
  case $leg in
    shm2) validate shm2 2 64 ;;
    shm4) validate shm4 4 32 ;;
    testbed*)  # testbed-RATE: 4 emulated hosts with NICs at RATE (tc's units: 1gbit, 100mbit)
      rate=${leg#testbed-}
      "$ddplab" testbed up --hosts 4 --rate "$rate" >&2
      trap '"$ddplab" testbed down >&2 || true' EXIT
      validate "testbed4-$rate" 4 32 --testbed
      "$ddplab" testbed down >&2
      trap - EXIT
      ;;
    scale)
      echo "RESULT at scale" >&2
      "$ddplab" predict "$sc" --target-accuracy $target --world 4,64,512 --db "$out/fits.db" | tee "$out/scale-predict.out"
      ;;
    *) echo "unknown leg $leg" >&2; exit 2 ;;
  esac
done
echo "results in $out" >&2
