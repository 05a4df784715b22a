#!/bin/bash
# Model-parallel layouts trained through `ddplab run` on Fashion-MNIST, 4 ranks, against pure data
# parallelism on 2 (model-parallel.toml) at the same global batch: every step's stored rows add up to the
# global batch, the training losses of PP 2 x DP 2 with one microbatch (gpipe) are pure DP's bit for bit (the
# same sums in the same order), and those of 1F1B with 4 microbatches and of TP 2 x DP 2, which reorder sums,
# within 1e-5 relative; so are the evaluations of the assembled model. The gpipe evaluation is the same model
# on the same batches of 500, but its test-set loss adds 4 ranks' partial sums instead of 2: 20 batch losses
# regrouped in double, at most 19 roundings of 2^-53 apart (2.1e-15 relative), so it is held to 1e-14
# relative and its accuracy to the count. With CNN_SCENARIO, the CNN's PP 2 x DP 2 with one microbatch
# against its pure DP in the same way. A perturbed share fails the run, named.
# --exact-only: the bit-for-bit comparisons alone (the OpenBLAS kernel-family variants).
# usage: model_parallel_checks.sh [--exact-only] DDPLAB SCENARIO [CNN_SCENARIO]
set -u
exact_only=0
[[ ${1:-} == --exact-only ]] && { exact_only=1; shift; }
ddplab=$1 scenario=$2 cnn_scenario=${3:-}
work=$(mktemp -d /tmp/ddplab-mp-XXXXXX)
trap 'rm -rf "$work"' EXIT
db=$work/results.db
fail() { echo "FAIL: $*"; echo "--- output"; cat "$work/out"; exit 1; }
touch "$work/out"

# run NAME NP [PARALLEL]: the scenario with a [parallel] table of PARALLEL's lines; prints the run's id.
run() {
  local name=$1 np=$2 parallel=${3:-}
  { cat "${from:-$scenario}"; [[ -n $parallel ]] && printf '[parallel]\n%b\n' "$parallel"; } >"$work/$name.toml"
  "$ddplab" run "$work/$name.toml" --np "$np" --db "$db" >>"$work/out" 2>&1 || fail "$name exited $?"
  sqlite3 "$db" "select max(id) from runs"
}
# The losses of the replicas, step by step: the ranks that hold one ordered by replica (each replica's
# first such rank), then the evaluations.
losses() {
  sqlite3 "$db" "select step, loss from steps where run_id = $1 and loss is not null and rank in ($2) order by step, rank"
  sqlite3 "$db" "select step, test_loss, test_accuracy from evaluations where run_id = $1 order by step"
}
# same_as_dp NAME DP_FILE LAYOUT_FILE: the training losses bit for bit, each evaluation's loss within 1e-14
# relative and its accuracy exactly (see the header).
same_as_dp() {
  local name=$1 a=$2 b=$3
  [[ $(wc -l <"$a") == $(wc -l <"$b") ]] || fail "$name stored $(wc -l <"$b") loss rows, pure DP $(wc -l <"$a")"
  cmp -s <(awk -F'|' 'NF == 2' "$a") <(awk -F'|' 'NF == 2' "$b") ||
    fail "$name's training losses are not pure DP's bit for bit: $(diff <(awk -F'|' 'NF == 2' "$a") <(awk -F'|' 'NF == 2' "$b") | head -4)"
  paste -d'|' <(awk -F'|' 'NF == 3' "$a") <(awk -F'|' 'NF == 3' "$b") | awk -F'|' -v name="$name" '
    { d = $2 - $5; if (d < 0) d = -d; m = $5 < 0 ? -$5 : $5
      if (d > 1e-14 * m || $1 != $4 || $3 != $6) { bad = 1; print name ": evaluation " $0 } }
    END { exit bad }' >>"$work/out" || fail "$name's evaluations stray from pure DP's (loss beyond 1e-14 relative, or accuracy)"
}

dp=$(run dp 2)
gpipe=$(run pp-gpipe 4 'pp = 2\nmicrobatches = 1\npipeline_schedule = "gpipe"')
if ((!exact_only)); then
  f1b=$(run pp-1f1b 4 'pp = 2\nmicrobatches = 4\npipeline_schedule = "1f1b"')
  tp=$(run tp 4 'tp = 2')
  [[ $(grep -c "each share identical across its DP group" "$work/out") == 3 ]] || fail "a layout's shares were not checked"
fi

# Placement tp-dp-pp: rank = tp + T (dp + D pp). The last stage of PP 2 x DP 2 is ranks 2 and 3 (dp 0, 1);
# with TP 2 x DP 2 replica d's first rank is 2 d.
losses "$dp" "0, 1" >"$work/dp.txt"
losses "$gpipe" "2, 3" >"$work/gpipe.txt"
((exact_only)) || losses "$f1b" "2, 3" >"$work/1f1b.txt"
((exact_only)) || losses "$tp" "0, 2" >"$work/tp.txt"
[[ $(wc -l <"$work/dp.txt") == 123 ]] || fail "pure DP stored $(wc -l <"$work/dp.txt") loss rows, not 2 x 60 + 3 evaluations"
for run_id in "$dp" "$gpipe" ${f1b:-} ${tp:-}; do
  [[ $(sqlite3 "$db" "select count(*) from (select step from steps where run_id = $run_id group by step having sum(samples) = 64)") == 60 ]] ||
    fail "run $run_id: a step's rows do not add up to the global batch of 64"
done
# Rank 0 of the pipeline holds no loss: stored as NULL.
[[ $(sqlite3 "$db" "select count(*) from steps where run_id = $gpipe and rank in (0, 1) and loss is not null") == 0 ]] ||
  fail "the first stage stored a loss"
same_as_dp "PP 2 x DP 2 (gpipe, 1 microbatch)" "$work/dp.txt" "$work/gpipe.txt"
if ((!exact_only)); then
  for layout in 1f1b tp; do
    paste -d'|' "$work/dp.txt" "$work/$layout.txt" | awk -F'|' -v name="$layout" '
      { for (i = 2; i <= NF / 2; ++i) { a = $i; b = $(i + NF / 2); d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b;
          if (m < 1) m = 1; if (d / m > worst) worst = d / m; if ($1 != $(1 + NF / 2)) bad = 1 } }
      END { printf "%s: largest relative difference from pure DP %.2g\n", name, worst; exit (bad || worst > 1e-5) }' ||
      fail "$layout strays from pure DP by more than 1e-5 relative"
  done
  # A share that differs from its replica 0's is named with its coordinates, and the run fails.
  "$ddplab" run "$work/pp-1f1b.toml" --np 4 --db "$db" --inject-fault perturb:3 >"$work/perturb" 2>&1
  [[ $? == 1 ]] || { cat "$work/perturb" >>"$work/out"; fail "a perturbed share did not fail the run with exit 1 (a run fault)"; }
  grep -q "parameters of rank 3 (tp 0, pp 1, dp 1) differ from rank 2 (tp 0, pp 1, dp 0)" "$work/perturb" ||
    { cat "$work/perturb" >>"$work/out"; fail "the perturbed share was not named"; }
fi
if [[ -n $cnn_scenario ]]; then
  from=$cnn_scenario
  cnn_dp=$(run cnn-dp 2)
  cnn_gpipe=$(run cnn-pp-gpipe 4 'pp = 2\nmicrobatches = 1\npipeline_schedule = "gpipe"')
  losses "$cnn_dp" "0, 1" >"$work/cnn-dp.txt"
  losses "$cnn_gpipe" "2, 3" >"$work/cnn-gpipe.txt"
  [[ $(wc -l <"$work/cnn-dp.txt") == 42 ]] || fail "the CNN's pure DP stored $(wc -l <"$work/cnn-dp.txt") loss rows, not 2 x 20 + 2 evaluations"
  same_as_dp "the CNN's PP 2 x DP 2 (gpipe, 1 microbatch)" "$work/cnn-dp.txt" "$work/cnn-gpipe.txt"
fi
