#!/bin/bash
# The command line end to end, no MPI: a "..." world list expands and a mistyped end is refused before anything
# runs, a scenario's bad schedule name is a file:line:col error under `simulate` as under `run`, numeric options
# say what they allow, report can skip warm-up steps, `runs` lists, shows, deletes and prunes runs, an empty scenario is refused, and `run` refuses before mpirun a strategy that cannot run
# on --np ranks and a store it could not write; without a GPU, bench and calibrate refuse the GPU transports.
# usage: cli_checks.sh DDPLAB SCENARIO_DIR
set -u
ddplab=$1 scenarios=$2
work=$(mktemp -d /tmp/ddplab-cli-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; echo "--- output"; cat "$work/out" "$work/err" 2>/dev/null; exit 1; }

# presets-eth-25g derives compute from FLOPs: no measured run needed.
"$ddplab" simulate "$scenarios/presets-eth-25g.toml" --strategy overlap-ring --world 2,4,...,16 --db "$work/a.db" \
  >"$work/out" 2>"$work/err" || fail "simulate --world 2,4,...,16 exited $?"
worlds=$(awk '$1 ~ /^[0-9]+$/ && $NF ~ /^[0-9]+$/ {print $1}' "$work/out" | tr '\n' ' ')
[[ $worlds == "2 4 8 16 " ]] || fail "expected worlds 2 4 8 16, got: $worlds"

# report --skip-steps: a simulated run's steady step always counts (what comes before it is its warm-up,
# counted apart); a negative count is refused.
"$ddplab" report --db "$work/a.db" --skip-steps 3 --json >"$work/out" 2>"$work/err" || fail "report --skip-steps 3 exited $?"
grep -q '"skipped_steps": [0-9]' "$work/out" || fail "report --json does not say how many steps it skipped"
grep -q '"warmup_s": ' "$work/out" || fail "report --json does not give the warm-up's time"
grep -q '"steps": 1' "$work/out" || fail "a simulated run lost its steady step under --skip-steps"
"$ddplab" report --db "$work/a.db" --skip-steps -1 >"$work/out" 2>"$work/err" && fail "--skip-steps -1 was accepted"
grep -q -- '--skip-steps: must be >= 0, got -1' "$work/err" || fail "--skip-steps -1 not explained"

# runs list / show / delete / prune on the four simulated runs: a refused delete deletes nothing.
"$ddplab" runs list --db "$work/a.db" >"$work/out" 2>"$work/err" || fail "runs list exited $?"
[[ $(grep -c ' completed ' "$work/out") == 4 ]] || fail "runs list does not show the 4 completed runs"
first=$(awk '$1 ~ /^[0-9]+$/ {print $1; exit}' "$work/out")
"$ddplab" runs show "$first" --db "$work/a.db" >"$work/out" 2>"$work/err" || fail "runs show exited $?"
grep -q "^run $first: .* simulated on simgrid, 2 ranks" "$work/out" || fail "runs show does not name the run"
"$ddplab" runs delete "$first" 9999 --db "$work/a.db" >"$work/out" 2>"$work/err" && fail "deleting a missing run was accepted"
grep -q "nothing deleted: no run 9999 in $work/a.db" "$work/err" || fail "missing run not named"
"$ddplab" runs prune --status completed --dry-run --db "$work/a.db" >"$work/out" 2>"$work/err" || fail "runs prune --dry-run exited $?"
[[ $(grep -c '^would delete run ' "$work/out") == 4 ]] || fail "prune --dry-run does not list the 4 runs"
"$ddplab" runs prune --status finished --db "$work/a.db" >"$work/out" 2>"$work/err" && fail "an unknown status was accepted"
grep -q 'unknown run status "finished"' "$work/err" || fail "unknown status not named"
"$ddplab" runs delete "$first" --db "$work/a.db" >"$work/out" 2>"$work/err" || fail "runs delete exited $?"
grep -q "^deleted run $first " "$work/out" || fail "runs delete does not say what it deleted"
"$ddplab" runs list --db "$work/a.db" >"$work/out" 2>"$work/err" || fail "runs list exited $?"
[[ $(grep -c ' completed ' "$work/out") == 3 ]] || fail "runs delete did not delete exactly one run"

"$ddplab" simulate "$scenarios/presets-eth-25g.toml" --world 2,4,...,1000 --db "$work/b.db" >"$work/out" 2>"$work/err" \
  && fail "a world list ending off its progression was accepted"
grep -q -- '--world: world sizes "2,4,...,1000": 1000 is not in the progression 2,4,8,... (times 2)' "$work/err" \
  || fail "mistyped world list not explained"
[[ ! -e $work/b.db ]] || fail "a refused command created the store"

sed 's/^schedule = .*/schedule = "tree"/' "$scenarios/ci-small.toml" >"$work/bad.toml"
line=$(grep -n '^schedule = "tree"' "$work/bad.toml" | head -1 | cut -d: -f1)
[[ -n $line ]] || fail "ci-small.toml has no schedule line to break"
"$ddplab" simulate "$work/bad.toml" --world 2 --db "$work/c.db" >"$work/out" 2>"$work/err" \
  && fail "an unknown schedule was accepted"
grep -q "bad.toml:$line:12: strategy\[0\].schedule must be one of \"native\", \"ring\"" "$work/err" \
  || fail "unknown schedule not named with file:line:col"

: >"$work/empty.toml"
"$ddplab" run "$work/empty.toml" --np 1 --db "$work/f.db" >"$work/out" 2>"$work/err" && fail "an empty scenario was run"
grep -q "empty.toml:1:1: the scenario is empty: name at least one strategy to run" "$work/err" || fail "empty scenario not explained"
[[ ! -e $work/f.db ]] || fail "a refused empty scenario created the store"

"$ddplab" bench collectives --iters 0 >"$work/out" 2>"$work/err" && fail "--iters 0 was accepted"
grep -q -- '--iters: must be > 0, got 0' "$work/err" || fail "--iters 0 not explained"
"$ddplab" run "$scenarios/ci-small.toml" --max-steps -1 --db "$work/d.db" >"$work/out" 2>"$work/err" \
  && fail "--max-steps -1 was accepted"
grep -q -- '--max-steps: must be >= 0, got -1' "$work/err" || fail "--max-steps -1 not explained"
cat >"$work/ps.toml" <<'TOML'
[model]
layers = [784, 32, 10]
[train]
max_steps = 2
[[strategy]]
name = "base"
[[strategy]]
name = "ps1"
policy = "ps"
schedule = "native"
ps_servers = 1
TOML
"$ddplab" run "$work/ps.toml" --np 1 --db "$work/e.db" >"$work/out" 2>"$work/err" && fail "ps with no worker was accepted"
grep -q 'strategy "ps1" cannot run on 1 rank: policy ps: ps_servers = 1 dedicated servers leave no worker' "$work/err" \
  || fail "ps_servers >= --np not refused before mpirun"
grep -q mpirun "$work/err" && fail "mpirun started although a strategy cannot run"
[[ ! -e $work/e.db ]] || fail "the refused run created the store"

"$ddplab" run "$scenarios/ci-small.toml" --np 1 --db /proc/ddplab-cli-check.db >"$work/out" 2>"$work/err" \
  && fail "a store in /proc was accepted"
grep -q 'results store /proc/ddplab-cli-check.db is not writable: cannot create files in /proc' "$work/err" \
  || fail "an unwritable store not refused before mpirun"
# The GPU transports where no device is visible: refused before mpirun, saying why, nothing stored.
if ! nvidia-smi -L >/dev/null 2>&1; then
  for cmd in "bench collectives --backend nccl --np 2" "calibrate --backend cuda --np 2" \
             "calibrate --backend cuda+mpi --np 2 --scenario $scenarios/ci-small.toml"; do
    # shellcheck disable=SC2086
    "$ddplab" $cmd --db "$work/g.db" >"$work/out" 2>"$work/err" && fail "$cmd ran without a GPU"
    grep -q -- '--backend "[a-z+]*" cannot run here: ' "$work/err" || fail "$cmd: no reason given"
    grep -q mpirun "$work/err" && fail "$cmd started mpirun"
    [[ ! -e $work/g.db ]] || fail "$cmd created the store"
  done
fi

# Collectives predicted (bench collectives --simulate) and measured elsewhere (import nccl-tests).
"$ddplab" bench collectives --simulate --world 4 --sizes 4KiB,1MiB --schedules ring,native --db "$work/c.db" \
  >"$work/out" 2>"$work/err" || fail "bench collectives --simulate exited $?"
[[ $(grep -cE '^ +[0-9]+ +[0-9]+ +float ' "$work/out") == 4 ]] || fail "bench --simulate: expected 4 rows"
"$ddplab" bench results --db "$work/c.db" --csv >"$work/out" 2>"$work/err" || fail "bench results exited $?"
[[ $(grep -c ',simgrid$' "$work/out") == 4 ]] || fail "the simulated rows were not stored with backend simgrid"
"$ddplab" bench collectives --world 4 --db "$work/c.db" >"$work/out" 2>"$work/err" && fail "--world without --simulate accepted"
grep -q -- '--world describe what --simulate predicts' "$work/err" || fail "--world without --simulate not explained"
cat >"$work/nt.log" <<'LOG'
#  Rank  0 Group  0 Pid   1 on a device  0 [0] GPU
#  Rank  1 Group  0 Pid   2 on b device  0 [0] GPU
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
     1048576        262144     float     sum      -1   100.00   10.49   10.49      0   101.00   10.38   10.38      0
LOG
"$ddplab" import nccl-tests "$work/nt.log" --name two-nodes --db "$work/c.db" >"$work/out" 2>"$work/err" \
  || fail "import nccl-tests exited $?"
grep -q 'all_reduce over 2 ranks, 1 per node, 1 sizes' "$work/out" || fail "import nccl-tests: summary wrong"
printf '#       size  count\n 1024 x\n' >"$work/bad.log"
"$ddplab" import nccl-tests "$work/bad.log" --name bad --db "$work/c.db" >"$work/out" 2>"$work/err" \
  && fail "a malformed nccl-tests log was accepted"
grep -q "$work/bad.log:2: column count: \"x\" is not an integer" "$work/err" || fail "malformed log: no file:line"
[[ $("$ddplab" bench results --db "$work/c.db" --csv | grep -c ',nccl$') == 2 ]] \
  || fail "the store lost or gained rows on a refused import"
# predict: a strategy without runs at 3 global batches is refused with what to run (exit 2, bad input: the store
# lacks them; the other strategies still predicted: none here); bad option values are refused before anything is
# simulated.
"$ddplab" predict "$scenarios/goodput.toml" --target-accuracy 0.8 --world 4,64 --db "$work/p.db" >"$work/out" 2>"$work/err"
rc=$?
[[ $rc -eq 2 ]] || fail "predict without measured runs exited $rc, not 2"
[[ $(grep -c 'cannot fit the statistical efficiency to 0.8: fitting S(B) = S_min (1 + B_noise / B) needs runs at 3 or more global batch sizes, got 0' "$work/err") == 4 ]] \
  || fail "predict: each strategy's missing fit not explained"
grep -q 'ddplab run SCENARIO --np 2 --batch-size B' "$work/err" || fail "predict: no command suggested"
grep -q '4 of the scenario.s strategies could not be predicted' "$work/err" || fail "predict: no summary of failures"
# With failures: a write time is needed (the strategy's measured checkpoints, or --checkpoint-write); the
# failure options are refused without --node-mtbf, and bad durations with their reason.
"$ddplab" predict "$scenarios/goodput.toml" --target-accuracy 0.8 --world 4 --db "$work/p.db" --node-mtbf 5000h \
  >"$work/out" 2>"$work/err" && fail "predict --node-mtbf without checkpoints exited 0"
grep -q 'has no measured checkpoint to take its write time from' "$work/err" || fail "predict: no write time not explained"
"$ddplab" predict "$scenarios/goodput.toml" --target-accuracy 0.8 --restart 5min --db "$work/p.db" >"$work/out" 2>"$work/err" \
  && fail "--restart without --node-mtbf was accepted"
grep -q -- '--restart requires --node-mtbf' "$work/err" || fail "--restart without --node-mtbf not explained"
"$ddplab" predict "$scenarios/goodput.toml" --target-accuracy 0.8 --node-mtbf 0h --db "$work/p.db" >"$work/out" 2>"$work/err" \
  && fail "--node-mtbf 0h was accepted"
grep -q 'must be a duration greater than 0, got "0h"' "$work/err" || fail "--node-mtbf 0h not explained"
"$ddplab" report --db "$work/p.db" --predictions >"$work/out" 2>"$work/err" || fail "report --predictions exited $?"
grep -q 'has no predictions yet: `ddplab predict SCENARIO --target-accuracy A` makes some' "$work/err" \
  || fail "report --predictions on a store without predictions says nothing"
[[ $(head -1 "$work/out") == id* ]] || fail "report --predictions: no header"
"$ddplab" predict "$scenarios/goodput.toml" --target-accuracy 1.5 --db "$work/p.db" >"$work/out" 2>"$work/err" \
  && fail "--target-accuracy 1.5 was accepted"
grep -q -- '--target-accuracy: Value 1.5 not in range' "$work/err" || fail "--target-accuracy 1.5 not explained"
"$ddplab" predict "$scenarios/goodput.toml" --target-accuracy 0.8 --world 0,2 --db "$work/p.db" >"$work/out" 2>"$work/err" \
  && fail "--world 0,2 was accepted"
grep -q -- '--world: world sizes "0,2": world sizes must be 1 to' "$work/err" || fail "predict --world 0 not explained"
"$ddplab" predict "$scenarios/goodput.toml" --target-accuracy 0.8 --fit-below -4 --db "$work/p.db" >"$work/out" 2>"$work/err" \
  && fail "--fit-below -4 was accepted"
grep -q -- '--fit-below: must be > 0, got -4' "$work/err" || fail "--fit-below -4 not explained"
"$ddplab" predict "$scenarios/goodput.toml" --target-accuracy 0.8 --strategy nope --db "$work/p.db" >"$work/out" 2>"$work/err" \
  && fail "an unknown --strategy was accepted"
grep -q 'no strategy named "nope"' "$work/err" || fail "predict --strategy nope not explained"
# A pipeline layout simulates (each stage's plan, its DP group's sync) and says what its columns hold; a
# model too small for the stages is refused at parallel.pp, by run and simulate; run refuses what it cannot
# do on a split model at its setting.
"$ddplab" simulate "$scenarios/gpt2-xl-pipeline.toml" --strategy ddp --world 8 --db "$work/pp.db" >"$work/out" 2>"$work/err" \
  || fail "simulate of a pipeline layout exited $?: $(cat "$work/err")"
grep -q "^layout: TP 1 x PP 4 x DP 2 (placement tp-dp-pp), 1f1b, 8 microbatches of 1 sample" "$work/out" \
  || fail "simulate does not describe the pipeline"
grep -q "allreduce of 1.7 GiB (the largest stage's share) per sync" "$work/out" || fail "the DP sync is not the stage's"
grep -q "world 8: device memory .* fits in" "$work/out" || fail "a pipeline stage's memory was not checked"
printf '[model]\nlayers = [784, 64, 10]\n[parallel]\npp = 4\n[[strategy]]\nname = "a"\npolicy = "overlap"\nschedule = "ring"\n' \
  >"$work/pp_small.toml"
"$ddplab" run "$work/pp_small.toml" --np 4 --db "$work/pp.db" >"$work/out" 2>"$work/err" && fail "run accepted pp = 4"
grep -q "pp_small.toml:4:6: parallel.pp = 4: pipeline: mlp has 2 layers, fewer than the 4 pipeline chunks" "$work/err" \
  || fail "run's refusal of pp = 4 not explained: $(cat "$work/err")"
printf '[model]\nlayers = [784, 64, 10]\n[train]\ncheckpoint_every = 10\n[parallel]\npp = 2\n[[strategy]]\nname = "a"\n' >"$work/pp_ckpt.toml"
"$ddplab" run "$work/pp_ckpt.toml" --np 4 --db "$work/pp.db" >"$work/out" 2>"$work/err" && fail "run accepted checkpoints with pp = 2"
grep -q "pp_ckpt.toml:4:20: train.checkpoint_every = 10: the runtime does not run it on a split model (parallel.pp = 2) yet" "$work/err" \
  || fail "run's refusal of checkpoints on a pipeline not explained: $(cat "$work/err")"
"$ddplab" simulate "$work/pp_small.toml" --world 4 --db "$work/pp.db" >"$work/out" 2>"$work/err" && fail "4 stages of 2 layers"
grep -q "pp_small.toml:4:6: parallel.pp = 4: pipeline: mlp has 2 layers, fewer than the 4 pipeline chunks" "$work/err" \
  || fail "a model too small for its stages not explained: $(cat "$work/err")"
# simulate --search: every layout of one world, ranked, the refused with their reason.
printf '[model]\nlayers = [784, 66, 10]\n[train]\nbatch_size = 8\n[cluster]\ndevices_per_node = 4\ncompute_s = 0.01\n[[strategy]]\nname = "a"\npolicy = "overlap"\nschedule = "ring"\n' \
  >"$work/search.toml"
"$ddplab" simulate "$work/search.toml" --search --world 4 --db "$work/s.db" >"$work/out" 2>"$work/err" \
  || fail "simulate --search exited $?: $(cat "$work/err")"
grep -q "^search / a: 11 layouts of 4 ranks (3 refused)" "$work/out" || fail "--search does not count its layouts: $(cat "$work/out")"
[[ $(grep -cE '^ +[0-9]+ +[124] +[124] +[124] +[1248] ' "$work/out") == 8 ]] || fail "--search: expected 8 ranked layouts"
grep -q "refused: .*parallel.tp = 4: tensor parallelism: tp = 4 does not divide the output of layers.0" "$work/out" \
  || fail "--search: a refused layout without its reason"
# --zero-stages: each layout under overlap, zero1, zero2 and zero3; ZeRO-3 runs pure DP only, refusing the rest.
"$ddplab" simulate "$work/search.toml" --search --zero-stages --world 4 --db "$work/s.db" >"$work/out" 2>"$work/err" \
  || fail "simulate --search --zero-stages exited $?: $(cat "$work/err")"
grep -q "^search / a: 11 layouts x 4 policies (overlap, zero1, zero2, zero3) of 4 ranks (19 refused)" "$work/out" \
  || fail "--zero-stages does not count its candidates: $(cat "$work/out")"
[[ $(grep -cE '^ +[0-9]+ +[124] +[124] +[124] +[1248] +zero2 ' "$work/out") == 8 ]] || fail "--zero-stages: expected 8 zero2 rows"
[[ $(grep -cE '^ +[0-9]+ +1 +1 +4 +1 +zero3 ' "$work/out") == 1 ]] || fail "--zero-stages: expected pure DP's zero3 row"
grep -q 'zero3 .*refused: .*parallel.tp splits the model, which strategy\[0\] ("a", policy "zero3") cannot shard' "$work/out" \
  || fail "--zero-stages: zero3 on a split model without its reason"
"$ddplab" simulate "$work/search.toml" --zero-stages --world 4 --db "$work/s.db" >"$work/out" 2>"$work/err" \
  && fail "--zero-stages without --search"
grep -q -- "--zero-stages requires --search" "$work/err" || fail "--zero-stages without --search not explained: $(cat "$work/err")"
"$ddplab" simulate "$work/search.toml" --search --world 4,8 --db "$work/s.db" >"$work/out" 2>"$work/err" && fail "--search over 2 worlds"
grep -q -- "--search ranks the layouts of one world size" "$work/err" || fail "--search over 2 worlds not explained"
echo "cli_checks: ok"
