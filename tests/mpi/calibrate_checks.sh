#!/bin/bash
# `ddplab calibrate` and `ddplab validate` end to end on 2 ranks: the fit table covers every ping-pong size,
# the calibration is stored and a scenario can name it, validate replays the measured run and the stored
# benches, prints its table and mean error, stores its rows, and fails only on errors (unknown calibration).
# usage: calibrate_checks.sh DDPLAB SCENARIO(ci-small.toml)
set -u
ddplab=$1 scenario=$2
work=$(mktemp -d /tmp/ddplab-calib-XXXXXX)
trap 'rm -rf "$work"' EXIT
db=$work/results.db
fail() { echo "FAIL: $*"; echo "--- output"; cat "$work/out" "$work/err" 2>/dev/null; exit 1; }

"$ddplab" calibrate --np 2 --sizes 1KiB:1MiB --coll-sizes 4KiB:64KiB --schedules native,ring --coll-iters 10 \
  --name t --scenario "$scenario" --db "$db" >"$work/out" 2>"$work/err" || fail "calibrate exited $?"
grep -q '^# calibration "t" (link class mpi): latency ' "$work/out" || fail "no fit summary"
# The fit table: one row per size 1 KiB .. 1 MiB (11), with measured, fitted and error %.
rows=$(awk '/^# +size \(B\) +measured_us/{on=1; next} /^#/{on=0} on' "$work/out")
[[ $(wc -l <<<"$rows") -eq 11 ]] || fail "expected 11 fit rows, got: $rows"
[[ $(awk 'NR==1{print $1} END{print $1}' <<<"$rows" | tr '\n' ' ') == "1024 1048576 " ]] || fail "fit sizes not 1KiB..1MiB"
awk '$2 <= 0 || $3 <= 0 {exit 1}' <<<"$rows" || fail "non-positive measured or fitted time"
grep -q '^# compute of ci-small at batch 64' "$work/out" || fail "no per-layer compute"
grep -q 'ddplab: calibration "t" stored' "$work/err" || fail "not stored"

# A measured run to validate, then a simulation through a scenario that names the calibration.
"$ddplab" run "$scenario" --np 2 --max-steps 8 --db "$db" >"$work/out" 2>"$work/err" || fail "run exited $?"
mkdir "$work/s"  # same file name, so the same scenario name and its measured compute
sed 's/^simulate_world = .*/simulate_world = [2]\ncalibration = "t"/' "$scenario" >"$work/s/$(basename "$scenario")"
"$ddplab" simulate "$work/s/$(basename "$scenario")" --db "$db" >"$work/out" 2>"$work/err" || fail "simulate with calibration exited $?"
grep -Eq '^ +2 ' "$work/out" || fail "no simulated row for world 2"

"$ddplab" validate --db "$db" --name t >"$work/out" 2>"$work/err" || fail "validate exited $?"
grep -q '^# calibration "t": latency ' "$work/out" || fail "validate did not use calibration t"
grep -Eq '^run +[0-9]+ +baseline +2 +0 +step_ms ' "$work/out" || fail "no step row for the measured run"
grep -Eq '^run +[0-9]+ +baseline +2 +0 +comm_ms ' "$work/out" || fail "no comm row for the measured run"
[[ $(grep -Ec '^collective .* busbw_gbs ' "$work/out") -eq 10 ]] || fail "expected 10 bench rows (2 schedules x 5 sizes)"
grep -Eq '^# mean absolute error [0-9.]+% over 12 comparisons' "$work/out" || fail "no mean absolute error line"
n=$(sqlite3 "$db" 'SELECT COUNT(*) FROM validations') || fail "sqlite3 cannot read the store"
[[ $n -eq 12 ]] || fail "expected 12 stored validations, got $n"

# A bench measured over NCCL is not compared with a calibration of MPI (nor the reverse): said, not replayed.
bench=$(sqlite3 "$db" "SELECT id FROM bench_runs WHERE backend = 'mpi'")
[[ -n $bench ]] || fail "calibrate stored no bench with backend mpi"
sqlite3 "$db" "UPDATE bench_runs SET backend = 'nccl' WHERE id = $bench"
"$ddplab" validate --db "$db" --name t >"$work/out" 2>"$work/err" || fail "validate with an nccl bench exited $?"
grep -q "^# bench $bench ran over nccl, calibration \"t\" measured mpi: not compared (no calibration of nccl stored)" \
  "$work/out" || fail "the nccl bench was not reported as not compared"
grep -Eq '^collective ' "$work/out" && fail "the nccl bench was replayed with an mpi calibration"
grep -Eq '^# mean absolute error [0-9.]+% over 2 comparisons' "$work/out" || fail "expected the run's 2 comparisons only"
# With a calibration of NCCL stored too (t's fit, relabelled), the hint names it, and it compares the bench only.
sqlite3 "$db" "INSERT INTO calibrations(name, created_at, host_info, fit, version)
  SELECT 'g', created_at, host_info, json_set(fit, '$.link_class', 'nccl'), version FROM calibrations WHERE name = 't'"
"$ddplab" validate --db "$db" --name t >"$work/out" 2>"$work/err" || fail "validate --name t exited $?"
grep -q "^# bench $bench ran over nccl, .*not compared (\`--name g\` compares it)" "$work/out" || fail "no hint to --name g"
"$ddplab" validate --db "$db" --name g >"$work/out" 2>"$work/err" || fail "validate --name g exited $?"
[[ $(grep -Ec '^collective .* busbw_gbs ' "$work/out") -eq 10 ]] || fail "calibration g did not compare the nccl bench"
grep -Eq '^run ' "$work/out" && fail "an MPI run was compared with an NCCL calibration"
grep -q '^# run [0-9]* (baseline, backend cpu) ran over mpi, calibration "g" measured nccl: not compared (`--name t`' \
  "$work/out" || fail "the run was not listed as not compared under g"

"$ddplab" validate --db "$db" --name nosuch >"$work/out" 2>"$work/err" && fail "validate of an unknown calibration succeeded"
grep -q 'no calibration named "nosuch"' "$work/err" || fail "unknown calibration not named"
"$ddplab" calibrate --np 2 --sizes 1KiB --db "$db" >"$work/out" 2>"$work/err" && fail "calibrate of one size succeeded"
grep -q 'at least 2 sizes' "$work/err" || fail "one size not refused clearly"
# The schedules at several world sizes: one bench per size, from groups of the job's first ranks.
# Fit sizes far apart: 3 ranks on 2 cores make neighbouring sizes' ring steps too noisy to order.
"$ddplab" calibrate --np 3 --worlds 3,2 --sizes 1KiB,1MiB --coll-sizes 4KiB,1MiB --schedules native,ring,hierarchical \
  --name w --db "$work/w.db" >"$work/out" 2>"$work/err" || fail "calibrate --worlds 3,2 exited $?"
[[ $(grep -Eo '^# allreduce schedules at world [0-9]+' "$work/out" | awk '{print $NF}' | tr '\n' ' ') == "2 3 " ]] \
  || fail "expected benches at worlds 2 then 3"
[[ $(sqlite3 "$work/w.db" "SELECT GROUP_CONCAT(world_size || ':' || ranks_per_node) FROM bench_runs WHERE status = 'completed'") \
  == "2:2,3:3" ]] || fail "stored benches are not worlds 2 and 3, each on one node"
[[ $(sqlite3 "$work/w.db" "SELECT COUNT(*) FROM collective_bench WHERE wrong = 0") -eq 12 ]] \
  || fail "expected 12 rows (2 worlds x 3 schedules x 2 sizes), all exact"
"$ddplab" calibrate --np 3 --worlds 2,4 --db "$work/w.db" >"$work/out" 2>"$work/err" && fail "--worlds 4 on 3 ranks accepted"
grep -q -- '--worlds: 4 is outside 2..3' "$work/err" || fail "--worlds beyond --np not explained"
# Two link classes: 4 ranks on "nodes" n0 and n1 (host names in UTS namespaces; needs root). Peers on rank 0's
# node give the intra-node fit, stored with the calibration; the others the main one.
if unshare --uts true 2>/dev/null; then
  mpirun -np 4 --allow-run-as-root --oversubscribe -x OPENBLAS_NUM_THREADS=1 "$(dirname "$0")/as_node.sh" 2 \
    "$ddplab" calibrate --np 4 --sizes 1KiB,16KiB,256KiB,2MiB --fit pingpong --schedules none --name nodes --db "$work/n.db" \
    >"$work/out" 2>"$work/err" || fail "calibrate on two nodes exited $?"
  grep -q "^# inside rank 0's node (n0): the simulator's intra-node links and factors" "$work/out" \
    || fail "no intra-node fit printed"
  grep -q '^# calibration "nodes (intra-node)" (link class mpi-intra): latency ' "$work/out" || fail "intra fit not named"
  [[ $(sqlite3 "$work/n.db" "SELECT json_extract(fit, '$.intra.link_class') || ' ' ||
      json_array_length(fit, '$.intra.samples') FROM calibrations WHERE name = 'nodes'") == "mpi-intra 4" ]] \
    || fail "the intra-node fit (4 sizes) was not stored"
  # One node: one class, as before.
  "$ddplab" calibrate --np 2 --sizes 1KiB,1MiB --fit pingpong --schedules none --name one --db "$work/n.db" >"$work/out" 2>"$work/err" \
    || fail "calibrate on one node exited $?"
  [[ $(sqlite3 "$work/n.db" "SELECT json_type(fit, '$.intra') FROM calibrations WHERE name = 'one'") == "null" ]] \
    || fail "a one-node calibration has an intra-node fit"
else
  echo "calibrate_checks: two link classes not checked (unshare --uts needs root)"
fi
echo "calibrate_checks: ok"
